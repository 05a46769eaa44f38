"""The routing-policy interface.

At every routing call the simulator hands a policy a read-only
:class:`RoutingState` (the waiting pool oldest first, free slots
``cap_g = B - |A_g|``, current token loads ``L_g`` and active counts) and the
policy returns, for every pool entry, the worker it is placed on or ``-1`` to
keep it waiting. The simulator enforces capacity and stickiness: it refuses an
assignment that names a non-existent worker or overfills one.

With ``dispatch="instant"`` (``docs/online.md``) there is no central pool: every
request is bound to one worker's FIFO queue the moment it enters the system,
through :meth:`Policy.dispatch` and a :class:`DispatchState`, as the
data-parallel routers of vLLM and SGLang do. Policies declare the modes they
support in ``dispatch_modes``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bfio.errors import ConfigError
from bfio.workload import Workload


@dataclass
class RoutingState:
    """What a policy may look at during one routing call (Section 4, Alg. 1 inputs).

    Arrays are views of simulator state: policies must not modify them.
    ``slot_request[g, b]`` is the request in slot ``b`` of worker ``g`` (or -1);
    ``generated[i]`` is ``tau_i``; ``enter_step[i]`` is the step at which request
    ``i`` entered the pool (used for ages by aging guards); ``completed`` holds
    the ids of the requests finished so far, in completion order (what an
    online, oracle-free predictor may learn from).
    """

    step: int
    clock: float
    workers: int
    slots: int
    pool: np.ndarray
    free: np.ndarray
    loads: np.ndarray
    active: np.ndarray
    workload: Workload
    slot_request: np.ndarray
    generated: np.ndarray
    enter_step: np.ndarray
    completed: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))

    @property
    def pool_prefill(self) -> np.ndarray:
        """``s_j`` of the waiting requests, oldest first."""
        return self.workload.prefill[self.pool]

    @property
    def admissible(self) -> int:
        """``U = min(|R_wait|, sum_g cap_g)`` (Section 4)."""
        return int(min(self.pool.shape[0], int(self.free.sum())))


@dataclass
class DispatchState:
    """What a policy may look at when it binds newly arrived requests to worker
    queues (``dispatch="instant"``). Arrays are per worker and read-only:

    - ``waiting[g]``: requests bound to ``g`` and still queued (not yet admitted);
    - ``waiting_tokens[g]``: sum of the prompt lengths ``s_i`` of those requests;
    - ``running[g]``: active (admitted, unfinished) requests, ``|A_g|``;
    - ``loads[g]``: resident KV token load ``L_g = sum_{i in A_g} (s_i + tau_i)``;
    - ``free[g]``: free slots ``B - |A_g|``.

    The requests to bind (``requests``, ids in arrival order) are passed beside
    the state; a policy binding several must account for its own earlier
    bindings in the same call (each request is dispatched as it arrives).
    """

    step: int
    clock: float
    workers: int
    slots: int
    waiting: np.ndarray
    waiting_tokens: np.ndarray
    running: np.ndarray
    loads: np.ndarray
    free: np.ndarray
    workload: Workload

    def prefill_of(self, requests: np.ndarray) -> np.ndarray:
        """``s_i`` of ``requests``."""
        return self.workload.prefill[requests]


class Policy:
    """Base class: subclasses set ``name`` (and a display ``label``), register
    themselves with :func:`bfio.policies.register` and implement :meth:`route`
    (``dispatch="central"``) and, when they list ``"instant"`` in
    ``dispatch_modes``, :meth:`dispatch`.

    ``seed`` seeds the policy's own random generator (``self.rng``), so a
    randomized policy gives identical results for identical config and seed.
    """

    name = "policy"
    #: display label in tables and figures (``bfio.policies.policy_label``); a
    #: class without its own ``label`` is shown by its ``name``
    label = ""
    dispatch_modes: tuple[str, ...] = ("central",)

    def __init__(self, seed: int = 0, **options):
        if options:
            raise TypeError(f"policy '{self.name}' takes no options {sorted(options)}")
        self.seed = seed
        self.rng = np.random.default_rng([int(seed), 0x5EED])

    def reset(self, workers: int, slots: int) -> None:
        """Called once before a simulation starts."""

    def route(self, state: RoutingState) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def dispatch(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        """Bind each of ``requests`` (arrival order) to a worker queue: return one
        worker index in ``0..G-1`` per request. Only called with
        ``dispatch="instant"`` on policies listing it in ``dispatch_modes``."""
        raise ConfigError(f"dispatch: policy '{self.name}' does not support dispatch='instant' "
                          f"(supported: {', '.join(self.dispatch_modes)})")

    def describe(self) -> dict:
        """Options that identify this policy in results."""
        return {"name": self.name}

    def stats(self) -> dict:
        """Policy-specific statistics added to a result (e.g. solver times)."""
        return {}
