"""The cluster state of one simulation (Section 3; the simulator of Section 6.2).

``G`` workers with ``B`` slots each: ``slot_request[g, b]`` is the request in
slot ``b`` of worker ``g`` (-1 when free), ``loads[g]`` is
``L_g = sum_{i in A_g} (s_i + tau_i)`` (Eq. (workload)) and ``active[g]`` is
``|A_g|``. Per request: the tokens generated (``tau_i``), its worker, the clock
and step at which it entered, started and finished. The step engines
(:mod:`bfio.sim.engine`) and the dispatch parts (:mod:`bfio.sim.dispatch`) write
these arrays in place (the numba kernels of :mod:`bfio.engine.kernels` take them as
they are); a policy reads them through :meth:`ClusterState.routing_state` or
:meth:`ClusterState.dispatch_state`, never writes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bfio.policies import DispatchState, RoutingState
from bfio.workloads.workload import Workload


@dataclass(eq=False)
class ClusterState:
    """Slots, loads and per-request records of one run (``requests`` of them),
    the clock and the counts of the step loop. ``completed[:finished]`` are the
    finished requests in completion order; ``idle_s`` is the time with nothing
    active (online arrivals); ``last_admission_step`` ends the paper's
    measurement window; ``route_times`` are the seconds of each policy call
    (``route`` or ``dispatch``)."""

    workload: Workload
    workers: int
    slots: int
    requests: int
    slot_request: np.ndarray
    loads: np.ndarray
    active: np.ndarray
    generated: np.ndarray
    worker_of: np.ndarray
    start: np.ndarray
    finish: np.ndarray
    start_step: np.ndarray
    finish_step: np.ndarray
    enter_step: np.ndarray
    enter_clock: np.ndarray
    completed: np.ndarray
    clock: float = 0.0
    step: int = 0
    finished: int = 0
    idle_s: float = 0.0
    last_admission_step: int = 0
    route_times: list[float] = field(default_factory=list)
    #: the run's calibrated step model (:class:`bfio.step_model.StepCoefficients`), what
    #: the policy views carry as ``step_costs``; ``None`` with the paper's step
    step_costs: object | None = None

    @classmethod
    def empty(cls, workload: Workload, workers: int, slots: int, step_costs=None) -> ClusterState:
        """Every slot free, no request entered, the clock at 0; ``step_costs`` the run's
        calibrated step coefficients (``None``: the paper's step)."""
        n = len(workload)
        return cls(workload=workload, workers=workers, slots=slots, requests=n,
                   slot_request=np.full((workers, slots), -1, dtype=np.int64),
                   loads=np.zeros(workers, dtype=np.int64), active=np.zeros(workers, dtype=np.int64),
                   generated=np.zeros(n, dtype=np.int64), worker_of=np.full(n, -1, dtype=np.int64),
                   start=np.full(n, np.nan), finish=np.full(n, np.nan),
                   start_step=np.full(n, -1, dtype=np.int64), finish_step=np.full(n, -1, dtype=np.int64),
                   enter_step=np.full(n, -1, dtype=np.int64), enter_clock=np.full(n, np.nan),
                   completed=np.full(n, -1, dtype=np.int64), step_costs=step_costs)

    def wait_until(self, clock: float) -> None:
        """Nothing is active: the clock jumps to ``clock`` (if later) without a step,
        and the jump counts as idle time."""
        if clock > self.clock:
            self.idle_s += clock - self.clock
            self.clock = clock

    def routing_state(self, pool: np.ndarray, free: np.ndarray, prefill=None) -> RoutingState:
        """What a central-pool policy reads in one routing call (Section 4, Alg. 1's
        inputs): the waiting ``pool``, each worker's ``free`` slots and, with the
        prefill step model, its :class:`bfio.sim.cache_view.CacheView`."""
        return RoutingState(step=self.step, clock=self.clock, workers=self.workers, slots=self.slots, pool=pool,
                            free=free, loads=self.loads, active=self.active, workload=self.workload,
                            slot_request=self.slot_request, generated=self.generated, enter_step=self.enter_step,
                            completed=self.completed[:self.finished], idle_s=self.idle_s, prefill=prefill,
                            step_costs=self.step_costs)

    def dispatch_state(self, waiting: np.ndarray, waiting_tokens: np.ndarray, queue_head: np.ndarray,
                       queue_next: np.ndarray, prefill=None) -> DispatchState:
        """What an instant-dispatch policy reads when it binds arriving requests:
        each worker's queue (``waiting`` requests of ``waiting_tokens`` prompt
        tokens, the list ``queue_head`` -> ``queue_next``), its running requests
        and loads and, with the prefill step model, its :class:`bfio.sim.cache_view.CacheView`."""
        slot_request = self.slot_request
        return DispatchState(step=self.step, clock=self.clock, workers=self.workers, slots=self.slots,
                             waiting=waiting, waiting_tokens=waiting_tokens, running=self.active, loads=self.loads,
                             free=self.slots - self.active, workload=self.workload, slot_request=slot_request,
                             generated=self.generated, queue_head=queue_head, queue_next=queue_next,
                             running_prompt_tokens=np.where(slot_request >= 0, self.workload.prefill[slot_request],
                                                            0).sum(axis=1),
                             prefill=prefill, completed=self.completed[:self.finished],
                             step_costs=self.step_costs)


class FirstStarts:
    """The clock and step of requests' first admission, kept for requests that an
    action takes out of their slot (preemption, a pause, a migration: issues 44
    and 45) and seats again: a request's start, hence its wait, stays the one
    before its first token."""

    def __init__(self, requests: int):
        self.clock = np.full(requests, np.nan)
        self.step = np.full(requests, -1, dtype=np.int64)
        self.kept = np.zeros(requests, dtype=bool)

    def keep(self, i: int, state: ClusterState) -> None:
        """Request ``i`` leaves its slot: its start is kept, if this is its first time."""
        if not self.kept[i]:
            self.clock[i] = state.start[i]
            self.step[i] = state.start_step[i]
            self.kept[i] = True

    def restore(self, ids: np.ndarray, state: ClusterState) -> None:
        """Requests ``ids`` were seated now: those seated before keep their first start."""
        again = ids[self.kept[ids]]
        if again.size:
            state.start[again] = self.clock[again]
            state.start_step[again] = self.step[again]
