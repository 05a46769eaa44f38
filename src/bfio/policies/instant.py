"""Numba kernels shared by the instant-dispatch rules (``docs/online.md``).

A dispatcher binds newly arrived requests one by one, in arrival order; each
binding changes the state the next request sees (the chosen worker's queue
grows), so the rules are sequential greedy loops over the batch.
"""

from __future__ import annotations

import numpy as np

from bfio.ground.jit import kernel


def rotating_argmin(score: np.ndarray, start: int) -> int:
    """The first minimum of ``score`` scanning the workers from ``start`` (wrapping),
    with a strict ``<``: the engines' rotating tie-break (vLLM's ``eng_start_index``)."""
    G = score.shape[0]
    return (start + int(np.argmin(np.roll(score, -start)))) % G


@kernel
def greedy_argmin(key, weights):
    """Bind request ``j`` (in order) to the worker with the smallest ``key``
    (lowest index on ties) and add ``weights[j]`` to that worker's key."""
    key = key.copy()
    n = weights.shape[0]
    G = key.shape[0]
    out = np.empty(n, dtype=np.int64)
    for j in range(n):
        best = 0
        for g in range(1, G):
            if key[g] < key[best]:
                best = g
        out[j] = best
        key[best] += weights[j]
    return out


@kernel
def greedy_argmin_lex(key, tie, weights, tie_weights):
    """Bind request ``j`` (in order) to the worker with the smallest pair
    ``(key, tie)`` compared lexicographically (``tie`` breaks equal keys; the
    lowest index breaks equal pairs), then add ``weights[j]`` to its ``key`` and
    ``tie_weights[j]`` to its ``tie``."""
    key = key.copy()
    tie = tie.copy()
    n = weights.shape[0]
    G = key.shape[0]
    out = np.empty(n, dtype=np.int64)
    for j in range(n):
        best = 0
        for g in range(1, G):
            if key[g] < key[best] or (key[g] == key[best] and tie[g] < tie[best]):
                best = g
        out[j] = best
        key[best] += weights[j]
        tie[best] += tie_weights[j]
    return out


@kernel
def greedy_least_loaded_lex(key, tie, free, weights, limit):
    """Central twin of :func:`greedy_argmin_lex`: assign ``limit`` requests in
    order to the worker with a free slot and the smallest ``(key, tie)`` (lowest
    index on equal pairs), adding ``weights[j]`` to its key and 1 to its tie."""
    key = key.copy()
    tie = tie.copy()
    free = free.copy()
    out = np.full(weights.shape[0], -1, dtype=np.int64)
    G = key.shape[0]
    for j in range(limit):
        best = -1
        for g in range(G):
            if free[g] > 0 and (best < 0 or key[g] < key[best] or (key[g] == key[best] and tie[g] < tie[best])):
                best = g
        if best < 0:
            break
        out[j] = best
        key[best] += weights[j]
        tie[best] += 1.0
        free[best] -= 1
    return out


@kernel
def two_choices(key, first, second, weights):
    """Power of two choices: request ``j`` goes to the one of workers
    ``first[j]``, ``second[j]`` with the smaller ``key`` (``first[j]`` on ties),
    whose key then grows by ``weights[j]``."""
    key = key.copy()
    n = weights.shape[0]
    out = np.empty(n, dtype=np.int64)
    for j in range(n):
        a = first[j]
        b = second[j]
        g = b if key[b] < key[a] else a
        out[j] = g
        key[g] += weights[j]
    return out


def distinct_pairs(rng: np.random.Generator, workers: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` ordered pairs of distinct workers drawn uniformly (``a == b`` only when ``workers == 1``)."""
    a = rng.integers(0, workers, size=n)
    if workers == 1:
        return a, a.copy()
    b = rng.integers(0, workers - 1, size=n)
    b = b + (b >= a)
    return a, b
