"""Brute-force enumeration of Eq. (IO) for tiny instances (tests only).

Enumerates every vector ``x_j in {-1} U {workers with free slots}``, keeps the
feasible ones (capacities, exactly ``U`` admitted, admission rule) and
evaluates ``J`` for all of them, following Algorithm 1's "enumerate all
feasible allocations" literally. ``J`` (discount, new-request lifetimes) is
evaluated by :func:`bfio.solvers.objective.imbalance_objective` on the stacked
loads, the one definition every backend shares, plus the instance's other terms
of ``J`` (:mod:`bfio.solvers.terms`, each by its ``value``); this module has no
formula of its own.
"""

from __future__ import annotations

import itertools

import numpy as np

from bfio.solvers.objective import imbalance_objective

MAX_ENUMERATION = 1_000_000
CHUNK = 20_000  # assignments evaluated at once (bounds the (chunk, G, H + 1) load array)


def enumeration_size(inst) -> int:
    nT = int((inst.free > 0).sum())
    return (nT + 1) ** inst.waiting


def _feasible_assignments(inst) -> np.ndarray:
    touched = np.flatnonzero(inst.free > 0)
    choices = np.concatenate([[-1], touched]).astype(np.int64)
    n = inst.waiting
    A = np.array(list(itertools.product(range(len(choices)), repeat=n)), dtype=np.int64).reshape(-1, n)
    A = choices[A]
    ok = (A >= 0).sum(axis=1) == inst.admissible
    for g in touched:
        ok &= (A == g).sum(axis=1) <= inst.free[g]
    forced = inst.forced()
    if forced.any():
        ok &= (A[:, forced] >= 0).all(axis=1)
    return A[ok]


def brute_force(inst, limit: int = MAX_ENUMERATION) -> tuple[int | float, np.ndarray]:
    """``(J*, an optimal assignment)``; raises ValueError if the enumeration exceeds ``limit``.

    ``J*`` is an exact ``int`` when ``inst.integral`` (``delta = 1``), else a float.
    """
    size = enumeration_size(inst)
    if size > limit:
        raise ValueError(f"enumeration of {size} assignments exceeds the limit {limit}")
    if inst.waiting == 0:
        a = np.zeros(0, dtype=np.int64)
        return inst.objective(a), a
    A = _feasible_assignments(inst)
    touched = np.flatnonzero(inst.free > 0)
    W = inst.profiles()
    w = inst.weights
    best_J, best_a = None, None
    for start in range(0, A.shape[0], CHUNK):
        block = A[start:start + CHUNK]
        loads = np.broadcast_to(inst.base, (block.shape[0],) + inst.base.shape).copy()
        for g in touched:
            loads[:, g, :] += (block == g).astype(np.int64) @ W
        J = np.asarray(imbalance_objective(loads, w))
        if inst.extra:  # the call's other terms of J (bfio.solvers.terms), each by its own value
            J = J + np.array([sum(t.value(L, a) for t in inst.extra) for L, a in zip(loads, block)])
        i = int(np.argmin(J))
        if best_J is None or J[i] < best_J:
            best_J, best_a = J[i], block[i].copy()
    J_best = inst.objective(best_a)  # the instance's own evaluation (int when integral)
    return J_best, best_a
