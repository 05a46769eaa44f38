"""Steady-state estimates from a slot-model run (Appendix C.2, C.3): per-step
imbalance of both policies, IIR, BF-IO's gap, the per-slot snapshot moments,
each with a batch-means standard error over the window ``[burn_in, k_admit)``
(:class:`bfio.theory.slot_model.SlotRun`); :func:`ratio_se` and :func:`mean_se`
are the estimators the other checks share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from bfio.theory.slot_model import SlotRun


def _batches(x: np.ndarray, burn: int, k_admit: int, n_batches: int) -> np.ndarray:
    w = x[burn:k_admit]
    L = w.shape[0] // n_batches
    return w[: L * n_batches].reshape(n_batches, L, *w.shape[1:])


def ratio_se(num: np.ndarray, den: np.ndarray) -> tuple[float, float]:
    """Ratio of means ``mean(num)/mean(den)`` and its delta-method standard error
    from paired batch (or sample) values."""
    n = num.size
    a, b = float(np.mean(num)), float(np.mean(den))
    r = a / b
    if n < 2:
        return r, float("nan")
    va, vb = np.var(num, ddof=1), np.var(den, ddof=1)
    cab = np.cov(num, den, ddof=1)[0, 1]
    var = (va / b**2 + a**2 * vb / b**4 - 2 * a * cab / b**3) / n
    return r, float(np.sqrt(max(var, 0.0)))


def mean_se(x: np.ndarray) -> tuple[float, float]:
    x = np.asarray(x, dtype=float)
    if x.size < 2:
        return float(np.mean(x)), float("nan")
    return float(np.mean(x)), float(np.std(x, ddof=1) / np.sqrt(x.size))


def steady_state_estimates(run: SlotRun) -> dict:
    """Window estimates with batch-means standard errors: per-step imbalance of
    both policies, IIR, BF-IO gap, FCFS per-slot snapshot mean and variance."""
    G = run.G
    est = {}
    imb = {}
    gap = {}
    for pol, L in run.loads.items():
        lmax = L.max(axis=1)
        imb[pol] = G * lmax - L.sum(axis=1)
        gap[pol] = lmax - L.min(axis=1)
    bi = {pol: _batches(v, run.burn_in, run.k_admit, run.n_batches).mean(axis=1) for pol, v in imb.items()}
    bg = {pol: _batches(v, run.burn_in, run.k_admit, run.n_batches).mean(axis=1) for pol, v in gap.items()}
    for pol in ("fcfs", "bf"):
        est[f"imb_{pol}"], est[f"imb_{pol}_se"] = mean_se(bi[pol])
        est[f"gap_{pol}"], est[f"gap_{pol}_se"] = mean_se(bg[pol])
    est["iir"], est["iir_se"] = ratio_se(bi["fcfs"], bi["bf"])
    s1 = _batches(run.sum_y, run.burn_in, run.k_admit, run.n_batches).sum(axis=1)
    s2 = _batches(run.sum_y2, run.burn_in, run.k_admit, run.n_batches).sum(axis=1)
    n = _batches(run.active.astype(float), run.burn_in, run.k_admit, run.n_batches).sum(axis=1)
    m1 = s1 / n
    var = s2 / n - m1**2
    est["snap_mean"], est["snap_mean_se"] = mean_se(m1)
    est["snap_var"], est["snap_var_se"] = mean_se(var)
    w = slice(run.burn_in, run.k_admit)
    est["window_steps"] = run.k_admit - run.burn_in
    est["burn_in"] = run.burn_in
    est["steps_total"] = run.steps
    est["full_occupancy"] = bool(np.all(run.active[1:run.k_admit] == G * run.B))
    adm = run.certified[:run.k_admit]
    est["bf_admissions"] = int(np.sum(adm >= 0))
    est["bf_uncertified"] = int(np.sum(adm == 0))
    if run.certified_fcfs is not None:
        est["fcfs_uncertified"] = int(np.sum(run.certified_fcfs[:run.k_admit] == 0))
    est["bf_swaps_mean"] = float(np.mean(run.swaps[:run.k_admit]))
    est["overload_margin_min"] = int(run.margin[1:run.k_admit].min())
    est["same_active_sets"] = run.same_active
    est["gap_bf_max"] = float(gap["bf"][w].max())
    return est
