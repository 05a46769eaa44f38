"""BF-IO with ``H = 0``: assignments that are provably ``s_max``-balanced.

Neither assignment below solves the (NP-hard) min-max partition exactly; each
instead *certifies* the property the proofs use:

* :func:`sorted_rounds_loads` (Theorem 1, one admission round). Sort the
  ``G*B`` prompts in decreasing order, cut them into ``B`` rounds of ``G``, and
  in every round give the largest prompt to the currently lightest worker, the
  second largest to the second lightest, and so on. Each worker receives exactly
  one prompt per round, hence exactly ``B``. If the gap before a round is ``D``
  and the round's prompts span ``r = x_1 - x_G``, the gap after the round is at
  most ``max(D, r)`` (a lighter worker gets a larger prompt), so by induction
  the final ``max - min`` is at most ``s_max - 1``: the conclusion of Lemma 1
  (``M - m <= s_max``) holds on every sample. The LP bound
  ``M >= ceil(sum / G)`` certifies exact optimality on the samples that reach it.

* :func:`place_balanced` (Theorems 2 and 3, one admission step of the slot
  model). LPT with capacities (prompts in decreasing order, each to the least
  loaded worker that still has a free slot; binary heap) followed by the
  exchange of Lemma 1 / Lemma "Separation and gap reduction": while the
  heaviest worker ``p`` and lightest worker ``q`` differ by more than ``s_max``
  and some new prompt ``x`` on ``p`` exceeds some new prompt ``y`` on ``q``, swap
  the largest such ``x`` with the smallest such ``y``. Every swap strictly
  lowers the sum of squared loads, so the loop terminates, and on exit either
  ``D(k) <= s_max`` or the new prompts of ``p`` and ``q`` are *separated* by a
  threshold ``theta`` -- exactly the property from which the separation lemma
  derives ``D(k) <= max{s_max, A_pre(k) - gamma B p}``. The kernel returns a
  flag saying which of the two holds (it is checked on every step).
"""

from __future__ import annotations

import numpy as np

from bfio.ground.jit import kernel


def fcfs_round_loads(prompts: np.ndarray, workers: int, slots: int) -> np.ndarray:
    """FCFS in one admission round: worker ``g`` gets prompts ``g*B .. g*B+B-1``
    (arrival order). ``prompts`` is ``(n, G*B)``; returns loads ``(n, G)``."""
    n = prompts.shape[0]
    return prompts.reshape(n, workers, slots).sum(axis=2).astype(np.float64)


def sorted_rounds_loads(prompts: np.ndarray, workers: int, slots: int) -> np.ndarray:
    """BF-IO (H=0) for one admission round by sorted rounds (see module doc).

    ``prompts`` is ``(n, G*B)`` (one row per Monte Carlo sample); returns the
    per-worker loads ``(n, G)``. Vectorised over samples.
    """
    n = prompts.shape[0]
    G, B = workers, slots
    x = -np.sort(-prompts, axis=1).reshape(n, B, G)  # rounds of G, decreasing
    loads = np.zeros((n, G), dtype=np.float64)
    rows = np.arange(n)[:, None]
    for r in range(B):
        order = np.argsort(loads, axis=1, kind="stable")  # lightest first
        loads[rows, order] += x[:, r, :]
    return loads


@kernel
def _sift_down(heap, key, pos, size):
    i = pos
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        right = left + 1
        c = left
        if right < size and key[heap[right]] < key[heap[left]]:
            c = right
        if key[heap[c]] < key[heap[i]]:
            t = heap[c]
            heap[c] = heap[i]
            heap[i] = t
            i = c
        else:
            break


@kernel
def place_balanced(pre_loads, free, items, s_max, max_swaps):
    """Assign ``items`` (new prompts) to workers with ``free[g]`` free slots each
    (``sum(free) == len(items)``), minimising the max of ``pre_loads + new``
    by LPT with capacities and the separation exchange (module doc).

    Returns ``(worker_of_item, certified, swaps)``: ``certified`` is 1 if on exit
    ``max - min <= s_max``, 2 if the heaviest and lightest workers' new prompts
    are separated, 0 if ``max_swaps`` was hit first (never expected).
    """
    G = pre_loads.shape[0]
    C = items.shape[0]
    loads = pre_loads.astype(np.float64).copy()
    cap = free.copy()
    worker = np.full(C, -1, dtype=np.int64)
    order = np.argsort(-items, kind="mergesort")
    heap = np.empty(G, dtype=np.int64)
    size = 0
    for g in range(G):
        if cap[g] > 0:
            heap[size] = g
            size += 1
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(heap, loads, i, size)
    for t in range(C):
        j = order[t]
        g = heap[0]
        worker[j] = g
        loads[g] += items[j]
        cap[g] -= 1
        if cap[g] == 0:
            size -= 1
            heap[0] = heap[size]
        if size > 0:
            _sift_down(heap, loads, 0, size)
    swaps = 0
    certified = 0
    while True:
        p = 0
        q = 0
        for g in range(G):
            if loads[g] > loads[p]:
                p = g
            if loads[g] < loads[q]:
                q = g
        if loads[p] - loads[q] <= s_max:
            certified = 1
            break
        xi = -1
        yi = -1
        for j in range(C):
            if worker[j] == p:
                if xi < 0 or items[j] > items[xi]:
                    xi = j
            elif worker[j] == q:
                if yi < 0 or items[j] < items[yi]:
                    yi = j
        if xi < 0 or yi < 0 or items[xi] <= items[yi]:
            certified = 2
            break
        if swaps >= max_swaps:
            break
        d = items[xi] - items[yi]
        worker[xi] = q
        worker[yi] = p
        loads[p] -= d
        loads[q] += d
        swaps += 1
    return worker, certified, swaps


@kernel
def is_separated(worker, items, p, q):
    """True if every new prompt on ``p`` is <= every new prompt on ``q``."""
    hi = -1
    lo = -1
    for j in range(items.shape[0]):
        if worker[j] == p and (hi < 0 or items[j] > hi):
            hi = items[j]
        elif worker[j] == q and (lo < 0 or items[j] < lo):
            lo = items[j]
    return hi < 0 or lo < 0 or hi <= lo
