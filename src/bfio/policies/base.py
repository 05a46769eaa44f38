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
support in ``dispatch_modes``. The built-in instant-dispatch rules derive from
:class:`InstantPolicy`, which gives every one of them the ``report_interval``
option (load reports that lag, see there).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bfio.ground.errors import ConfigError
from bfio.ground.options import Option, identity, resolve
from bfio.policies.completion_stream import COMPLETIONS_OPTION, CompletionStream
from bfio.workloads.workload import Workload

#: The two dispatch interfaces (``docs/online.md``): ``central`` (one shared
#: pool, :meth:`Policy.route`) and ``instant`` (bound to a worker's queue on
#: arrival, :meth:`Policy.dispatch`).
DISPATCH_MODES = ("central", "instant")
CENTRAL_ONLY = DISPATCH_MODES[:1]


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
    idle_s: float = 0.0  # of ``clock``: time with no request active (online arrivals)
    #: with the prefill step model (:class:`bfio.sim.cache_view.CacheView`, no queues): each
    #: rank's prefill backlog and a probe of its prefix cache; ``None`` without it
    prefill: object | None = None
    #: the run's calibrated step model (:class:`bfio.step_model.StepCoefficients`,
    #: ``docs/step_model.md``): what a step costs per KV token, per decoding request
    #: and per prefill token; ``None`` with the paper's step ``C + t_l max_g L_g``
    step_costs: object | None = None

    @property
    def mean_step_s(self) -> float:
        """The mean modelled decode step so far (``inf`` before the first step)."""
        return (self.clock - self.idle_s) / self.step if self.step > 0 else float("inf")

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
    #: the running requests (``slot_request[g, b]``, -1 when free), their generated
    #: tokens ``tau_i`` and each worker's FIFO queue (``queue_head[g]`` then
    #: ``queue_next[i]``, -1 ends it): what a lookahead rule (BF-IO) predicts from
    slot_request: np.ndarray | None = None
    generated: np.ndarray | None = None
    queue_head: np.ndarray | None = None
    queue_next: np.ndarray | None = None
    #: per worker, the prompt tokens ``sum s_i`` of its running requests
    running_prompt_tokens: np.ndarray | None = None
    #: with the prefill step model (:class:`bfio.sim.cache_view.CacheView`): each rank's
    #: prefill backlog and a probe of its prefix cache; ``None`` without it
    prefill: object | None = None
    #: ids of the completed requests in completion order (what the oracle-free
    #: predictors learn from, as in :class:`RoutingState`)
    completed: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    #: the run's calibrated step model, as in :class:`RoutingState` (``None``: the paper's step)
    step_costs: object | None = None

    def prefill_of(self, requests: np.ndarray) -> np.ndarray:
        """``s_i`` of ``requests``."""
        return self.workload.prefill[requests]

    def queue_lists(self) -> list[list[int]]:
        """Each worker's FIFO queue of request ids, walked from ``queue_head`` along
        ``queue_next`` (empty lists for empty queues, and for every worker when the
        state carries no queues)."""
        queues: list[list[int]] = [[] for _ in range(self.workers)]
        if self.queue_head is None:
            return queues
        for g in np.flatnonzero(np.asarray(self.queue_head) >= 0).tolist():
            i = int(self.queue_head[g])
            while i >= 0:
                queues[g].append(i)
                i = int(self.queue_next[i])
        return queues


#: what a policy may require of a run (``Policy.requires``), and what provides it
REQUIREMENTS = {"prefill": "the prefill step model (simulate(prefill=bfio.engine.prefill.PrefillModel(...)))",
                "blocks": "prompt block hashes in the workload (a trace with a hash column such as mooncake, "
                          "or bfio.workloads.sessions)"}


class Policy:
    """Base class: subclasses set ``name`` (and a display ``label``), register
    themselves with :func:`bfio.policies.register` and implement :meth:`route`
    (``dispatch="central"``) and, when they list ``"instant"`` in
    ``dispatch_modes``, :meth:`dispatch`.

    ``seed`` seeds the policy's own random generator (``self.rng``), so a
    randomized policy gives identical results for identical config and seed.
    """

    name = "policy"
    #: display label in tables and figures (``bfio.policies.policy_label``): a
    #: plugin's; the built-ins' are :data:`bfio.policies.names.ROUTER_NAMES`, and a
    #: class with neither is shown by its ``name``
    label = ""
    dispatch_modes: tuple[str, ...] = CENTRAL_ONLY
    #: the dispatch a run of the policy gets when none is asked for (``bfio simulate``
    #: without ``--dispatch``): an engine's data-parallel router runs as the engine runs
    #: it, bound at arrival (``"instant"``); ``None``: the first of ``dispatch_modes``
    default_dispatch: str | None = None
    #: what the policy reads beyond the paper's state (:data:`REQUIREMENTS`): the
    #: prefill step model (``"prefill"``), the prompts' block hashes (``"blocks"``);
    #: :func:`bfio.simulator.simulate` refuses a run that lacks them before it starts
    requires: tuple[str, ...] = ()
    #: the policy's options, each declared once (:class:`bfio.ground.options.Option`):
    #: its CLI flags, config schema section and :meth:`describe` derive from them
    options: tuple[Option, ...] = ()

    @classmethod
    def dispatch_default(cls) -> str:
        """The dispatch of a run that asks for none (:attr:`default_dispatch`)."""
        return cls.default_dispatch or cls.dispatch_modes[0]

    def __init__(self, seed: int = 0, **options):
        #: every option's value, ``options`` checked and the rest at their defaults
        self.option_values = resolve(type(self), options)
        self.seed = seed
        self.rng = np.random.default_rng([int(seed), 0x5EED])

    def reset(self, workers: int, slots: int) -> None:
        """Called once before a simulation starts."""

    def route(self, state: RoutingState) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError(f"policy '{self.name}' has no central routing (dispatch_modes = "
                                  f"{self.dispatch_modes})")

    def dispatch(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        """Bind each of ``requests`` (arrival order) to a worker queue: return one
        worker index in ``0..G-1`` per request. Only called with
        ``dispatch="instant"`` on policies listing it in ``dispatch_modes``."""
        raise ConfigError(f"dispatch: policy '{self.name}' does not support dispatch='instant' "
                          f"(supported: {', '.join(self.dispatch_modes)})")

    def describe(self) -> dict:
        """The policy's identity in results: its name and the options that identify
        a run (:func:`bfio.ground.options.identity`)."""
        return {"name": self.name, **identity(type(self), self.option_values)}

    def stats(self) -> dict:
        """Policy-specific statistics added to a result (e.g. solver times)."""
        return {}


#: Option ``report_interval`` of every policy with instant dispatch (:class:`InstantPolicy`).
REPORT_INTERVAL = Option("report_interval", int, 0,
                         "with dispatch instant: the router sees the workers' load as reported every K steps, plus "
                         "its own dispatches since the last report (vLLM/SGLang routers route on such periodic "
                         "reports); 0 = the exact state", minimum=0, identity="non-default", metavar="K")


def check_report_interval(value) -> int:
    """``report_interval`` as an int >= 0, else a :class:`ConfigError` naming the option."""
    return REPORT_INTERVAL.check(value)


class InstantPolicy(Policy):
    """Base of the policies with instant dispatch (``dispatch_modes`` has
    ``"instant"``): subclasses implement :meth:`select`, the rule on a
    :class:`DispatchState`, and this class decides which state the rule sees.

    Option ``report_interval`` (``k`` steps, default 0). Production routers do
    not read the ranks' state: the ranks *report* their load periodically
    (vLLM's ``DPCoordinator`` publishes request counts about every 100 ms;
    SGLang's scheduler piggybacks its load on output batches and, in recent
    versions, the controller refreshes its ``DPBudget`` at most every 20 ms), and
    between two reports the
    router adds its own dispatches to its copy (vLLM: ``waiting += 1`` on the
    chosen engine; SGLang: ``total_requests += 1``, ``total_tokens +=`` the
    request's tokens). The simulator models this per step:

    - ``k = 0``: the rule sees the exact current state (bit for bit the
      behaviour before the option existed, ``tests/test_report_interval.py``);
    - ``k >= 1``: the router keeps a *report*, a copy of every per-worker array
      of the :class:`DispatchState` (``waiting``, ``waiting_tokens``,
      ``running``, ``loads``, ``free``), taken at the first dispatch call of each
      window of ``k`` steps (steps ``m k .. (m + 1) k - 1``). Until the next
      report the rule sees that copy plus the router's own dispatches since it
      was taken: each request it bound to ``g`` adds 1 to ``waiting[g]`` and its
      prompt ``s_i`` to ``waiting_tokens[g]``. Completions, admissions and the
      growth of running requests stay invisible until the next report.

    A report is taken when the router is called: when requests arrive at every
    step (any loaded cluster) it is the state at step ``m k`` exactly; when the
    first arrival of a window comes later, the report is that fresher state
    (the simulator does not stop between arrivals to take reports, see
    ``fast_forward`` in :func:`bfio.simulator.simulate`). Rules that do not
    read the state (``round_robin``, ``random``) accept the option and are
    unaffected by it.
    """

    dispatch_modes: tuple[str, ...] = DISPATCH_MODES
    options = (REPORT_INTERVAL, COMPLETIONS_OPTION)

    def __init__(self, seed: int = 0, **options):
        super().__init__(seed=seed, **options)
        self.report_interval = self.option_values["report_interval"]
        self.completions = self.option_values["completions"]
        self._report = None
        self._stream = CompletionStream()

    def reset(self, workers: int, slots: int) -> None:
        super().reset(workers, slots)
        self._report = None
        self._stream.reset()

    def select(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        """The dispatch rule: one worker per request in ``requests`` (arrival
        order), given the state the router sees."""
        raise NotImplementedError

    def router_view(self, state: DispatchState) -> DispatchState:
        """The state the rule sees at this call: ``state`` itself when
        ``report_interval`` is 0, else the last report plus the router's own
        dispatches since it was taken (with option ``completions: streamed`` less the
        requests finished since, :mod:`bfio.policies.completion_stream`)."""
        k = self.report_interval
        if k == 0:
            return state
        window = int(state.step) // k
        rep = self._report
        streamed = self.completions == "streamed"
        if rep is None or rep["window"] != window or rep["waiting"].shape[0] != state.workers:
            if streamed:
                self._stream.new_report(state)
            rep = self._report = {
                "window": window, "step": int(state.step),
                **{f: None if getattr(state, f) is None else np.array(getattr(state, f), dtype=np.int64, copy=True)
                   for f in REPORTED_FIELDS},
                "sent": np.zeros(state.workers, dtype=np.int64),
                "sent_tokens": np.zeros(state.workers, dtype=np.int64)}
        view = DispatchState(step=state.step, clock=state.clock, workers=state.workers, slots=state.slots,
                             waiting=rep["waiting"] + rep["sent"],
                             waiting_tokens=rep["waiting_tokens"] + rep["sent_tokens"],
                             running=rep["running"], loads=rep["loads"], free=rep["free"],
                             workload=state.workload, running_prompt_tokens=rep["running_prompt_tokens"],
                             prefill=state.prefill)  # prefix caches and prefill backlog: not lagged
        if not streamed:
            return view
        self._stream.update(state)
        return self._stream.adjust(view)

    def dispatch(self, state: DispatchState, requests: np.ndarray) -> np.ndarray:
        out = self.select(self.router_view(state), requests)
        if self.report_interval and self._report is not None:
            to = np.asarray(out)
            # an invalid answer is left for the simulator to refuse (it names the fault)
            if (to.shape == requests.shape and to.dtype.kind in "iu"
                    and (to.size == 0 or (to.min() >= 0 and to.max() < state.workers))):
                np.add.at(self._report["sent"], to, 1)
                np.add.at(self._report["sent_tokens"], to, state.prefill_of(requests).astype(np.int64))
                if self.completions == "streamed":
                    self._stream.bind(state, requests, to)
        return out


#: The per-worker arrays of a :class:`DispatchState` that a load report copies.
REPORTED_FIELDS = ("waiting", "waiting_tokens", "running", "loads", "free", "running_prompt_tokens")
