"""The aggregated MILP formulation of Eq. (IO) shared by the exact backends.

The objective is the one of :mod:`bfio.solvers.objective`,
``J = sum_h w_h [G max_g Lhat_g(h) - sum_g Lhat_g(h)]`` with ``w_h = delta^h``
(``inst.weights``); request ``j`` admitted anywhere adds ``P_j(h)``
(``inst.profiles()``, ``s_j + h`` while ``h < l_j``). The model takes both from
the instance's objective terms (:attr:`Instance.terms
<bfio.solvers.instance.Instance.terms>`, over all ``H + 1`` offsets: weights,
profiles and each request's weighted volume ``sum_h w_h P_j(h)``) and derives
nothing of its own.

Only workers with free slots (``T``) can receive requests; the others enter
through their fixed envelope. Requests are grouped by the shape of their
profile: every profile is affine in the prefill, ``P_j(h) = s_j m_q(h) + b_q(h)``
(``m_q(h) = [h < l_q]``, ``b_q(h) = h [h < l_q]``), and requests with the same
``(m_q, b_q)`` form lifetime group ``q``. With ``E0(h) = max_g base_g(h)`` and
the shifted envelope ``M_h = E0(h) + e_h``:

    minimize   G sum_h w_h e_h - sum_{j,t} x_jt (sum_h w_h P_j(h))  + offset
    subject to sum_t x_jt <= 1                 (= 1 for requests that must be admitted)
               k_tq = sum_{j in q} x_jt         (per worker and group: count)
               S_tq = sum_{j in q} s_j x_jt     (per worker and group: volume)
               sum_q k_tq <= cap_t,  sum_{t,q} k_tq = U
               e_h - sum_q (m_q(h) S_tq + b_q(h) k_tq) >= base_t(h) - E0(h)   for t in T, all h
               x binary, e_h >= 0

with ``offset = sum_h w_h (G E0(h) - sum_g base_g(h))``. This is Eq. (IO): at an
optimum ``E0(h) + e_h = max_g Lhat_g(h)`` (a worker outside ``T`` keeps its base
load, which is at most ``E0``) and ``sum_g Lhat_g(h) = sum_g base_g(h) +
sum_{j,t} x_jt P_j(h)``, so the model's objective plus ``offset`` equals ``J``
for every feasible assignment (:meth:`Milp.objective_of` checks that identity
in the tests). An extra term of ``J`` that is linear in the assignment
(:mod:`bfio.solvers.terms`) adds its costs ``c_jg`` to ``x_jg``'s coefficient
(:meth:`~bfio.solvers.objective.ObjectiveTerms.milp_costs`; another is refused
by name). Without lifetimes there is one group (``l = H + 1``) and the
rows are today's ``e_h - S_t - h k_t >= base_t(h) - E0(h)``.

Size: ``n |T|`` binaries, ``2 |T| Q + |T| H1`` aggregation and envelope rows
(``Q`` groups). :func:`model_size` gives it without building the model, so a
backend can refuse an instance that is too large before spending time on it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


@dataclass
class Milp:
    """``min c x + offset`` s.t. ``row_lo <= A x <= row_hi``, ``lb <= x <= ub``;
    ``integrality[i] = 1`` for binaries. Layout: ``x`` (n * nT, request-major),
    then ``S`` (nT * Q, worker-major), ``k`` (nT * Q), ``e`` (H + 1)."""

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
    group: np.ndarray  # (n,) lifetime group of each request

    @property
    def num_vars(self) -> int:
        return int(self.c.shape[0])

    @property
    def num_rows(self) -> int:
        return int(self.A.shape[0])

    @property
    def num_groups(self) -> int:
        return int(self.group.max()) + 1 if self.group.size else 0

    def x_slice(self) -> slice:
        return slice(0, self.n * self.touched.shape[0])

    def vector_from_assign(self, inst, assign: np.ndarray) -> np.ndarray:
        """Full variable vector for a feasible ``assign`` (warm starts); ``e`` is
        the tight envelope ``max(0, max_t Lhat_t(h) - E0(h))``."""
        assign = np.asarray(assign, dtype=np.int64)
        nT, n, Q = self.touched.shape[0], self.n, self.num_groups
        pos = np.full(inst.workers, -1, dtype=np.int64)
        pos[self.touched] = np.arange(nT)
        on = np.flatnonzero(assign >= 0)
        x = np.zeros((n, nT))
        x[on, pos[assign[on]]] = 1.0
        S = np.zeros((nT, Q))
        k = np.zeros((nT, Q))
        np.add.at(S, (pos[assign[on]], self.group[on]), inst.sizes[on].astype(float))
        np.add.at(k, (pos[assign[on]], self.group[on]), 1.0)
        E0 = inst.base.max(axis=0)
        if nT:
            e = np.maximum(0, inst.loads(assign)[self.touched].max(axis=0) - E0).astype(float)
        else:
            e = np.zeros(inst.horizon + 1)
        return np.concatenate([x.ravel(), S.ravel(), k.ravel(), e])

    def assign_from_vector(self, v: np.ndarray) -> np.ndarray:
        nT, n = self.touched.shape[0], self.n
        x = np.asarray(v[: n * nT]).reshape(n, nT) > 0.5
        out = np.full(n, -1, dtype=np.int64)
        rows, cols = np.nonzero(x)
        out[rows] = self.touched[cols]
        return out

    def objective_of(self, v: np.ndarray) -> float:
        """The model's objective ``c v + offset`` (equals ``J`` of the assignment)."""
        return float(self.c @ np.asarray(v, dtype=float) + self.offset)


def lifetime_groups(inst, terms=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(group (n,), m (Q, H1), b (Q, H1))`` with ``P_j(h) = s_j m_q(h) + b_q(h)``
    for ``q = group[j]``, read off the profiles of ``terms`` (default
    ``inst.terms``: ``inst.profiles()``); raises if a profile is not of that
    form (the aggregation would then be wrong)."""
    P = (inst.terms if terms is None else terms).profiles(inst.sizes)
    n, H1 = P.shape
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros((0, H1), dtype=np.int64), np.zeros((0, H1), dtype=np.int64)
    m = (P != 0).astype(np.int64)  # s_j >= 1, so the request is alive exactly where P_j(h) > 0
    b = P - inst.sizes[:, None] * m
    keys, group = np.unique(np.concatenate([m, b], axis=1), axis=0, return_inverse=True)
    group = np.asarray(group, dtype=np.int64).reshape(-1)
    mq, bq = keys[:, :H1], keys[:, H1:]
    if not np.array_equal(inst.sizes[:, None] * mq[group] + bq[group], P):  # pragma: no cover - by construction
        raise AssertionError("request profiles are not affine in the prefill; the aggregated model does not apply")
    return group, mq, bq


def model_size(inst) -> tuple[int, int, int]:
    """``(variables, rows, binaries)`` of :func:`build_milp` without building it."""
    n, H1 = inst.waiting, inst.horizon + 1
    nT = int((inst.free > 0).sum())
    if inst.lifetimes is None:
        Q = 1 if n else 0
    else:
        Q = int(np.unique(np.minimum(inst.lifetimes, H1)).shape[0])
    cap_rows = nT if Q > 1 else 0
    return n * nT + 2 * nT * Q + H1, n + 2 * nT * Q + cap_rows + 1 + nT * H1, n * nT


def build_milp(inst, solver: str = "exact") -> Milp:
    """The aggregated formulation of ``inst`` (an :class:`~bfio.solvers.instance.Instance`)
    for the exact backend ``solver`` (named when a term of ``J`` cannot be expressed)."""
    G, H1, n = inst.workers, inst.horizon + 1, inst.waiting
    U = inst.admissible
    touched = np.flatnonzero(inst.free > 0).astype(np.int64)
    nT = touched.shape[0]
    terms = inst.terms
    w = terms.weights
    group, mq, bq = lifetime_groups(inst, terms)
    Q = mq.shape[0]
    s = inst.sizes.astype(float)
    forced = inst.forced()
    E0 = inst.base.max(axis=0)
    nx, nSK = n * nT, nT * Q
    iS, ik, ie = nx, nx + nSK, nx + 2 * nSK
    nv = ie + H1

    c = np.zeros(nv)
    c[:nx] = -np.repeat(terms.request_values(inst.sizes), nT)
    extra = terms.milp_costs(G, n, solver)  # the linear extra terms of J (refused by name if not linear)
    if extra is not None:
        c[:nx] += extra[:, touched].ravel()
    c[ie:] = G * w
    lb = np.zeros(nv)
    ub = np.full(nv, np.inf)
    ub[:nx] = 1.0
    ub[ik:ie] = np.repeat(inst.free[touched], Q).astype(float)
    integrality = np.zeros(nv, dtype=np.int64)
    integrality[:nx] = 1

    R, C, V, lo, hi = [], [], [], [], []
    r = 0
    xid = np.arange(nx, dtype=np.int64).reshape(n, nT)
    jj, tt = np.divmod(np.arange(nx, dtype=np.int64), max(nT, 1))  # request and worker of each x

    # each request at most once (exactly once if forced)
    R.append(jj)
    C.append(xid.ravel())
    V.append(np.ones(nx))
    lo.append(np.where(forced, 1.0, -np.inf))
    hi.append(np.ones(n))
    r += n
    # k_tq = sum_{j in q} x_jt and S_tq = sum_{j in q} s_j x_jt  (rows r + tq and r + nSK + tq)
    tq_of_x = tt * Q + group[jj]
    R += [r + tq_of_x, r + np.arange(nSK), r + nSK + tq_of_x, r + nSK + np.arange(nSK)]
    C += [xid.ravel(), ik + np.arange(nSK), xid.ravel(), iS + np.arange(nSK)]
    V += [np.ones(nx), -np.ones(nSK), s[jj], -np.ones(nSK)]
    lo.append(np.zeros(2 * nSK))
    hi.append(np.zeros(2 * nSK))
    r += 2 * nSK
    if Q > 1:  # per-worker capacity over the groups (with one group it is k's upper bound)
        R.append(r + np.repeat(np.arange(nT), Q))
        C.append(ik + np.arange(nSK))
        V.append(np.ones(nSK))
        lo.append(np.full(nT, -np.inf))
        hi.append(inst.free[touched].astype(float))
        r += nT
    # exactly U admitted
    R.append(np.full(nSK, r))
    C.append(ik + np.arange(nSK))
    V.append(np.ones(nSK))
    lo.append([float(U)])
    hi.append([float(U)])
    r += 1
    # envelope rows (t, h): e_h - sum_q m_q(h) S_tq - sum_q b_q(h) k_tq >= base_t(h) - E0(h)
    env = r + np.arange(nT * H1).reshape(nT, H1)
    R.append(env.ravel())
    C.append(np.tile(ie + np.arange(H1), nT))
    V.append(np.ones(nT * H1))
    for coef, first in ((mq, iS), (bq, ik)):
        q_idx, h_idx = np.nonzero(coef)  # (q, h) with a non-zero coefficient
        vals = -coef[q_idx, h_idx].astype(float)
        t_idx = np.repeat(np.arange(nT), q_idx.shape[0])
        R.append(env[t_idx, np.tile(h_idx, nT)])
        C.append(first + t_idx * Q + np.tile(q_idx, nT))
        V.append(np.tile(vals, nT))
    lo.append((inst.base[touched] - E0[None, :]).ravel().astype(float))
    hi.append(np.full(nT * H1, np.inf))
    r += nT * H1

    A = sp.csr_matrix((np.concatenate(V).astype(float),
                       (np.concatenate(R).astype(np.int64), np.concatenate(C).astype(np.int64))), shape=(r, nv))
    offset = float(w @ (G * E0.astype(np.float64) - inst.base.sum(axis=0).astype(np.float64)))
    return Milp(c=c, A=A, row_lo=np.concatenate([np.asarray(x, float) for x in lo]),
                row_hi=np.concatenate([np.asarray(x, float) for x in hi]), lb=lb, ub=ub,
                integrality=integrality, offset=offset, touched=touched, n=n, group=group)


__all__ = ["Milp", "build_milp", "model_size", "lifetime_groups"]
