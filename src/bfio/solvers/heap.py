"""BF-IO's placement at production scale: largest-that-fits on a heap of pivots (issue 27).

The greedy of :mod:`bfio.solvers.fast` looks at every worker with free slots
for every placement and re-derives every headroom when the envelope rises, so a
routing call costs ``O(U n_T)`` and grows like ``G^2``. This kernel keeps the
same objective (Eq. (IO), weights ``w_h = delta^h`` of
:func:`bfio.lookahead.discount.offset_weights`, lifetimes ``l_j``) and the same
reading of it (the fast solver's module docstring): with ``E(h) = max_g
Lhat_g(h)`` and ``c_g(h) = E(h) - Lhat_g(h) - h``, adding a request of size
``s`` to worker ``g`` changes ``J`` by the convex function
``G sum_h w_h max(0, s - c_g(h)) - sum_h w_h (s + h)``, smallest at the
worker's *pivot* (:func:`_key`; the headroom ``min_h c_g(h)`` for unit weights
and ``G > H``). Up to its pivot a larger request is better (more volume, no
raise that costs more than it gives). The kernel places, in turn:

1. the requests that must be admitted (admission ``fifo``/``aging``, or all of
   them when ``U = n``), largest first, each on the worker with the largest pivot;
2. the other slots one at a time: the worker with the largest pivot (top of a
   max-heap) takes the **largest** waiting request up to its pivot less the
   smallest waiting size for each of its other free slots (binary search in the
   size order, then a path-compressed "next waiting to the left" pointer);
   when none is that small, the smallest waiting request goes there (the least
   raise);
3. (free admission, ``U < n``) up to :data:`UPSIZE_PASSES` passes of
   :func:`_upsize`: each placed request is exchanged for the largest waiting one
   that takes its place without raising ``E`` (strictly more volume, same
   envelope, so ``J`` drops).

Keys are lazy, with upper bounds: a rise of ``E`` by ``d`` raises no pivot by
more than ``d``, so the heap holds each key less the sum ``D`` of all rises
up to its computation, and ``value + D`` bounds the true key from above. The
top is recomputed (and sifted down) until it was computed after the last rise;
it is then the true maximum. No rebuild of the heap is ever needed.

Per call: ``O(G H_eff + n log n + U (log n + log n_T + H_eff log H_eff) +
refreshes (log n_T + H_eff log H_eff))`` against the greedy's ``O(U n_T ...)``; ``n`` is the pool
(``4 G``), ``U`` the free slots, ``n_T`` the workers with one. Short-lived
requests are fitted with the whole window's pivot (cautious). A local search
for the workers that set the envelope (moves and exchanges, evaluated exactly
on the columns' top three) was measured and dropped: after the exchanges of
phase 3 it found no improving move on captured calls. Measurements against the
greedy and the exact backends: ``docs/bfio.md``, "Production scale".
"""

from __future__ import annotations

import numpy as np

from bfio.ground.jit import kernel
from bfio.solvers.fenwick import bit_add as _bit_add
from bfio.solvers.fenwick import bit_build as _bit_build
from bfio.solvers.fenwick import bit_kth as _bit_kth
from bfio.solvers.fenwick import bit_prefix as _bit_prefix
from bfio.solvers.terms.kernel import candidate_cost, for_workers, imbalance_only
from bfio.solvers.touched import solver_loads, touched_workers, waiting_order


#: Passes of :func:`_upsize` at most (each is ``O(U (H_eff + log n))``; it stops when one exchanges nothing).
UPSIZE_PASSES = 2


@kernel
def _sift_down(hk, hi, i, m):
    """Restore the max-heap below position ``i`` (keys ``hk``, items ``hi``)."""
    while True:
        left = 2 * i + 1
        if left >= m:
            return
        big = left
        if left + 1 < m and hk[left + 1] > hk[left]:
            big = left + 1
        if hk[big] <= hk[i]:
            return
        hk[i], hk[big] = hk[big], hk[i]
        hi[i], hi[big] = hi[big], hi[i]
        i = big


@kernel
def _heapify(hk, hi, m):
    """Max-heap invariant over the first ``m`` entries: ``hk[parent] >= hk[child]``."""
    for i in range(m // 2 - 1, -1, -1):
        _sift_down(hk, hi, i, m)


@kernel
def _left_waiting(left, p):
    """Largest position ``<= p`` whose request still waits (``-1`` if none);
    ``left`` is a path-compressed pointer forest, ``left[p] = p`` while ``p`` waits."""
    r = p
    while r >= 0 and left[r] != r:
        r = left[r]
    while p >= 0 and left[p] != p:  # compress
        nxt = left[p]
        left[p] = r
        p = nxt
    return r


@kernel
def _take(left, right, p):
    """Mark position ``p`` taken: both pointer forests skip it from now on."""
    left[p] = p - 1
    right[p] = p + 1


@kernel
def _right_waiting(right, p, n):
    """Smallest position ``>= p`` whose request still waits (``n`` if none)."""
    r = p
    while r < n and right[r] != r:
        r = right[r]
    while p < n and right[p] != p:
        nxt = right[p]
        right[p] = r
        p = nxt
    return r


@kernel
def _add(P, E, t, s, lf, H1):
    """Add request (size ``s``, lifetime ``lf`` offsets) to touched worker ``t``;
    returns the largest rise of the envelope ``E`` over the offsets (0: none).
    No worker's pivot (:func:`_key`) rises by more than that."""
    rise = 0.0
    for h in range(min(lf, H1)):
        P[t, h] += s + h
        if P[t, h] > E[h]:
            if P[t, h] - E[h] > rise:
                rise = P[t, h] - E[h]
            E[h] = P[t, h]
    return rise


@kernel
def heavy_light(w, G, W):
    """``(heavy, light)``: the offsets ``h`` whose weight alone reaches ``W / G``
    (``G w_h >= W``, ``W = sum_h w_h``) and the others, each ascending: the split
    :func:`_key` reads, made once per :func:`_solve_heap` call."""
    H1 = w.shape[0]
    nh = 0
    for h in range(H1):
        if G * w[h] >= W:
            nh += 1
    heavy = np.empty(nh, dtype=np.int64)
    light = np.empty(H1 - nh, dtype=np.int64)
    a = 0
    for h in range(H1):
        if G * w[h] >= W:
            heavy[a] = h
            a += 1
        else:
            light[h - a] = h
    return heavy, light


@kernel
def _key(P, E, t, G, w, W, heavy, light, cbuf, ibuf):
    """Heap key of touched worker ``t``: its *pivot*, the size ``s`` that minimizes
    the change of ``J`` when a persisting request joins it,

        delta_t(s) = G sum_h w_h max(0, s - c_t(h)) - sum_h w_h (s + h),   c_t(h) = E(h) - Lhat_t(h) - h,

    a convex piecewise-linear function whose slope ``G sum_{c_t(h) < s} w_h - W``
    turns non-negative at the ``c_t(h)`` where the weights of the offsets already
    exceeded reach ``W / G`` (``W = sum_h w_h``). Requests up to the pivot lower
    ``J`` the more the larger they are; with unit weights and ``G > H`` the pivot
    is the headroom ``min_h c_t(h)``. Offsets with a small weight (a discount) may
    be exceeded: a whole-window minimum would be far too cautious.

    ``heavy`` are the offsets with ``G w_h >= W`` (one alone reaches ``W / G``), ``light``
    the others: the pivot is at most ``m``, the smallest ``c_t`` over the heavy offsets,
    so only the light offsets below ``m`` are sorted (none or a few for large ``G``;
    all of them, the whole window, when no offset is heavy). ``O(H_eff)`` then."""
    m = np.inf
    for a in range(heavy.shape[0]):
        h = heavy[a]
        v = E[h] - P[t, h] - h
        if v < m:
            m = v
    k = 0
    for a in range(light.shape[0]):
        h = light[a]
        v = E[h] - P[t, h] - h
        if v < m:
            b = k - 1  # insertion in ascending order (few entries)
            while b >= 0 and cbuf[b] > v:
                cbuf[b + 1] = cbuf[b]
                ibuf[b + 1] = ibuf[b]
                b -= 1
            cbuf[b + 1] = v
            ibuf[b + 1] = h
            k += 1
    acc = 0.0
    for a in range(k):
        acc += G * w[ibuf[a]]
        if acc >= W:
            return cbuf[a]
    if heavy.shape[0] > 0:
        return m
    return cbuf[k - 1] + 1e18  # G sum w < W (G = 1): every size lowers J


@kernel
def _waiting_tree(at, order):
    """The exchanges' state: a Fenwick tree over the size positions (1 = still
    waiting) and each request's position in the size order (``rank``)."""
    n = order.shape[0]
    bit = np.zeros(n + 1, dtype=np.int64)
    waits = np.empty(n, dtype=np.int64)
    rank = np.empty(n, dtype=np.int64)
    for p in range(n):
        waits[p] = 1 if at[order[p]] < 0 else 0
        rank[order[p]] = p
    _bit_build(bit, waits)
    return bit, rank


@kernel
def _upsize(P, at, sizes, life, forced, order, ss, E, bit, rank):
    """One pass over the placed requests, smallest first: exchange each (not
    forced) for the largest waiting request that takes its place without raising
    the envelope at any offset (``P_t - w_j + w_k <= E`` over the window). Each
    exchange adds volume and leaves ``E`` unchanged, so ``J`` strictly drops.
    ``bit`` and ``rank`` (:func:`_waiting_tree`) are kept up to date for the next
    pass, and each worker's slack ``min_h E(h) - P_t(h)`` is computed once and
    again only after an exchange there. Returns the number of exchanges.

    Skip pointer: ``nw``, the smallest position after ``q`` whose request still waits.
    A candidate is a waiting request larger than ``s_j`` (``j`` at position ``q``), so
    at a position after ``q``; when even ``ss[nw]`` exceeds ``s_j + slack`` there is
    none and ``j`` is passed without the searches (most placed requests: 87% on
    captured ``G = 256`` calls). The waiting positions after ``q`` only leave during a
    pass (an exchange takes one after ``q`` and returns ``j`` at ``q``), so ``nw``
    only moves forward: ``O(n)`` a pass, the same exchanges as without it."""
    nT, H1 = P.shape
    n = sizes.shape[0]
    slk = np.empty(nT, dtype=np.float64)
    for t in range(nT):
        v0 = E[0] - P[t, 0]
        for h in range(1, H1):
            v = E[h] - P[t, h]
            if v < v0:
                v0 = v
        slk[t] = v0
    done = 0
    nw = 0  # the smallest position > q whose request waits (n: none)
    for q in range(n):
        j = order[q]
        t = at[j]
        if t < 0 or forced[j]:
            continue
        sj = float(sizes[j])
        lj = life[j]
        slack = slk[t]
        if nw <= q:
            nw = q + 1
        while nw < n and at[order[nw]] >= 0:
            nw += 1
        if nw >= n or ss[nw] > sj + slack:
            continue  # no waiting request in (s_j, s_j + slack]: nothing to exchange
        a, b = 0, n
        while a < b:  # first position with size > s_j + slack
            mid = (a + b) // 2
            if ss[mid] <= sj + slack:
                a = mid + 1
            else:
                b = mid
        c = _bit_prefix(bit, a - 1) if a > 0 else 0  # waiting requests at positions < a
        tries = 0
        while c > 0 and tries < 4:
            p = _bit_kth(bit, c)  # the c-th waiting position: the largest still below the bound
            if ss[p] <= sj:
                break
            tries += 1
            k = order[p]
            sk = float(sizes[k])
            lk = life[k]
            fits = True
            for h in range(H1):
                v = P[t, h] - (sj + h if h < lj else 0.0) + (sk + h if h < lk else 0.0)
                if v > E[h]:
                    fits = False
                    break
            if fits:
                v0 = np.inf
                for h in range(H1):
                    P[t, h] += (sk + h if h < lk else 0.0) - (sj + h if h < lj else 0.0)
                    if E[h] - P[t, h] < v0:
                        v0 = E[h] - P[t, h]
                slk[t] = v0
                at[k] = t
                at[j] = -1
                _bit_add(bit, p, -1)
                _bit_add(bit, rank[j], 1)
                done += 1
                break
            c -= 1
    return done


def solve_heap(base, free, sizes, life, forced, U, weights, upsize_passes=UPSIZE_PASSES):
    """:func:`place_heap` under the imbalance alone: lifetimes ``life`` and offset weights
    ``weights`` (:func:`~bfio.solvers.terms.kernel.imbalance_only`); the same result."""
    kt = imbalance_only(life, weights, np.shape(base)[0])
    return place_heap(base, free, sizes, forced, U, kt, upsize_passes)


def place_heap(base, free, sizes, forced, U, kt, upsize_passes=UPSIZE_PASSES):
    """Place exactly ``U`` waiting requests (every ``forced`` one among them) on
    workers with free slots, at most ``free[g]`` per worker; returns request ->
    worker (or -1) and the number of stale keys refreshed (lazy upper bounds).

    ``base`` is the ``(G, H_eff + 1)`` predicted loads of the active requests
    (integer or float; the kernel :func:`_solve_heap` takes them as float64,
    :func:`bfio.solvers.touched.solver_loads`, exact for integer loads); ``kt`` the
    call's kernel terms (:class:`~bfio.solvers.terms.kernel.KernelTerms`), ``kt.life[j]``
    the offsets at which request ``j`` adds ``s_j + h`` once admitted.
    Invariants kept at every placement: the assignment is feasible, the heap
    holds exactly the touched workers with a free slot left, and every heap key
    is the worker's key under the current envelope (rebuilt after any raise).

    The keys (:func:`_key`) order the workers by the imbalance alone: a kernel term
    whose cost depends on the worker (``kt.worker_dependent``) breaks them, and
    :meth:`~bfio.solvers.objective.ObjectiveTerms.kernel_terms` refuses such a term for
    the heap by name (``placement: auto`` runs the greedy then,
    :func:`bfio.solvers.placement.place_terms`).
    """
    return _solve_heap(solver_loads(base), free, sizes, forced, U, kt, upsize_passes)


@kernel
def _solve_heap(base, free, sizes, forced, U, kt, upsize_passes):
    """The kernel of :func:`place_heap` (its docstring), on float64 loads ``base``
    (invariant: :func:`~bfio.solvers.touched.solver_loads`)."""
    G, H1 = base.shape
    n = sizes.shape[0]
    assign = np.full(n, -1, dtype=np.int64)
    if U <= 0 or n == 0:
        return assign, 0
    life = kt.life
    w = kt.w
    W = kt.cw[H1]  # cw[l] = sum_{h<l} w_h
    cbuf = np.empty(H1, dtype=np.float64)
    ibuf = np.empty(H1, dtype=np.int64)
    heavy, light = heavy_light(w, G, W)
    cres = np.empty(H1, dtype=np.float64)
    # keys and rises in float64, as the loads: exact for integer loads below 2^53
    tw, P, capl, _, E = touched_workers(base, free)
    nT = tw.shape[0]
    kt = for_workers(kt, tw)  # the terms' worker costs indexed like the touched workers
    # waiting requests by size ascending (oldest last among equal sizes: taken first)
    order = waiting_order(sizes)
    ss = np.empty(n, dtype=np.float64)
    left = np.arange(n)
    right = np.arange(n)
    for p in range(n):
        ss[p] = sizes[order[p]]
    hk = np.empty(nT, dtype=np.float64)
    hi = np.arange(nT)
    m = nT
    smin = ss[0]
    # Heap values are upper bounds of the keys shifted by the common drift D (the
    # sum of every rise of E so far): hk = key at computation - D then. A rise of
    # E by d raises no key by more than d, so hk + D >= the true key always, and
    # a top whose key was computed after the last rise is the true maximum.
    D = 0.0
    epoch = 0  # rises of E so far; kep[t]: the epoch of worker t's stored key
    kep = np.zeros(nT, dtype=np.int64)
    for t in range(nT):
        hk[t] = _key(P, E, t, G, w, W, heavy, light, cbuf, ibuf)
    _heapify(hk, hi, m)
    at = np.full(n, -1, dtype=np.int64)  # touched worker of each placed request
    refreshed = 0
    placed = 0
    # 1. forced requests, largest first; 2. the other slots, the top worker taking the
    #    largest request up to its pivot less a reservation for its other free slots
    p_forced = n - 1
    while placed < U and m > 0:
        j = -1
        while p_forced >= 0:
            if forced[order[p_forced]]:
                j = order[p_forced]
                break
            p_forced -= 1
        # the worker with the largest pivot (exact)
        while True:
            t = hi[0]
            if kep[t] == epoch:
                c = hk[0] + D
                break
            c = _key(P, E, t, G, w, W, heavy, light, cbuf, ibuf)
            kep[t] = epoch
            refreshed += 1
            hk[0] = c - D
            _sift_down(hk, hi, 0, m)
        if j >= 0:
            p = p_forced
            p_forced -= 1
        else:
            lo = _right_waiting(right, 0, n)
            if lo >= n:
                break
            smin = ss[lo]
            lim = c - (capl[t] - 1) * smin
            a, b = 0, n
            while a < b:  # first position with size > lim
                mid = (a + b) // 2
                if ss[mid] <= lim:
                    a = mid + 1
                else:
                    b = mid
            p = _left_waiting(left, a - 1)
            q = _right_waiting(right, a, n)  # the smallest above the limit
            if p < 0:
                p = q  # nothing fits: the smallest above raises the envelope least
            elif q < n:
                # the request just above may lower J more than the largest that fits (the
                # worker's cost is convex in the size: these two are its only candidates),
                # costed with the worker's other free slots holding the smallest request
                lmin = life[order[lo]]
                for h in range(H1):
                    cres[h] = E[h] - P[t, h] - h - ((capl[t] - 1) * (smin + h) if h < lmin else 0.0)
                # (integer sizes, as the greedy's costs: the same specialization of candidate_cost)
                jq = order[q]
                jp = order[p]
                if candidate_cost(kt, cres, sizes[jq], min(life[jq], H1), jq, t, G, np.inf) < \
                        candidate_cost(kt, cres, sizes[jp], min(life[jp], H1), jp, t, G, np.inf):
                    p = q
            j = order[p]
        _take(left, right, p)
        at[j] = t
        placed += 1
        capl[t] -= 1
        rise = _add(P, E, t, sizes[j], life[j], H1)
        if rise > 0.0:
            D += rise
            epoch += 1
        if capl[t] == 0:
            m -= 1
            hk[0], hi[0] = hk[m], hi[m]
        else:  # t's own key can only drop: computed exactly now
            hk[0] = _key(P, E, t, G, w, W, heavy, light, cbuf, ibuf) - D
            kep[t] = epoch
        _sift_down(hk, hi, 0, m)
    # 3. exchanges that add volume under the envelope (free admission: U < n)
    if upsize_passes > 0 and U < n:
        bit, rank = _waiting_tree(at, order)
        for _ in range(upsize_passes):
            if _upsize(P, at, sizes, life, forced, order, ss, E, bit, rank) == 0:
                break
    for j in range(n):
        assign[j] = tw[at[j]] if at[j] >= 0 else -1
    return assign, refreshed


def solve_heap_terms(base, free, sizes, forced, U, terms, upsize_passes=UPSIZE_PASSES):
    """:func:`place_heap` with the objective's terms of the routing call, a
    :class:`~bfio.solvers.objective.ObjectiveTerms` (Eq. (IO), Section 4), as the
    kernels take them (:meth:`~bfio.solvers.objective.ObjectiveTerms.kernel_terms` for
    the heap: a term that depends on the worker is refused by name); ``base`` spans its
    offsets ``0..terms.window`` (``H_eff``). Same result: ``(assign, refreshed)``."""
    kt = terms.kernel_terms(base, sizes.shape[0], placement="heap")
    return place_heap(base, free, sizes, forced, U, kt, upsize_passes)


def heap_assign(inst) -> np.ndarray:
    """:func:`solve_heap` on an :class:`~bfio.solvers.instance.Instance` (over the
    offsets ``0..effective_horizon`` of its terms, as the policy's calls), so the
    heap placement can be measured against the exact backends."""
    terms = inst.terms.fast()
    return solve_heap_terms(np.ascontiguousarray(inst.base[:, :terms.offsets]), inst.free, inst.sizes,
                            inst.forced(), inst.admissible, terms)[0]


__all__ = ["solve_heap", "place_heap", "solve_heap_terms", "heap_assign"]
