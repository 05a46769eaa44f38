"""The predicted loads ``Lhat_g(h)`` kept across routing calls (issue 27).

:func:`bfio.profiles.predicted_loads` gathers every occupied slot at every
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

Exact, not approximate: the integers equal :func:`~bfio.profiles.predicted_loads`
at every call (``tests/test_tracked_loads.py`` checks it call by call). Valid
for point estimates that do not change during a run (oracle, noisy, the error
models with ``remaining: paper``, ``none``) and for the central pool, where every
admission is a routing decision of the policy that holds the tracker.
"""

from __future__ import annotations

import numpy as np
from numba import njit

RUNNING, OVERDUE, GONE = 1, 2, 0


@njit(cache=True)
def _heap_push(hE, hI, size, e, i):
    """Min-heap on ``hE`` (items ``hI``) of ``size[0]`` entries gains ``(e, i)``."""
    k = size[0]
    size[0] = k + 1
    while k > 0:
        p = (k - 1) // 2
        if hE[p] <= e:
            break
        hE[k] = hE[p]
        hI[k] = hI[p]
        k = p
    hE[k] = e
    hI[k] = i


@njit(cache=True)
def _heap_pop(hE, hI, size):
    """Remove the minimum of the min-heap (``size[0] > 0``); the heap invariant
    ``hE[parent] <= hE[child]`` holds afterwards."""
    m = size[0] - 1
    size[0] = m
    e = hE[m]
    i = hI[m]
    k = 0
    while True:
        c = 2 * k + 1
        if c >= m:
            break
        if c + 1 < m and hE[c + 1] < hE[c]:
            c += 1
        if hE[c] >= e:
            break
        hE[k] = hE[c]
        hI[k] = hI[c]
        k = c
    if m > 0:
        hE[k] = e
        hI[k] = i


@njit(cache=True)
def complete(done, status, c, worker, loc, alive, A, C, OA, OC):
    """Requests ``done`` finished: each leaves its worker's running or overdue sums;
    a running one's calendar entry is marked dead (``alive[loc_i] = 0``; an entry
    still in the heap is skipped when it leaves the heap, ``status`` 0)."""
    cap = alive.shape[1]
    for j in range(done.shape[0]):
        i = done[j]
        g = worker[i]
        if status[i] == 1:
            A[g] -= c[i]
            C[g] -= 1
            k = loc[i]
            if k >= 0:
                alive[k // cap, k % cap] = 0
        elif status[i] == 2:
            OA[g] -= c[i]
            OC[g] -= 1
        status[i] = 0


@njit(cache=True)
def _ring_put(i, e, g, ci, loc, bi, bg, bc, alive, count):
    """Entry of request ``i`` (end ``e``, worker ``g``, offset ``ci``) in bucket ``e mod W``;
    ``False`` when the bucket is full (the caller grows the ring and retries)."""
    W = bi.shape[0]
    cap = bi.shape[1]
    b = e & (W - 1)
    k = count[b]
    if k >= cap:
        return False
    bi[b, k] = i
    bg[b, k] = g
    bc[b, k] = ci
    alive[b, k] = 1
    count[b] = k + 1
    loc[i] = b * cap + k
    return True


@njit(cache=True)
def _turn_overdue(i, g, ci, status, A, C, OA, OC):
    """Running request ``i`` (worker ``g``, offset ``ci``) reached its predicted end
    while still active: it moves from ``g``'s running sums to its overdue sums."""
    A[g] -= ci
    C[g] -= 1
    OA[g] += ci
    OC[g] += 1
    status[i] = 2


@njit(cache=True)
def advance(t, last, bi, bg, bc, alive, count, hE, hI, hsize, status, c, worker, loc, A, C, OA, OC):
    """Bring the calendar from step ``last[0]`` to ``t``: every running request with
    ``E_i <= t`` turns overdue; the ring then holds exactly the ends in ``(t, t + W]``
    (``W`` buckets, a power of two), the heap the later ones. Returns ``False`` (the
    calendar then stands at ``t`` with some heap entries not yet moved) when a
    bucket is full: grow the ring and call again."""
    W = bi.shape[0]
    t0 = last[0]
    stop = t if t < t0 + W else t0 + W
    for T in range(t0 + 1, stop + 1):  # the ring holds the ends in (t0, t0 + W]
        b = T & (W - 1)
        for k in range(count[b]):
            if alive[b, k]:
                i = bi[b, k]
                _turn_overdue(i, bg[b, k], bc[b, k], status, A, C, OA, OC)
                loc[i] = -1
        count[b] = 0
    last[0] = t
    while hsize[0] > 0 and hE[0] <= t:
        i = hI[0]
        _heap_pop(hE, hI, hsize)
        if status[i] == 1:
            _turn_overdue(i, worker[i], c[i], status, A, C, OA, OC)
    while hsize[0] > 0 and hE[0] <= t + W:
        i = hI[0]
        e = hE[0]
        if status[i] == 1:
            if not _ring_put(i, e, worker[i], c[i], loc, bi, bg, bc, alive, count):
                return False
        _heap_pop(hE, hI, hsize)
    return True


@njit(cache=True)
def enter(t, ids, workers, offsets, ends, bi, bg, bc, alive, count, hE, hI, hsize, status, c, worker, loc,
          A, C, OA, OC):
    """Requests ``ids`` join ``workers`` at step ``t`` with ``c_i = offsets[j]`` and
    predicted ends ``E_i = ends[j]``; an end at or before ``t`` makes them overdue
    at once (``r_i = 1``). The calendar must stand at ``t``. Returns how many were
    entered: fewer than ``len(ids)`` when a bucket is full (grow, then enter the rest)."""
    W = bi.shape[0]
    for j in range(ids.shape[0]):
        i = ids[j]
        g = workers[j]
        e = ends[j]
        if t < e <= t + W:
            if not _ring_put(i, e, g, offsets[j], loc, bi, bg, bc, alive, count):
                return j
        worker[i] = g
        c[i] = offsets[j]
        if e <= t:
            status[i] = 2
            loc[i] = -1
            OA[g] += c[i]
            OC[g] += 1
            continue
        status[i] = 1
        A[g] += c[i]
        C[g] += 1
        if e > t + W:
            loc[i] = -1
            _heap_push(hE, hI, hsize, e, i)
    return ids.shape[0]


@njit(cache=True)
def read(t, horizon, bg, bc, alive, count, A, C, OA, OC):
    """``(G, H+1)`` int64 ``Lhat_g(h)`` at step ``t`` (calendar advanced to ``t``):
    the running sums less the ends inside the window, plus the overdue at ``h = 0``.
    Reads the window's buckets in order (entries hold worker and offset, so no
    per-request array is touched)."""
    G = A.shape[0]
    W = bg.shape[0]
    H1 = horizon + 1
    dA = np.zeros((G, H1), dtype=np.int64)
    dC = np.zeros((G, H1), dtype=np.int64)
    for h in range(1, H1):
        b = (t + h) & (W - 1)
        for k in range(count[b]):
            if alive[b, k]:
                g = bg[b, k]
                dA[g, h] += bc[b, k]
                dC[g, h] += 1
    out = np.empty((G, H1), dtype=np.int64)
    for g in range(G):
        a = A[g]
        n = C[g]
        for h in range(H1):
            a -= dA[g, h]
            n -= dC[g, h]
            out[g, h] = a + (t + h) * n
        out[g, 0] += OA[g] + t * OC[g]
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
        self.bi = np.zeros((W, cap), dtype=np.int64)  # ring entries: request, worker, c_i, alive
        self.bg = np.zeros((W, cap), dtype=np.int64)
        self.bc = np.zeros((W, cap), dtype=np.int64)
        self.alive = np.zeros((W, cap), dtype=np.int8)
        self.count = np.zeros(W, dtype=np.int64)
        self.hE = np.zeros(n, dtype=np.int64)  # heap of the later ends
        self.hI = np.zeros(n, dtype=np.int64)
        self.hsize = np.zeros(1, dtype=np.int64)
        self.status = np.zeros(n, dtype=np.int8)  # per request: 1 running, 2 overdue, 0 gone
        self.c = np.zeros(n, dtype=np.int64)
        self.worker = np.full(n, -1, dtype=np.int64)
        self.loc = np.full(n, -1, dtype=np.int64)
        self.A = np.zeros(G, dtype=np.int64)  # per worker: running sum c_i, count; overdue sum, count
        self.C = np.zeros(G, dtype=np.int64)
        self.OA = np.zeros(G, dtype=np.int64)
        self.OC = np.zeros(G, dtype=np.int64)
        self.last = np.zeros(1, dtype=np.int64)
        self.seen = 0  # completions consumed

    def _grow(self) -> None:
        """Double the buckets' capacity (entries keep their bucket and position)."""
        W, cap = self.bi.shape
        new = 2 * cap
        for name in ("bi", "bg", "bc", "alive"):
            a = getattr(self, name)
            b = np.zeros((W, new), dtype=a.dtype)
            b[:, :cap] = a
            setattr(self, name, b)
        rows, cols = np.nonzero(self.alive)
        self.loc[self.bi[rows, cols]] = rows * new + cols

    def fits(self, workers: int, requests: int, horizon: int) -> bool:
        return self.workers == workers and self.requests == requests and self.horizon == horizon

    def _calendar(self):
        return (self.bi, self.bg, self.bc, self.alive, self.count, self.hE, self.hI, self.hsize, self.status,
                self.c, self.worker, self.loc, self.A, self.C, self.OA, self.OC)

    def _enter(self, t: int, ids, workers, offsets, ends) -> None:
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
        return read(t, self.horizon, self.bg, self.bc, self.alive, self.count, self.A, self.C, self.OA, self.OC)

    def loads(self, state, estimate: np.ndarray) -> np.ndarray:
        """``Lhat`` at ``state.step`` (``(G, H+1)`` int64, equal to
        :func:`bfio.profiles.predicted_loads` over ``0..horizon``)."""
        t = int(state.step)
        completed = state.completed
        if t < self.last[0] or completed.shape[0] < self.seen:
            self._rebuild(state, estimate)
        if completed.shape[0] > self.seen:
            complete(completed[self.seen:], self.status, self.c, self.worker, self.loc, self.alive,
                     self.A, self.C, self.OA, self.OC)
            self.seen = int(completed.shape[0])
        while not advance(t, self.last, *self._calendar()):
            self._grow()
        out = self._read(t)
        if not (np.array_equal(out[:, 0], state.loads) and np.array_equal(self.C + self.OC, state.active)):
            self._rebuild(state, estimate)
            out = self._read(t)
        return out

    def admitted(self, step: int, ids: np.ndarray, workers: np.ndarray, prefill: np.ndarray,
                 estimate: np.ndarray) -> None:
        """Requests ``ids`` start on ``workers`` at ``step`` (``tau = 0``): ``c_i = s_i - t``,
        ``E_i = t + o_hat_i`` (the routing decision carried out)."""
        if ids.shape[0]:
            self._enter(int(step), ids, workers, prefill[ids] - step, step + estimate[ids])
