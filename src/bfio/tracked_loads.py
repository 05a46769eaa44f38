"""The predicted loads ``Lhat_g(h)`` kept across routing calls (issue 27).

:func:`bfio.lookahead.profiles.predicted_loads` gathers every occupied slot at every
routing call: ``G B`` reads of three request arrays in request order, about
0.5 ms at ``G = 1024``, ``B = 72`` (a third of the heap placement's call).
The same numbers follow from the few events between two calls, because a point
estimate's profile is fixed in absolute time (Section 4, ``W_hat_i``):

a request admitted at step ``a_i`` with estimate ``o_hat_i`` has, at step
``t``, ``tau_i = t - a_i`` and ``r_i = max(1, E_i - t)`` with the predicted end
``E_i = a_i + o_hat_i``. So it contributes ``c_i + t + h`` (``c_i = s_i - a_i``)
at every offset ``h < E_i - t`` while ``t < E_i`` (*running*), and ``c_i + t``
at ``h = 0`` only once ``t >= E_i`` (*overdue*: outlived its estimate, still
active). Per worker this class keeps ``sum c_i`` and the count of the running
and of the overdue requests; predicted ends are kept in a calendar (a ring of
``W`` buckets for the ends within ``W`` steps, a heap for the later ones). A
routing call then costs ``O(G H_eff + events)``: completions since the last
call, requests turning overdue, ends inside the window, admissions.

Exact, not approximate: the integers equal :func:`~bfio.lookahead.profiles.predicted_loads`
at every call (``tests/test_tracked_loads.py`` checks it call by call). Valid
for point estimates that do not change during a run (oracle, noisy, the error
models with ``remaining: paper``, ``none``) and for the central pool, where every
admission is a routing decision of the policy that holds the tracker.
"""

from __future__ import annotations

import numpy as np

from bfio.ground.jit import kernel

RUNNING, OVERDUE, GONE = 1, 2, 0
# Fields of a request's record (``req[i]``, one cache line: the events touch one
# record each) and of a worker's (``wk[g]``): running sum of c_i, running count,
# overdue sum, overdue count.
STATUS, WORKER, OFFSET, LOC = 0, 1, 2, 3
RUN_SUM, RUN_COUNT, DUE_SUM, DUE_COUNT = 0, 1, 2, 3
DEAD = -1  # request field of a calendar entry whose request finished
#: The per-request records are 32-bit while their fields fit (issue 40: half the memory a
#: run's first call touches, 24 MB instead of 48 MB at N = 1.5M, each page a fault that cost
#: up to 23 us on the measured machine); they widen to 64 bits when an offset ``c_i`` or a
#: calendar position would not fit (:meth:`TrackedLoads._widen`).
NARROW = np.iinfo(np.int32)


@kernel
def _heap_push(hp, size, e, i):
    """Min-heap of ``size[0]`` entries ``hp[k] = (end, request)`` gains ``(e, i)``."""
    k = size[0]
    size[0] = k + 1
    while k > 0:
        p = (k - 1) // 2
        if hp[p, 0] <= e:
            break
        hp[k, 0] = hp[p, 0]
        hp[k, 1] = hp[p, 1]
        k = p
    hp[k, 0] = e
    hp[k, 1] = i


@kernel
def _heap_pop(hp, size):
    """Remove the minimum of the min-heap (``size[0] > 0``); the heap invariant
    ``hp[parent, 0] <= hp[child, 0]`` holds afterwards."""
    m = size[0] - 1
    size[0] = m
    e = hp[m, 0]
    i = hp[m, 1]
    k = 0
    while True:
        c = 2 * k + 1
        if c >= m:
            break
        if c + 1 < m and hp[c + 1, 0] < hp[c, 0]:
            c += 1
        if hp[c, 0] >= e:
            break
        hp[k, 0] = hp[c, 0]
        hp[k, 1] = hp[c, 1]
        k = c
    if m > 0:
        hp[k, 0] = e
        hp[k, 1] = i


@kernel
def complete(done, req, ent, wk):
    """Requests ``done`` finished: each leaves its worker's running or overdue sums;
    a running one's calendar entry is marked dead (its request field ``DEAD``; an
    entry still in the heap is skipped when it leaves the heap, status ``GONE``)."""
    cap = ent.shape[1]
    for j in range(done.shape[0]):
        i = done[j]
        g = req[i, WORKER]
        if req[i, STATUS] == RUNNING:
            wk[g, RUN_SUM] -= req[i, OFFSET]
            wk[g, RUN_COUNT] -= 1
            k = req[i, LOC]
            if k >= 0:
                ent[k // cap, k % cap, 0] = DEAD
        elif req[i, STATUS] == OVERDUE:
            wk[g, DUE_SUM] -= req[i, OFFSET]
            wk[g, DUE_COUNT] -= 1
        req[i, STATUS] = GONE


@kernel
def _ring_put(i, e, g, ci, req, ent, count):
    """Entry ``(i, g, ci)`` of request ``i`` (end ``e``, worker ``g``, offset ``ci``) in
    bucket ``e mod W``; ``False`` when the bucket is full (the caller grows the ring
    and retries)."""
    W = ent.shape[0]
    cap = ent.shape[1]
    b = e & (W - 1)
    k = count[b]
    if k >= cap:
        return False
    ent[b, k, 0] = i
    ent[b, k, 1] = g
    ent[b, k, 2] = ci
    count[b] = k + 1
    req[i, LOC] = b * cap + k
    return True


@kernel
def _turn_overdue(i, g, ci, req, wk):
    """Running request ``i`` (worker ``g``, offset ``ci``) reached its predicted end
    while still active: it moves from ``g``'s running sums to its overdue sums."""
    wk[g, RUN_SUM] -= ci
    wk[g, RUN_COUNT] -= 1
    wk[g, DUE_SUM] += ci
    wk[g, DUE_COUNT] += 1
    req[i, STATUS] = OVERDUE


@kernel
def advance(t, last, ent, count, hp, hsize, req, wk):
    """Bring the calendar from step ``last[0]`` to ``t``: every running request with
    ``E_i <= t`` turns overdue; the ring then holds exactly the ends in ``(t, t + W]``
    (``W`` buckets, a power of two), the heap the later ones. Returns ``False`` (the
    calendar then stands at ``t`` with some heap entries not yet moved) when a
    bucket is full: grow the ring and call again."""
    W = ent.shape[0]
    t0 = last[0]
    stop = t if t < t0 + W else t0 + W
    for T in range(t0 + 1, stop + 1):  # the ring holds the ends in (t0, t0 + W]
        b = T & (W - 1)
        for k in range(count[b]):
            i = ent[b, k, 0]
            if i != DEAD:
                _turn_overdue(i, ent[b, k, 1], ent[b, k, 2], req, wk)
                req[i, LOC] = -1
        count[b] = 0
    last[0] = t
    while hsize[0] > 0 and hp[0, 0] <= t:
        i = hp[0, 1]
        _heap_pop(hp, hsize)
        if req[i, STATUS] == RUNNING:
            _turn_overdue(i, req[i, WORKER], req[i, OFFSET], req, wk)
    while hsize[0] > 0 and hp[0, 0] <= t + W:
        i = hp[0, 1]
        e = hp[0, 0]
        if req[i, STATUS] == RUNNING:
            if not _ring_put(i, e, req[i, WORKER], req[i, OFFSET], req, ent, count):
                return False
        _heap_pop(hp, hsize)
    return True


@kernel
def enter(t, ids, workers, offsets, ends, ent, count, hp, hsize, req, wk):
    """Requests ``ids`` join ``workers`` at step ``t`` with ``c_i = offsets[j]`` and
    predicted ends ``E_i = ends[j]``; an end at or before ``t`` makes them overdue
    at once (``r_i = 1``). The calendar must stand at ``t``. Returns how many were
    entered: fewer than ``len(ids)`` when a bucket is full (grow, then enter the rest)."""
    W = ent.shape[0]
    for j in range(ids.shape[0]):
        i = ids[j]
        g = workers[j]
        e = ends[j]
        ci = offsets[j]
        if t < e <= t + W:
            if not _ring_put(i, e, g, ci, req, ent, count):
                return j
        req[i, WORKER] = g
        req[i, OFFSET] = ci
        if e <= t:
            req[i, STATUS] = OVERDUE
            req[i, LOC] = -1
            wk[g, DUE_SUM] += ci
            wk[g, DUE_COUNT] += 1
            continue
        req[i, STATUS] = RUNNING
        wk[g, RUN_SUM] += ci
        wk[g, RUN_COUNT] += 1
        if e > t + W:
            req[i, LOC] = -1
            _heap_push(hp, hsize, e, i)
    return ids.shape[0]


@kernel
def read(t, horizon, ent, count, wk):
    """``(G, H+1)`` int64 ``Lhat_g(h)`` at step ``t`` (calendar advanced to ``t``):
    the running sums less the ends inside the window, plus the overdue at ``h = 0``.
    Reads the window's buckets in order (entries hold worker and offset, so no
    per-request record is touched)."""
    G = wk.shape[0]
    W = ent.shape[0]
    H1 = horizon + 1
    dA = np.zeros((G, H1), dtype=np.int64)
    dC = np.zeros((G, H1), dtype=np.int64)
    for h in range(1, H1):
        b = (t + h) & (W - 1)
        for k in range(count[b]):
            if ent[b, k, 0] != DEAD:
                g = ent[b, k, 1]
                dA[g, h] += ent[b, k, 2]
                dC[g, h] += 1
    out = np.empty((G, H1), dtype=np.int64)
    for g in range(G):
        a = wk[g, RUN_SUM]
        n = wk[g, RUN_COUNT]
        for h in range(H1):
            a -= dA[g, h]
            n -= dC[g, h]
            out[g, h] = a + (t + h) * n
        out[g, 0] += wk[g, DUE_SUM] + t * wk[g, DUE_COUNT]
    return out


class TrackedLoads:
    """``Lhat_g(h)`` of one central-pool run, kept from the policy's own admissions
    and the simulator's completions (module docstring). At every routing call
    :meth:`loads` (before placing), then :meth:`admitted` with the decision.

    Every call checks the kept state against the simulator's at offset 0
    (``Lhat_g(0) = L_g`` and the active counts, ``O(G)``) and rebuilds it from the
    slots (``O(G B)``, the gather it saves) when they differ: at the first call of
    a run, or when a caller routes states it did not produce."""

    def __init__(self, workers: int, requests: int, horizon: int):
        self.horizon = int(horizon)
        W = 64
        while W < 2 * (self.horizon + 1):
            W *= 2
        self.W = W
        self.workers = int(workers)
        self.requests = int(requests)
        self.rebuilds = 0
        self._clear()

    def _clear(self) -> None:
        n, G, W = self.requests, self.workers, self.W
        cap = max(64, 4 * G)
        self.ent = np.zeros((W, cap, 3), dtype=np.int64)  # ring entries: request (DEAD: finished), worker, c_i
        self.count = np.zeros(W, dtype=np.int64)
        self.hp = np.zeros((n, 2), dtype=np.int64)  # heap of the later ends: (end, request)
        self.hsize = np.zeros(1, dtype=np.int64)
        # per request: STATUS, WORKER, OFFSET (c_i), LOC (NARROW: 32-bit while the positions fit)
        self.req = np.zeros((n, 4), dtype=np.int32 if W * cap <= NARROW.max else np.int64)
        self.req[:, WORKER] = -1
        self.req[:, LOC] = -1
        self.wk = np.zeros((G, 4), dtype=np.int64)  # per worker: RUN_SUM, RUN_COUNT, DUE_SUM, DUE_COUNT
        self.last = np.zeros(1, dtype=np.int64)
        self.seen = 0  # completions consumed

    @property
    def capacity(self) -> int:
        """Entries a calendar bucket holds (grows when a step's ends overflow it)."""
        return int(self.ent.shape[1])

    def _grow(self) -> None:
        """Double the buckets' capacity (entries keep their bucket and position)."""
        W, cap, _ = self.ent.shape
        new = 2 * cap
        if W * new > NARROW.max:
            self._widen()
        ent = np.zeros((W, new, 3), dtype=np.int64)
        ent[:, :cap] = self.ent
        self.ent = ent
        rows, cols = np.nonzero(self.ent[:, :cap, 0] != DEAD)
        live = cols < self.count[rows]
        rows, cols = rows[live], cols[live]
        self.req[self.ent[rows, cols, 0], LOC] = rows * new + cols

    def fits(self, workers: int, requests: int, horizon: int) -> bool:
        return self.workers == workers and self.requests == requests and self.horizon == horizon

    def _calendar(self):
        return self.ent, self.count, self.hp, self.hsize, self.req, self.wk

    def _widen(self) -> None:
        """The per-request records in 64 bits (a field would not fit in 32)."""
        if self.req.dtype != np.int64:
            self.req = self.req.astype(np.int64)

    def _enter(self, t: int, ids, workers, offsets, ends) -> None:
        if ids.shape[0] and self.req.dtype != np.int64 and (offsets.min() < NARROW.min or
                                                           offsets.max() > NARROW.max):
            self._widen()
        j = 0
        while j < ids.shape[0]:
            j += enter(t, ids[j:], workers[j:], offsets[j:], ends[j:], *self._calendar())
            if j < ids.shape[0]:
                self._grow()

    def _rebuild(self, state, estimate: np.ndarray) -> None:
        """Seed the calendar from the slots: ``c_i = s_i + tau_i - t``, ``E_i = t - tau_i + o_hat_i``."""
        self._clear()
        self.rebuilds += 1
        t = int(state.step)
        self.last[0] = t
        self.seen = int(state.completed.shape[0])
        occupied = state.slot_request >= 0
        ids = state.slot_request[occupied]
        workers = np.nonzero(occupied)[0].astype(np.int64)
        tau = state.generated[ids]
        self._enter(t, ids, workers, state.workload.prefill[ids] + tau - t, t - tau + estimate[ids])

    def _read(self, t: int) -> np.ndarray:
        return read(t, self.horizon, self.ent, self.count, self.wk)

    def loads(self, state, estimate: np.ndarray) -> np.ndarray:
        """``Lhat`` at ``state.step`` (``(G, H+1)`` int64, equal to
        :func:`bfio.lookahead.profiles.predicted_loads` over ``0..horizon``)."""
        t = int(state.step)
        completed = state.completed
        if t < self.last[0] or completed.shape[0] < self.seen:
            self._rebuild(state, estimate)
        if completed.shape[0] > self.seen:
            complete(completed[self.seen:], self.req, self.ent, self.wk)
            self.seen = int(completed.shape[0])
        while not advance(t, self.last, *self._calendar()):
            self._grow()
        out = self._read(t)
        if not (np.array_equal(out[:, 0], state.loads)
                and np.array_equal(self.wk[:, RUN_COUNT] + self.wk[:, DUE_COUNT], state.active)):
            self._rebuild(state, estimate)
            out = self._read(t)
        return out

    def admitted(self, step: int, ids: np.ndarray, workers: np.ndarray, prefill: np.ndarray,
                 estimate: np.ndarray) -> None:
        """Requests ``ids`` start on ``workers`` at ``step`` (``tau = 0``): ``c_i = s_i - t``,
        ``E_i = t + o_hat_i`` (the routing decision carried out)."""
        if ids.shape[0]:
            self._enter(int(step), ids, workers, prefill[ids] - step, step + estimate[ids])
