"""Lower bounds on the optimum of Eq. (IO) at scale (issue 40): :func:`lp_bound`.

The exact backends' MILP (:mod:`bfio.solvers.model`) has ``n |T|`` binaries
(waiting requests times workers with a free slot): on captured BurstGPT calls
that is 200,000 at ``G = 256`` and millions at ``G = 1024``, and HiGHS does not
finish even its root LP within a minute. :func:`lp_bound` solves instead a small
*relaxation* of Eq. (IO) that forgets which worker a request joins and keeps,
offset by offset, how much load the workers with free slots can absorb below the
envelope ("water filling"):

    minimize   G sum_h w_h M_h - sum_j v_j y_j  - sum_h w_h sum_g base_g(h)   [+ sum_j c_j y_j]
    subject to sum_{t in T} u_th >= sum_j P_j(h) y_j          for every h   (a_h)
               u_th <= M_h - base_t(h)                           t in T, h   (b_th)
               sum_j y_j = U,  y_j in [f_j, 1]  (f_j = 1 for forced requests)  (sigma)
               0 <= u_th <= cap_t(h),  M_h >= E0(h) = max_g base_g(h)

with ``w_h = delta^h`` (``inst.weights``), ``P_j(h)`` the request's profile
(``inst.profiles()``), ``v_j = sum_h w_h P_j(h)`` (``terms.request_values``) and
``cap_t(h)`` the sum of the ``free_t`` largest ``P_j(h)`` over the waiting
requests. ``u_th`` stands for what worker ``t`` receives at offset ``h``, ``M_h``
for the envelope ``max_g Lhat_g(h)``.

Why it is a lower bound. Take any feasible assignment of Eq. (IO), with ``A``
its admitted requests. Set ``y_j = [j in A]``, ``M_h = max_g Lhat_g(h)`` and
``u_th = sum_{j in A -> t} P_j(h)``. Then ``sum_t u_th = sum_{j in A} P_j(h)``;
``u_th = Lhat_t(h) - base_t(h) <= M_h - base_t(h)``; worker ``t`` holds at most
``free_t`` new requests, so ``u_th <= cap_t(h)``; ``|A| = U`` with every forced
request in ``A``; and ``M_h >= E0(h)``. So the point is feasible, and its
objective is ``sum_h w_h [G M_h - sum_g base_g(h) - sum_{j in A} P_j(h)]``, which
is ``J`` of the assignment (Eq. (IO)'s objective as :mod:`bfio.solvers.objective`
defines it). Extra terms of ``J`` that are linear in the assignment
(:mod:`bfio.solvers.terms`, cost ``c_jg`` for ``j -> g``) enter as ``c_j =
min_{t in T} c_jt <= c_{j, assign_j}``. Hence the relaxation's optimum is at
most ``J`` of every feasible assignment, in particular of the optimum.

Rounding. The LP is solved by HiGHS in floating point, so its objective is
not used as such. By weak duality any multipliers ``a >= 0, b >= 0, sigma``
give the Lagrangian value

    L = sum_{t,h} b_th base_t(h) + sigma U + sum_h E0(h) (G w_h - sum_t b_th)
        + sum_{t,h} cap_t(h) min(0, b_th - a_h) + sum_j min over y_j in [f_j, 1] of y_j r_j
        - sum_h w_h sum_g base_g(h),      r_j = sum_h a_h P_j(h) - v_j + c_j - sigma,

a lower bound on the LP's optimum whenever ``sum_t b_th <= G w_h`` for every
``h`` (the multipliers are scaled down to ensure it). :func:`lp_bound` evaluates
``L`` in float64 at HiGHS's row duals, and returns ``max(L, trivial_bound)``;
the LP contains :func:`~bfio.solvers.trivial_bound`'s argument (``M_h >= E0(h)``,
``y`` fractional picks at most the largest values), so ``L`` is at least the
trivial bound up to HiGHS's tolerances.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


@dataclass
class Bound:
    """What :func:`lp_bound` found: ``value`` (the lower bound returned), ``lp``
    (HiGHS's objective of the relaxation, not rounded safely), ``lagrangian`` (the
    safe value at HiGHS's duals), ``trivial``, ``status`` and ``wall_s``."""

    value: float
    lp: float
    lagrangian: float
    trivial: float
    status: str
    wall_s: float


def _capacities(P: np.ndarray, free: np.ndarray) -> np.ndarray:
    """``(|T|, H1)``: the sum of the ``free_t`` largest ``P_j(h)`` per offset."""
    n, H1 = P.shape
    top = np.zeros((n + 1, H1))
    top[1:] = np.cumsum(-np.sort(-P.astype(np.float64), axis=0), axis=0)
    return top[np.minimum(free, n)]


def _extra_costs(inst, touched: np.ndarray) -> np.ndarray:
    """``c_j = min_{t in T} c_jt`` of the linear extra terms of ``J`` (zeros without)."""
    costs = inst.terms.milp_costs(inst.workers, inst.waiting, "lp_bound")
    if costs is None or touched.size == 0:
        return np.zeros(inst.waiting)
    return costs[:, touched].min(axis=1)


def safe_lagrangian(lp: dict, dual: np.ndarray) -> float:
    """Weak duality read-back: for ``min c x + offset`` s.t. ``lo <= A x <= hi``,
    ``l <= x <= u`` (all of ``l, u`` finite) and any row multipliers ``dual``,
    ``min over the box and z in [lo, hi] of c x + offset + dual (z - A x)`` is at most
    the LP's optimum. A multiplier whose side of the row is infinite is set to 0."""
    y = np.asarray(dual, dtype=np.float64).copy()
    y[(y > 0) & ~np.isfinite(lp["lo"])] = 0.0
    y[(y < 0) & ~np.isfinite(lp["hi"])] = 0.0
    rows = np.where(y > 0, y * np.where(np.isfinite(lp["lo"]), lp["lo"], 0.0),
                    y * np.where(np.isfinite(lp["hi"]), lp["hi"], 0.0))
    red = lp["c"] - lp["A"].T @ y
    cols = np.where(red > 0, red * lp["l"], red * lp["u"])
    return float(rows.sum() + cols.sum() + lp["offset"])


def relaxation(inst) -> dict:
    """The aggregated LP relaxation of the module docstring as ``{c, A, lo, hi, l, u, offset}``."""
    G, H1, n, U = inst.workers, inst.horizon + 1, inst.waiting, inst.admissible
    from bfio.solvers.model import lifetime_groups

    touched = np.flatnonzero(inst.free > 0)
    nT = touched.size
    free = inst.free[touched]
    w = inst.weights.astype(np.float64)
    base = inst.base.astype(np.float64)
    E0 = base.max(axis=0)
    P = inst.profiles().astype(np.float64)
    group, mq, bq = lifetime_groups(inst)
    Q = mq.shape[0]
    s = inst.sizes.astype(np.float64)
    cap = _capacities(P, free)
    # columns: y (n) | S (nT * Q, worker-major) | k (nT * Q) | M (H1)
    iS, ik, iM = n, n + nT * Q, n + 2 * nT * Q
    nv = iM + H1
    c = np.concatenate([_extra_costs(inst, touched) - P @ w, np.zeros(2 * nT * Q), G * w])
    size_q = np.bincount(group, minlength=Q)
    kmax = np.minimum(free[:, None], size_q[None, :]).astype(np.float64)
    desc = [np.sort(s[group == q])[::-1] for q in range(Q)]
    smax = np.array([d[0] for d in desc])
    Mhi = np.maximum(E0, (base[touched] + cap).max(axis=0))
    l = np.concatenate([inst.forced().astype(np.float64), np.zeros(2 * nT * Q), E0])
    u = np.concatenate([np.ones(n), (kmax * smax[None, :]).ravel(), kmax.ravel(), Mhi])
    R, C, V, lo, hi = [], [], [], [], []
    r = 0

    def add(rows, cols, vals, rlo, rhi):
        nonlocal r
        R.append(r + np.asarray(rows)); C.append(np.asarray(cols)); V.append(np.asarray(vals, dtype=np.float64))
        lo.append(np.asarray(rlo, dtype=np.float64)); hi.append(np.asarray(rhi, dtype=np.float64))
        r += len(lo[-1])

    tq = np.arange(nT * Q)
    t_of, q_of = np.divmod(tq, Q)
    # envelope (t, h): M_h - sum_q (m_q(h) S_tq + b_q(h) k_tq) >= base_t(h); added load <= cap_t(h)
    for bound_rows in ("env", "cap"):
        rr, cc, vv = [], [], []
        for coef, first in ((mq, iS), (bq, ik)):
            qi, hi_ = np.nonzero(coef)
            tt = np.repeat(np.arange(nT), qi.size)
            rr.append(tt * H1 + np.tile(hi_, nT)); cc.append(first + tt * Q + np.tile(qi, nT))
            vv.append(np.tile(coef[qi, hi_].astype(np.float64), nT) * (-1 if bound_rows == "env" else 1))
        if bound_rows == "env":
            rr.append(np.arange(nT * H1)); cc.append(iM + np.tile(np.arange(H1), nT)); vv.append(np.ones(nT * H1))
            add(np.concatenate(rr), np.concatenate(cc), np.concatenate(vv), base[touched].ravel(),
                np.full(nT * H1, np.inf))
        else:
            add(np.concatenate(rr), np.concatenate(cc), np.concatenate(vv), np.full(nT * H1, -np.inf), cap.ravel())
    # links per group: sum_t k_tq = sum_{j in q} y_j, sum_t S_tq = sum_{j in q} s_j y_j
    add(np.concatenate([q_of, group]), np.concatenate([ik + tq, np.arange(n)]),
        np.concatenate([np.ones(nT * Q), -np.ones(n)]), np.zeros(Q), np.zeros(Q))
    add(np.concatenate([q_of, group]), np.concatenate([iS + tq, np.arange(n)]),
        np.concatenate([np.ones(nT * Q), -s]), np.zeros(Q), np.zeros(Q))
    # slots per worker, and exactly U admitted
    add(t_of, ik + tq, np.ones(nT * Q), np.full(nT, -np.inf), free.astype(np.float64))
    add(np.zeros(n, dtype=np.int64), np.arange(n), np.ones(n), [float(U)], [float(U)])
    # per (t, q): S_tq between the sums of the k smallest and k largest sizes of group q
    # (piecewise linear in k: one line per i < kmax_tq, each valid for every k)
    rr, cc, vv, rlo, rhi = [], [], [], [], []
    count = 0
    for q in range(Q):
        d = desc[q]
        a = d[::-1]
        top = np.concatenate([[0.0], np.cumsum(d)])
        bot = np.concatenate([[0.0], np.cumsum(a)])
        for i in range(int(kmax[:, q].max()) if nT else 0):
            ts = np.flatnonzero(kmax[:, q] > i)
            m = ts.size
            for sign_top in (True, False):
                slope, val = (d[i], top[i]) if sign_top else (a[i], bot[i])
                rows = count + np.arange(m)
                rr += [rows, rows]; cc += [iS + ts * Q + q, ik + ts * Q + q]; vv += [np.ones(m), np.full(m, -slope)]
                rhs = np.full(m, val - i * slope)
                rlo.append(np.full(m, -np.inf) if sign_top else rhs); rhi.append(rhs if sign_top else np.full(m, np.inf))
                count += m
    if count:
        add(np.concatenate(rr), np.concatenate(cc), np.concatenate(vv), np.concatenate(rlo), np.concatenate(rhi))
    A = sp.csr_matrix((np.concatenate(V), (np.concatenate(R), np.concatenate(C))), shape=(r, nv))
    return {"c": c, "A": A, "lo": np.concatenate(lo), "hi": np.concatenate(hi), "l": l, "u": u,
            "offset": -float(w @ base.sum(axis=0))}


def lp_bound(inst, time_limit_s: float = 60.0, details: bool = False):
    """A lower bound on the optimum of Eq. (IO) for ``inst`` (:class:`~bfio.solvers.instance.Instance`):
    the aggregated relaxation of the module docstring, solved with HiGHS and read
    back through the Lagrangian at its duals (:func:`safe_lagrangian`, safe in
    floating point). At least :func:`~bfio.solvers.trivial_bound`. ``details``:
    return a :class:`Bound`."""
    from bfio.solvers import trivial_bound
    from bfio.solvers.highs import quiet_highs
    import highspy

    t0 = time.perf_counter()
    triv = trivial_bound(inst)
    if inst.admissible == 0 or not np.any(inst.free > 0):
        out = Bound(triv, triv, triv, triv, "trivial (nothing to place)", time.perf_counter() - t0)
        return out if details else out.value
    lp = relaxation(inst)
    A = lp["A"].tocsc()
    h = quiet_highs()
    h.setOptionValue("time_limit", float(time_limit_s))
    h.setOptionValue("threads", 1)
    h.setOptionValue("random_seed", 0)
    inf = highspy.kHighsInf
    model = highspy.HighsLp()
    model.num_col_, model.num_row_ = A.shape[1], A.shape[0]
    model.col_cost_ = lp["c"]
    model.col_lower_ = lp["l"]
    model.col_upper_ = lp["u"]
    model.row_lower_ = np.where(np.isfinite(lp["lo"]), lp["lo"], -inf)
    model.row_upper_ = np.where(np.isfinite(lp["hi"]), lp["hi"], inf)
    model.offset_ = lp["offset"]
    model.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    model.a_matrix_.start_ = A.indptr
    model.a_matrix_.index_ = A.indices
    model.a_matrix_.value_ = A.data
    h.passModel(model)
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    lp_value = float(h.getInfo().objective_function_value)
    dual = np.asarray(h.getSolution().row_dual, dtype=np.float64)
    lag = safe_lagrangian(lp, dual) if dual.size == A.shape[0] else -np.inf
    out = Bound(max(lag, triv), lp_value, lag, triv, status, time.perf_counter() - t0)
    return out if details else out.value


__all__ = ["Bound", "lp_bound", "relaxation", "safe_lagrangian"]
