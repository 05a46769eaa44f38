"""Closed-loop arrivals (issue 32): a request sent when an earlier one completes.

A chat user sends turn ``k`` after reading turn ``k-1``'s answer; an agentic or
RL rollout (GRPO) sends its next turn when the tool or environment has answered
the previous one. Such a request has no arrival time of its own: it arrives
``think_s`` seconds after the request it follows completes, so its arrival
depends on how the cluster served that request (a router that slows a turn
delays every later turn of the session). :class:`FollowUps` describes these
dependencies on a :class:`~bfio.workloads.workload.Workload`; :class:`ClosedLoopArrivals`
releases the requests during a simulation (``simulate(..., entry="arrivals")``).

Without follow-ups (the default) every arrival is the workload's ``arrival_s``,
as before.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from bfio.ground.errors import ConfigError


@dataclass(frozen=True, eq=False)
class FollowUps:
    """Per request ``i``: ``after[i]``, the index of the request it follows
    (``-1``: none, it arrives at the workload's ``arrival_s[i]``), always an
    earlier index; ``think_s[i]``, the seconds from that request's completion to
    ``i``'s arrival (finite, ``>= 0``; read only where ``after[i] >= 0``)."""

    after: np.ndarray
    think_s: np.ndarray

    def __post_init__(self):
        after = np.asarray(self.after)
        if after.ndim != 1 or (after.size and not np.issubdtype(after.dtype, np.integer)):
            raise ConfigError(f"follow_ups.after: expected a 1-D integer array, got dtype {after.dtype}, "
                              f"shape {after.shape}")
        after = np.ascontiguousarray(after, dtype=np.int64)
        think = np.ascontiguousarray(np.asarray(self.think_s, dtype=np.float64))
        if think.shape != after.shape:
            raise ConfigError(f"follow_ups.think_s: need one entry per request ({after.size}), got {think.shape}")
        bad = np.flatnonzero((after < -1) | (after >= np.arange(after.size)))
        if bad.size:
            i = int(bad[0])
            raise ConfigError(f"follow_ups.after: request {i} follows {int(after[i])}; expected -1 or an earlier "
                              "request's index")
        bad = np.flatnonzero((after >= 0) & ~(np.isfinite(think) & (think >= 0)))
        if bad.size:
            i = int(bad[0])
            raise ConfigError(f"follow_ups.think_s: request {i} has {float(think[i])!r}; expected a finite number >= 0 "
                              "of seconds")
        after.setflags(write=False)
        think.setflags(write=False)
        object.__setattr__(self, "after", after)
        object.__setattr__(self, "think_s", think)

    def __len__(self) -> int:
        return int(self.after.shape[0])


class ClosedLoopArrivals:
    """The arrivals of one run with :class:`FollowUps`: requests that follow none
    arrive at ``arrival_s``; a follower is released when the request it follows
    completes (:meth:`completed`) and arrives ``think_s`` later. ``time[i]`` is
    request ``i``'s arrival once known (``nan`` before). Invariant: every request
    is handed out by :meth:`due` exactly once, in order of (arrival time, index)."""

    def __init__(self, arrival_s: np.ndarray, follow_ups: FollowUps):
        n = len(follow_ups)
        after = follow_ups.after
        self._think = follow_ups.think_s
        self.time = np.full(n, np.nan)
        roots = np.flatnonzero(after < 0)
        self.time[roots] = arrival_s[roots]
        self._heap: list[tuple[float, int]] = [(float(arrival_s[i]), int(i)) for i in roots]
        heapq.heapify(self._heap)
        followers = np.flatnonzero(after >= 0)
        order = np.argsort(after[followers], kind="stable")
        self._children = followers[order]
        self._first = np.searchsorted(after[followers][order], np.arange(n + 1))
        #: followers whose request has not completed yet
        self.unreleased = int(followers.size)

    def due(self, clock: float) -> np.ndarray:
        """The requests arrived by ``clock`` and not handed out yet, by (time, index)."""
        out = []
        while self._heap and self._heap[0][0] <= clock:
            out.append(heapq.heappop(self._heap)[1])
        return np.asarray(out, dtype=np.int64)

    def next_time(self) -> float | None:
        """The earliest known arrival still to come (``None``: none known)."""
        return self._heap[0][0] if self._heap else None

    def completed(self, ids: np.ndarray, finish_s: np.ndarray) -> None:
        """Requests ``ids`` completed at ``finish_s``: release their followers."""
        for i, t in zip(ids.tolist(), finish_s.tolist()):
            for c in self._children[self._first[i]:self._first[i + 1]].tolist():
                at = t + float(self._think[c])
                if not math.isfinite(at):
                    raise ConfigError(f"follow_ups: request {c}'s arrival is not finite ({at!r})")
                self.time[c] = at
                heapq.heappush(self._heap, (at, c))
                self.unreleased -= 1


__all__ = ["FollowUps", "ClosedLoopArrivals"]
