"""How requests enter the system (``simulate(entry=...)``; "admission" means only
BF-IO's rule, :mod:`bfio.policies.bfio`).

An entry strategy answers, at every routing call of the step loop (Section 3),
which requests enter now (:meth:`Entry.due`, recorded in the cluster state's
``enter_step`` / ``enter_clock``), and when the next one will
(:meth:`Entry.next_arrival`, :meth:`Entry.quiet_until`, which lets the step
engine run the steps up to it in one kernel call):

- :class:`BacklogEntry`, the paper's (Section 6.2): no arrival times; before every
  routing call the waiting requests are topped up to ``pool_factor * G``;
- :class:`ArrivalEntry` (online, ``docs/online.md``): a request enters when the
  clock passes its ``arrival_s``;
- :class:`ClosedLoopEntry` (:mod:`bfio.workloads.closed_loop`): as arrivals, but a request
  that follows another arrives ``think_s`` after that one completes.
"""

from __future__ import annotations

import numpy as np

from bfio.workloads.closed_loop import ClosedLoopArrivals
from bfio.ground.errors import PolicyError
from bfio.sim.state import ClusterState
from bfio.workloads.workload import Workload


class Entry:
    """The requests entered so far are counted in :attr:`entered` (``N``: all)."""

    def __init__(self, requests: int):
        self.requests = requests
        self.entered = 0

    @property
    def all_entered(self) -> bool:
        return self.entered >= self.requests

    def due(self, state: ClusterState, waiting: int) -> np.ndarray | None:
        """The requests that enter at ``state.clock`` (``waiting`` requests wait
        already), recorded in ``state``; ``None`` when none does."""
        raise NotImplementedError

    def next_arrival(self, step: int) -> float | None:
        """The clock of the next arrival still to come (``None``: entry has no
        arrival times). Asked only while some request has not entered."""
        return None

    def quiet_until(self, step: int) -> float:
        """Nothing waits: no routing call can change anything until this clock
        (``inf``: every request has entered; ``-inf``: an entry may come at any step)."""
        return np.inf if self.all_entered else -np.inf

    def completed(self, ids: np.ndarray, finish_s: np.ndarray) -> None:
        """Requests ``ids`` completed (their finish clocks in ``finish_s``, indexed by request)."""

    def _enter_through(self, state: ClusterState, stop: int, clocks) -> np.ndarray:
        """Requests ``entered .. stop - 1`` (workload order) enter at this routing call's
        step, at ``clocks`` (one clock or one per request); returns their ids."""
        nxt = self.entered
        state.enter_step[nxt:stop] = state.step
        state.enter_clock[nxt:stop] = clocks
        self.entered = stop
        return np.arange(nxt, stop, dtype=np.int64)


class BacklogEntry(Entry):
    """The paper's backlog pool: the waiting requests are topped up to ``target``
    (``pool_factor * G``) in workload order; they enter at the clock of the call."""

    def __init__(self, requests: int, target: int):
        super().__init__(requests)
        self.target = target

    def due(self, state: ClusterState, waiting: int) -> np.ndarray | None:
        nxt = self.entered
        if nxt >= self.requests:
            return None
        need = self.target - waiting
        if need <= 0:
            return None
        return self._enter_through(state, min(self.requests, nxt + need), state.clock)


class ArrivalEntry(Entry):
    """Online arrivals: requests ``0..N-1`` in order of their ``arrival_s``
    (non-decreasing); each enters at its own arrival time."""

    def __init__(self, arrival_s: np.ndarray):
        super().__init__(int(arrival_s.shape[0]))
        self.arrival_s = arrival_s

    def due(self, state: ClusterState, waiting: int) -> np.ndarray | None:
        nxt = self.entered
        if nxt >= self.requests:
            return None
        stop = int(self.arrival_s.searchsorted(state.clock, side="right"))
        if stop <= nxt:
            return None
        return self._enter_through(state, stop, self.arrival_s[nxt:stop])

    def next_arrival(self, step: int) -> float | None:
        return float(self.arrival_s[self.entered])

    def quiet_until(self, step: int) -> float:
        return np.inf if self.all_entered else self.next_arrival(step)


class ClosedLoopEntry(Entry):
    """Closed-loop arrivals (:class:`bfio.workloads.closed_loop.ClosedLoopArrivals`): a
    follower's arrival is known only once the request it follows completes."""

    def __init__(self, loop: ClosedLoopArrivals):
        super().__init__(int(loop.time.shape[0]))
        self.loop = loop

    def due(self, state: ClusterState, waiting: int) -> np.ndarray | None:
        new = self.loop.due(state.clock)
        if new.size == 0:
            return None
        state.enter_step[new] = state.step
        state.enter_clock[new] = self.loop.time[new]
        self.entered += int(new.size)
        return new

    def next_arrival(self, step: int) -> float | None:
        t = self.loop.next_time()
        if t is None:  # cannot be: a request not entered follows one not completed, which is active
            raise PolicyError(f"closed loop: no arrival to come at step {step} with "
                              f"{self.requests - self.entered} requests not entered")
        return t

    def quiet_until(self, step: int) -> float:
        if self.all_entered:
            return np.inf
        if self.loop.unreleased:
            return -np.inf  # a completion may release an arrival before the next known one
        return self.next_arrival(step)

    def completed(self, ids: np.ndarray, finish_s: np.ndarray) -> None:
        self.loop.completed(ids, finish_s[ids])


def make_entry(entry: str, workload: Workload, pool_target: int) -> Entry:
    """The entry strategy of ``simulate(entry=...)``: ``backlog`` or ``arrivals``
    (closed loop when the workload has ``follow_ups``)."""
    if entry == "backlog":
        return BacklogEntry(len(workload), pool_target)
    if workload.follow_ups is not None:
        return ClosedLoopEntry(ClosedLoopArrivals(workload.arrival_s, workload.follow_ups))
    return ArrivalEntry(workload.arrival_s)
