"""Brute-force enumeration of Eq. (IO) for tiny instances (tests only).

Enumerates every vector ``x_j in {-1} U {workers with free slots}``, keeps the
feasible ones (capacities, exactly ``U`` admitted, admission rule) and
evaluates ``J`` for all of them, following Algorithm 1's "enumerate all
feasible allocations" literally.
"""

from __future__ import annotations

import itertools

import numpy as np

MAX_ENUMERATION = 1_000_000


def enumeration_size(inst) -> int:
    nT = int((inst.free > 0).sum())
    return (nT + 1) ** inst.waiting


def brute_force(inst, limit: int = MAX_ENUMERATION) -> tuple[int, np.ndarray]:
    """``(J*, an optimal assignment)``; raises ValueError if the enumeration exceeds ``limit``."""
    size = enumeration_size(inst)
    if size > limit:
        raise ValueError(f"enumeration of {size} assignments exceeds the limit {limit}")
    touched = np.flatnonzero(inst.free > 0)
    choices = np.concatenate([[-1], touched]).astype(np.int64)
    n = inst.waiting
    if n == 0:
        a = np.zeros(0, dtype=np.int64)
        return inst.objective(a), a
    A = np.array(list(itertools.product(range(len(choices)), repeat=n)), dtype=np.int64).reshape(-1, n)
    A = choices[A]
    admitted = (A >= 0).sum(axis=1)
    ok = admitted == inst.admissible
    for g in touched:
        ok &= (A == g).sum(axis=1) <= inst.free[g]
    forced = inst.forced()
    if forced.any():
        ok &= (A[:, forced] >= 0).all(axis=1)
    A = A[ok]
    G, H1 = inst.workers, inst.horizon + 1
    h = np.arange(H1)
    env = np.broadcast_to(inst.base.max(axis=0), (A.shape[0], H1)).copy()
    total = np.full(A.shape[0], int(inst.base.sum()), dtype=np.int64)
    if inst.lifetimes is not None:  # new_requests = "predicted": per-request profiles
        W = inst.profiles()
        for g in touched:
            prof = inst.base[g][None, :] + (A == g).astype(np.int64) @ W
            env = np.maximum(env, prof)
            total += prof.sum(axis=1) - int(inst.base[g].sum())
        J = G * env.sum(axis=1) - total
        best = int(np.argmin(J))
        return int(J[best]), A[best].copy()
    for g in touched:
        on = (A == g)
        k = on.sum(axis=1)
        vol = on @ inst.sizes
        prof = inst.base[g][None, :] + vol[:, None] + k[:, None] * h[None, :]
        env = np.maximum(env, prof)
        total += vol * H1 + k * (H1 - 1) * H1 // 2
    J = G * env.sum(axis=1) - total
    best = int(np.argmin(J))
    return int(J[best]), A[best].copy()
