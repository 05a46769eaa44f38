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


def lagrangian_value(inst, a: np.ndarray, b: np.ndarray, sigma: float) -> float:
    """The Lagrangian value ``L(a, b, sigma)`` of the relaxation (module docstring),
    a lower bound on ``J`` of every feasible assignment of ``inst`` for any ``a``,
    ``b`` (clipped to ``>= 0``; ``b`` scaled so that ``sum_t b_th <= G w_h``) and
    ``sigma``. ``a``: ``(H1,)``; ``b``: ``(|T|, H1)`` over the workers with free slots."""
    G = inst.workers
    w = inst.weights.astype(np.float64)
    touched = np.flatnonzero(inst.free > 0)
    base = inst.base.astype(np.float64)
    E0 = base.max(axis=0)
    P = inst.profiles().astype(np.float64)
    v = P @ w
    c = _extra_costs(inst, touched)
    cap = _capacities(P, inst.free[touched])
    a = np.maximum(np.asarray(a, dtype=np.float64), 0.0)
    b = np.maximum(np.asarray(b, dtype=np.float64).reshape(touched.size, -1), 0.0)
    col = b.sum(axis=0)
    over = col > G * w
    if np.any(over):  # keep the M_h part bounded: sum_t b_th <= G w_h
        b[:, over] *= (G * w[over]) / col[over]
        b = np.minimum(b, G * w[None, :])  # guard against rounding in the scaling
        while np.any(b.sum(axis=0) > G * w):  # pragma: no cover - rounding only
            b *= 1.0 - 1e-12
    L = float((b * base[touched]).sum()) + sigma * inst.admissible
    L += float(E0 @ (G * w - b.sum(axis=0)))
    L += float((cap * np.minimum(0.0, b - a[None, :])).sum())
    r = P @ a - v + c - sigma
    lo = inst.forced().astype(np.float64)
    L += float(np.minimum(lo * r, r).sum())  # min over y in [lo, 1] of y r
    return L - float(w @ base.sum(axis=0))


def lp_bound(inst, time_limit_s: float = 60.0, details: bool = False):
    """A lower bound on the optimum of Eq. (IO) for ``inst`` (:class:`~bfio.solvers.instance.Instance`):
    the water-filling relaxation of the module docstring, solved with HiGHS and
    read back through the Lagrangian at its duals (safe in floating point). At
    least :func:`~bfio.solvers.trivial_bound`. ``details``: return a :class:`Bound`."""
    from bfio.solvers import trivial_bound
    from bfio.solvers.highs import quiet_highs
    import highspy

    t0 = time.perf_counter()
    triv = trivial_bound(inst)
    G, H1, n, U = inst.workers, inst.horizon + 1, inst.waiting, inst.admissible
    touched = np.flatnonzero(inst.free > 0)
    nT = touched.size
    if U == 0 or nT == 0:
        out = Bound(triv, triv, triv, triv, "trivial (nothing to place)", time.perf_counter() - t0)
        return out if details else out.value
    w = inst.weights.astype(np.float64)
    base = inst.base.astype(np.float64)
    E0 = base.max(axis=0)
    P = inst.profiles().astype(np.float64)
    v = P @ w
    c = _extra_costs(inst, touched)
    cap = _capacities(P, inst.free[touched])
    forced = inst.forced()
    const = -float(w @ base.sum(axis=0))
    # columns: y (n), u (nT * H1, worker-major), M (H1)
    iu, iM = n, n + nT * H1
    nv = iM + H1
    cost = np.concatenate([c - v, np.zeros(nT * H1), G * w])
    lb = np.concatenate([forced.astype(np.float64), np.zeros(nT * H1), E0])
    ub = np.concatenate([np.ones(n), cap.ravel(), np.full(H1, np.inf)])
    # rows: a_h (H1): sum_t u_th - sum_j P_jh y_j >= 0; b_th (nT * H1): M_h - u_th >= base_t(h); sigma: sum y = U
    jj, hh = np.nonzero(P)
    tt, th = np.divmod(np.arange(nT * H1), H1)
    rows = np.concatenate([hh, th, H1 + np.arange(nT * H1), H1 + np.arange(nT * H1), np.full(n, H1 + nT * H1)])
    cols = np.concatenate([jj, iu + np.arange(nT * H1), iu + np.arange(nT * H1), iM + th, np.arange(n)])
    vals = np.concatenate([-P[jj, hh], np.ones(nT * H1), -np.ones(nT * H1), np.ones(nT * H1), np.ones(n)])
    nr = H1 + nT * H1 + 1
    A = sp.csc_matrix((vals, (rows, cols)), shape=(nr, nv))
    row_lo = np.concatenate([np.zeros(H1), base[touched].ravel(), [float(U)]])
    row_hi = np.concatenate([np.full(H1, np.inf), np.full(nT * H1, np.inf), [float(U)]])

    h = quiet_highs()
    h.setOptionValue("time_limit", float(time_limit_s))
    h.setOptionValue("threads", 1)
    h.setOptionValue("random_seed", 0)
    inf = highspy.kHighsInf
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = nv, nr
    lp.col_cost_ = cost
    lp.col_lower_ = lb
    lp.col_upper_ = np.where(np.isinf(ub), inf, ub)
    lp.row_lower_ = row_lo
    lp.row_upper_ = np.where(np.isinf(row_hi), inf, row_hi)
    lp.offset_ = const
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr
    lp.a_matrix_.index_ = A.indices
    lp.a_matrix_.value_ = A.data
    h.passModel(lp)
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    lp_value = float(h.getInfo().objective_function_value)
    dual = np.asarray(h.getSolution().row_dual, dtype=np.float64)
    if dual.size == nr:
        lag = lagrangian_value(inst, dual[:H1], dual[H1:H1 + nT * H1].reshape(nT, H1), float(dual[-1]))
    else:  # no dual solution (time limit before a basis): the trivial bound stands
        lag = -np.inf
    out = Bound(max(lag, triv), lp_value, lag, triv, status, time.perf_counter() - t0)
    return out if details else out.value


__all__ = ["Bound", "lp_bound", "lagrangian_value"]
