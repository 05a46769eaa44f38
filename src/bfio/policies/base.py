"""The routing-policy interface.

At every routing call the simulator hands a policy a read-only
:class:`RoutingState` (the waiting pool oldest first, free slots
``cap_g = B - |A_g|``, current token loads ``L_g`` and active counts) and the
policy returns, for every pool entry, the worker it is placed on or ``-1`` to
keep it waiting. The simulator enforces capacity and stickiness: it refuses an
assignment that names a non-existent worker or overfills one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

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


class Policy:
    """Base class: subclasses set ``name`` and implement :meth:`route`.

    ``seed`` seeds the policy's own random generator (``self.rng``), so a
    randomized policy gives identical results for identical config and seed.
    """

    name = "policy"

    def __init__(self, seed: int = 0, **options):
        if options:
            raise TypeError(f"policy '{self.name}' takes no options {sorted(options)}")
        self.seed = seed
        self.rng = np.random.default_rng([int(seed), 0x5EED])

    def reset(self, workers: int, slots: int) -> None:
        """Called once before a simulation starts."""

    def route(self, state: RoutingState) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> dict:
        """Options that identify this policy in results."""
        return {"name": self.name}

    def stats(self) -> dict:
        """Policy-specific statistics added to a result (e.g. solver times)."""
        return {}
