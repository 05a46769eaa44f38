"""Lower bounds on the optimum of Eq. (IO) at scale (issue 40): :func:`lp_bound`.

The exact backends' MILP (:mod:`bfio.solvers.model`) has ``n |T|`` binaries
(waiting requests times workers with a free slot): on captured BurstGPT calls
that is 200,000 at ``G = 256`` and 2.5-3.5 million at ``G = 1024``, and HiGHS
does not finish even its root LP within a minute. :func:`lp_bound` solves
instead a *relaxation* of Eq. (IO) that forgets which request joins which worker
and keeps, per worker ``t`` with a free slot and lifetime group ``q``
(:func:`~bfio.solvers.model.lifetime_groups`: ``P_j(h) = s_j m_q(h) + b_q(h)``),
how many requests it receives (``k_tq``) and their total prefill (``S_tq``):

    minimize   G sum_h w_h M_h - sum_j (v_j - c_j) y_j - sum_h w_h sum_g base_g(h)
    subject to M_h - sum_q (m_q(h) S_tq + b_q(h) k_tq) >= base_t(h)       t in T, all h
               sum_q (m_q(h) S_tq + b_q(h) k_tq) <= cap_t(h)              t in T, all h
               sum_t k_tq = sum_{j in q} y_j,  sum_t S_tq = sum_{j in q} s_j y_j     every q
               sum_q k_tq <= free_t,  sum_j y_j = U,  y_j in [f_j, 1]  (f_j = 1: forced)
               bot_q(i) + a_q(i+1) (k - i) <= S_tq <= top_q(i) + d_q(i+1) (k - i)   i < min(free_t, |q|)
               0 <= k_tq <= min(free_t, |q|),  E0(h) <= M_h <= max_{t in T} (base_t(h) + cap_t(h)) v E0(h)

with ``w_h = delta^h``, ``v_j = sum_h w_h P_j(h)`` (``terms.request_values``),
``E0(h) = max_g base_g(h)``, ``cap_t(h)`` the sum of the ``free_t`` largest
``P_j(h)``, ``d_q`` / ``a_q`` group ``q``'s sizes in decreasing / increasing order
and ``top_q`` / ``bot_q`` their prefix sums (the lines are the tangents of the
concave "``k`` largest" and convex "``k`` smallest" sums, so each holds at every
``k``), ``c_j = min_{t in T} c_jt`` the linear extra terms of ``J`` (none in
captured calls).

Why it is a lower bound. Take any feasible assignment of Eq. (IO), ``A`` its
admitted requests. Set ``y_j = [j in A]``, ``k_tq`` / ``S_tq`` the number / total
prefill of group-``q`` requests it sends to ``t`` and ``M_h = max_g Lhat_g(h)``.
Then worker ``t``'s load is ``base_t(h) + sum_q (m_q(h) S_tq + b_q(h) k_tq) <= M_h``;
what it adds is at most ``free_t`` profiles, so at most ``cap_t(h)``, and ``M_h``
is at most the largest ``base_t(h) + cap_t(h)`` or ``E0(h)``; the links, slots,
``|A| = U`` and forced requests hold by construction; ``S_tq`` is a sum of
``k_tq`` sizes of group ``q``, between its ``k_tq`` smallest and largest, so
within every tangent line. The point is feasible and its objective is
``sum_h w_h [G M_h - sum_g base_g(h) - sum_{j in A} P_j(h)]`` plus the extra
terms' costs (at least ``sum c_j``): ``J`` of the assignment, as
:mod:`bfio.solvers.objective` defines it. So the relaxation's optimum is at most
``J`` of every feasible assignment, the optimum of Eq. (IO) included. (It is
also at least :func:`~bfio.solvers.trivial_bound`, whose argument is the special
case ``M_h = E0(h)``, ``y`` the largest values.)

Rounding. HiGHS solves the LP in floating point, so its objective is not used
as such: :func:`safe_lagrangian` evaluates, at HiGHS's row duals, the Lagrangian
``min over the box, z in [lo, hi] of c x + dual (z - A x)``, which by weak
duality is at most the LP's optimum for *any* multipliers (every column has
finite bounds, so it is finite), and :func:`lp_bound` returns
``max(that, trivial_bound)``. A time limit that stops HiGHS early leaves a
valid (weaker) bound.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from bfio.ground.errors import ConfigError
from bfio.solvers import trivial_bound
from bfio.solvers.highs import quiet_highs
from bfio.solvers.model import lifetime_groups


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


#: HiGHS's LP algorithms :func:`lp_bound` may run (option ``lp_solver``): the interior point
#: method without crossover (default: the captured ``G = 1024`` calls' LPs, 3-4 million
#: nonzeros, finish in 30-50 s, where the dual simplex ran past 60 s on half of them and
#: left only :func:`~bfio.solvers.trivial_bound`), or the simplex.
LP_SOLVERS = ("ipm", "simplex")
#: The interior point's optimality tolerance: HiGHS's default 1e-8 takes 60 s and more on
#: a captured ``G = 1024`` call (0.8-1.6 s an iteration), 1e-6 41 s for a bound 0.014% below
#: the LP's optimum (1,251,138 against 1,251,310), 1e-4 26 s and 1% below. The read-back
#: (:func:`safe_lagrangian`) is a lower bound at any tolerance; HiGHS may then call the
#: status ``Unknown`` rather than ``Optimal``.
IPM_TOLERANCE = 1e-6


def check_lp_solver(value) -> str:
    if value not in LP_SOLVERS:
        raise ConfigError(f"lp_solver: expected {' | '.join(LP_SOLVERS)}, got {value!r}")
    return value


def lp_bound(inst, time_limit_s: float = 60.0, details: bool = False, lp_solver: str = "ipm"):
    """A lower bound on the optimum of Eq. (IO) for ``inst`` (:class:`~bfio.solvers.instance.Instance`):
    the aggregated relaxation of the module docstring, solved with HiGHS and read
    back through the Lagrangian at its duals (:func:`safe_lagrangian`, safe in
    floating point, so at HiGHS's duals whether or not it finished: the interior
    point's, without crossover, are as good). At least :func:`~bfio.solvers.trivial_bound`.
    ``lp_solver``: :data:`LP_SOLVERS`. ``details``: return a :class:`Bound`."""
    import highspy  # local: as in bfio.solvers.highs (a missing highspy is an error of the call)

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
    h.setOptionValue("solver", check_lp_solver(lp_solver))
    if lp_solver == "ipm":  # the safe read-back needs duals, not a vertex: no crossover
        h.setOptionValue("run_crossover", "off")
        h.setOptionValue("ipm_optimality_tolerance", IPM_TOLERANCE)
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


__all__ = ["Bound", "IPM_TOLERANCE", "LP_SOLVERS", "check_lp_solver", "lp_bound", "relaxation", "safe_lagrangian"]
