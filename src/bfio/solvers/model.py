"""The aggregated MILP formulation of Eq. (IO) shared by the exact backends.

Only workers with free slots (``T``) can receive requests; the others enter
through their fixed envelope. With ``E0(h) = max_g base_g(h)`` and the shifted
envelope ``M_h = E0(h) + e_h``:

    minimize   G sum_h e_h - (H + 1) sum_{j,t} s_j x_jt  (+ constant)
    subject to sum_t x_jt <= 1            (= 1 for requests that must be admitted)
               k_t = sum_j x_jt <= cap_t   (per-worker count)
               S_t = sum_j s_j x_jt        (per-worker admitted volume)
               sum_{j,t} x_jt = U
               e_h - S_t - h k_t >= base_t(h) - E0(h)   for all t in T, h
               x binary, e_h >= 0

which is Eq. (IO) because ``max_g Lhat_g(h) = max(E0(h), max_t base_t(h) + S_t + h k_t)``
and ``sum_g Lhat_g(h) = sum_g base_g(h) + sum_t S_t + h U``. The constant is
``G sum_h E0(h) - sum_{g,h} base_g(h) - U H (H + 1) / 2``, so the model's
objective plus the constant is exactly ``J``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


@dataclass
class Milp:
    """``min c x + offset`` s.t. ``row_lo <= A x <= row_hi``, ``lb <= x <= ub``;
    ``integrality[i] = 1`` for binaries. Layout: ``x`` (n * nT, request-major),
    then ``S`` (nT), ``k`` (nT), ``e`` (H + 1)."""

    c: np.ndarray
    A: sp.csr_matrix
    row_lo: np.ndarray
    row_hi: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    integrality: np.ndarray
    offset: float
    touched: np.ndarray
    n: int

    @property
    def num_vars(self) -> int:
        return int(self.c.shape[0])

    @property
    def num_rows(self) -> int:
        return int(self.A.shape[0])

    def x_slice(self) -> slice:
        return slice(0, self.n * self.touched.shape[0])

    def vector_from_assign(self, inst, assign: np.ndarray) -> np.ndarray:
        """Full variable vector for a feasible ``assign`` (warm starts)."""
        nT, n, H1 = self.touched.shape[0], self.n, inst.horizon + 1
        pos = {int(g): t for t, g in enumerate(self.touched)}
        x = np.zeros((n, nT))
        for j in np.flatnonzero(assign >= 0):
            x[j, pos[int(assign[j])]] = 1.0
        S = inst.sizes @ x
        k = x.sum(axis=0)
        E0 = inst.base.max(axis=0)
        h = np.arange(H1)
        prof = inst.base[self.touched] + S[:, None] + k[:, None] * h[None, :]
        e = np.maximum(0, prof.max(axis=0, initial=0) - E0) if nT else np.zeros(H1)
        return np.concatenate([x.ravel(), S, k, e]).astype(float)

    def assign_from_vector(self, v: np.ndarray) -> np.ndarray:
        nT, n = self.touched.shape[0], self.n
        x = np.asarray(v[: n * nT]).reshape(n, nT) > 0.5
        out = np.full(n, -1, dtype=np.int64)
        rows, cols = np.nonzero(x)
        out[rows] = self.touched[cols]
        return out


def build_milp(inst) -> Milp:
    """The aggregated formulation of ``inst`` (an :class:`~bfio.solvers.instance.Instance`)."""
    G, H1, n = inst.workers, inst.horizon + 1, inst.waiting
    U = inst.admissible
    touched = np.flatnonzero(inst.free > 0).astype(np.int64)
    nT = touched.shape[0]
    s = inst.sizes.astype(float)
    forced = inst.forced()
    E0 = inst.base.max(axis=0)
    nx = n * nT
    iS, ik, ie = nx, nx + nT, nx + 2 * nT
    nv = ie + H1

    c = np.zeros(nv)
    c[:nx] = -H1 * np.repeat(s, nT)
    c[ie:] = G
    lb = np.zeros(nv)
    ub = np.full(nv, np.inf)
    ub[:nx] = 1.0
    ub[ik:ie] = inst.free[touched]
    integrality = np.zeros(nv, dtype=np.int64)
    integrality[:nx] = 1

    rows, cols, vals, lo, hi = [], [], [], [], []
    r = 0
    xid = np.arange(nx).reshape(n, nT) if nT else np.zeros((n, 0), dtype=np.int64)
    for j in range(n):  # each request at most once (exactly once if forced)
        rows += [r] * nT
        cols += xid[j].tolist()
        vals += [1.0] * nT
        lo.append(1.0 if forced[j] else -np.inf)
        hi.append(1.0)
        r += 1
    for t in range(nT):  # k_t = sum_j x_jt and S_t = sum_j s_j x_jt
        rows += [r] * (n + 1)
        cols += xid[:, t].tolist() + [ik + t]
        vals += [1.0] * n + [-1.0]
        lo.append(0.0)
        hi.append(0.0)
        r += 1
        rows += [r] * (n + 1)
        cols += xid[:, t].tolist() + [iS + t]
        vals += s.tolist() + [-1.0]
        lo.append(0.0)
        hi.append(0.0)
        r += 1
    rows += [r] * nT  # exactly U admitted
    cols += list(range(ik, ie))
    vals += [1.0] * nT
    lo.append(float(U))
    hi.append(float(U))
    r += 1
    for t in range(nT):  # envelope rows
        g = touched[t]
        for h in range(H1):
            rows += [r, r, r]
            cols += [ie + h, iS + t, ik + t]
            vals += [1.0, -1.0, -float(h)]
            lo.append(float(inst.base[g, h] - E0[h]))
            hi.append(np.inf)
            r += 1
    A = sp.csr_matrix((vals, (rows, cols)), shape=(r, nv))
    offset = float(G * int(E0.sum()) - int(inst.base.sum()) - U * (H1 - 1) * H1 // 2)
    return Milp(c=c, A=A, row_lo=np.asarray(lo), row_hi=np.asarray(hi), lb=lb, ub=ub,
                integrality=integrality, offset=offset, touched=touched, n=n)


__all__ = ["Milp", "build_milp"]
