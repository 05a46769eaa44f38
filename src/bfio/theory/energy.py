"""Theorem 4 (energy saving from imbalance reduction), Remark 2 and Corollary 1.

Every energy number comes from :mod:`bfio.ground.power`:
``E = kappa sum_k L_max(k) sum_g P(u_g(k))`` (Eq. (E-discrete)) via
:func:`bfio.ground.power.energy_decomposition`, the bound (Eq. (energy-saving-frac))
via :func:`bfio.ground.power.energy_saving_bound`, the limit (Eq. (energy-limit)) via
:func:`bfio.ground.power.energy_limit`.

Checks:

- *Exact decomposition* (Eq. (E-exact), (concavity-bound)):
  ``E = kappa P_max W + kappa P_idle ImbTot + X`` with the concavity term
  ``X = kappa (P_max - P_idle) sum_{k,g} L_max(k) (u^gamma - u)`` computed
  *independently* of ``E``, and ``0 <= X <= kappa D_gamma ImbTot``, all to a
  relative tolerance ``rtol`` of ``E``.
- *Saving vs bound*: with ``W`` identical for both policies (checked),
  ``alpha = ImbTot(pi_0)/ImbTot(pi_1)`` (ratio of *total* imbalance) and
  ``eta_sum = ImbTot(pi_0)/W``, the measured saving ``(E_0 - E_1)/E_0`` must
  be at least the bound. (The proof gives this deterministically when the bound
  is non-negative.) The paper's IIR -- a ratio of per-step averages over runs
  of possibly different lengths -- is reported beside it as ``alpha_paper``
  with its own bound, which is not guaranteed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.ground.constants import PaperConstants
from bfio.ground.power import energy_decomposition, energy_limit, energy_saving_bound, power

DEFAULT_POWER = {"name": "A100", "p_idle": 100.0, "p_max": 400.0, "gamma": 0.7}


def c_gamma(p_idle: float, p_max: float, gamma: float) -> float:
    """``C_gamma = (1-gamma) P_max + gamma P_idle`` (Eq. (C-D-def))."""
    return (1.0 - gamma) * p_max + gamma * p_idle


def d_gamma(p_idle: float, p_max: float, gamma: float) -> float:
    """``D_gamma = (1-gamma)(P_max - P_idle)`` (Eq. (C-D-def))."""
    return (1.0 - gamma) * (p_max - p_idle)


def decomposition(loads: np.ndarray, kappa: float, p_idle: float, p_max: float, gamma: float) -> dict:
    """Eq. (E-exact) for one run: ``loads`` is ``(K, G)`` gating loads of every step.

    Returns :func:`bfio.ground.power.energy_decomposition`'s fields plus the directly
    computed concavity term ``correction_direct`` and ``residual = E - (kappa
    P_max W + kappa P_idle ImbTot + correction_direct)``.
    """
    d = energy_decomposition(loads, kappa, p_idle, p_max, gamma)
    L = np.asarray(loads, dtype=float)
    lmax = L.max(axis=1)
    pos = lmax > 0
    u = L[pos] / lmax[pos, None]
    # u^gamma - u from the power model itself: (P(u) - P_idle)/(P_max - P_idle) = u^gamma for u > 0
    ug = (power(u, p_idle, p_max, gamma) - p_idle) / (p_max - p_idle)
    x = kappa * (p_max - p_idle) * float(np.sum(lmax[pos, None] * (ug - u)))
    d["correction_direct"] = x
    d["residual"] = d["energy"] - (kappa * p_max * d["work"] + kappa * p_idle * d["imbalance_total"] + x)
    d["steps"] = int(L.shape[0])
    return d


def decomposition_pass(d: dict, rtol: float = 1e-9) -> bool:
    """Exact identity and ``0 <= X <= kappa D_gamma ImbTot`` to ``rtol * E``."""
    tol = rtol * max(abs(d["energy"]), 1e-300)
    x = d["correction_direct"]
    return bool(abs(d["residual"]) <= tol and abs(d["correction"] - x) <= tol
                and x >= -tol and x <= d["correction_bound"] + tol)


def saving_row(d0: dict, d1: dict, p_idle: float, p_max: float, gamma: float,
               alpha_paper: float | None = None, rtol: float = 1e-9) -> dict:
    """Measured saving of ``pi_1`` against ``pi_0`` and Theorem 4's bound."""
    e0, e1 = d0["energy"], d1["energy"]
    i0, i1 = d0["imbalance_total"], d1["imbalance_total"]
    w = d0["work"]
    alpha = i0 / i1 if i1 > 0 else np.inf
    eta = i0 / w if w > 0 else np.nan
    bound = float(energy_saving_bound(alpha, eta, p_idle, p_max, gamma)) if eta > 0 else 0.0
    saving = (e0 - e1) / e0
    row = {
        "energy_baseline": e0, "energy_policy": e1, "work": w, "work_policy": d1["work"],
        "work_equal": bool(abs(w - d1["work"]) <= rtol * max(w, 1.0)),
        "imbtot_baseline": i0, "imbtot_policy": i1, "alpha_total": alpha, "eta_sum": eta,
        "saving": saving, "bound": bound, "bound_informative": bool(bound > 0),
        "bound_limit_eta": float(p_idle / (p_max / eta + c_gamma(p_idle, p_max, gamma))) if eta > 0 else 0.0,
        "corollary_limit": energy_limit(p_idle, p_max, gamma),
    }
    # Theorem 4 assumes alpha > 1; a negative bound is vacuous (not guaranteed by the proof)
    row["applicable"] = bool(alpha > 1 and eta > 0 and bound >= 0)
    row["bound_le_saving"] = bool((bound <= saving + rtol) or not row["applicable"])
    if alpha_paper is not None:
        row["alpha_paper"] = alpha_paper
        row["bound_paper"] = float(energy_saving_bound(alpha_paper, eta, p_idle, p_max, gamma))
        row["bound_paper_le_saving"] = bool(row["bound_paper"] <= saving + rtol)
    return row


def compare_runs(loads0: np.ndarray, loads1: np.ndarray, kappa: float, power_sets, rtol: float = 1e-9):
    """Decomposition rows (one per policy and power set) and saving rows (one
    per power set) for two runs of the same instance."""
    dec, sav = [], []
    for ps in power_sets:
        args = (ps["p_idle"], ps["p_max"], ps["gamma"])
        d0 = decomposition(loads0, kappa, *args)
        d1 = decomposition(loads1, kappa, *args)
        for pol, d in (("fcfs", d0), ("bf", d1)):
            dec.append({"power": ps["name"], "policy": pol, **_dec_fields(d), "pass": decomposition_pass(d, rtol)})
        sav.append({"power": ps["name"], "p_idle": ps["p_idle"], "p_max": ps["p_max"], "gamma": ps["gamma"],
                    **saving_row(d0, d1, *args, rtol=rtol)})
    return dec, sav


def _dec_fields(d: dict) -> dict:
    return {"energy_j": d["energy"], "work": d["work"], "imbalance_total": d["imbalance_total"],
            "correction_j": d["correction"], "correction_direct_j": d["correction_direct"],
            "correction_bound_j": d["correction_bound"], "residual_j": d["residual"], "steps": d["steps"],
            "correction_frac_of_bound": d["correction_direct"] / d["correction_bound"] if d["correction_bound"] > 0 else 0.0}


def round_energy(fcfs_loads: np.ndarray, bf_loads: np.ndarray, slots: int, decode_steps: int,
                 kappa: float, power_sets, rtol: float = 1e-9):
    """Theorem 1's rounds as energy instances: ``o = decode_steps`` steps in
    lockstep, loads ``L_g + B k`` at step ``k`` (every request grows by one).

    Per sample (first power set): decomposition pass and ``bound <= saving``.
    Pooled over samples (every power set): the same rows as :func:`compare_runs`.
    """
    n, G = fcfs_loads.shape
    shift = slots * np.arange(decode_steps, dtype=float)[:, None]
    ps0 = power_sets[0]
    args0 = (ps0["p_idle"], ps0["p_max"], ps0["gamma"])
    fails_dec = 0
    fails_bound = 0
    not_applicable = 0
    for i in range(n):
        d0 = decomposition(fcfs_loads[i][None, :] + shift, kappa, *args0)
        d1 = decomposition(bf_loads[i][None, :] + shift, kappa, *args0)
        fails_dec += (not decomposition_pass(d0, rtol)) + (not decomposition_pass(d1, rtol))
        r = saving_row(d0, d1, *args0, rtol=rtol)
        fails_bound += not r["bound_le_saving"]
        not_applicable += not r["applicable"]
    stack0 = (fcfs_loads[:, None, :] + shift[None]).reshape(n * decode_steps, G)
    stack1 = (bf_loads[:, None, :] + shift[None]).reshape(n * decode_steps, G)
    dec, sav = compare_runs(stack0, stack1, kappa, power_sets, rtol)
    for r in dec:
        r["pass"] = bool(r["pass"] and fails_dec == 0)
        r["per_sample_failures"] = fails_dec
    for r in sav:
        r["per_sample_bound_failures"] = fails_bound
        r["per_sample_not_applicable"] = not_applicable
        r["bound_le_saving"] = bool(r["bound_le_saving"] and fails_bound == 0)
    return dec, sav


# ----------------------------------------------------------------------------- Corollary 1


def corollary_table(power_sets) -> pd.DataFrame:
    """Eq. (energy-limit) ``P_idle / ((1-gamma) P_max + gamma P_idle)`` per GPU."""
    rows = []
    for ps in power_sets:
        lim = energy_limit(ps["p_idle"], ps["p_max"], ps["gamma"])
        rows.append({"power": ps["name"], "p_idle": ps["p_idle"], "p_max": ps["p_max"], "gamma": ps["gamma"],
                     "C_gamma": c_gamma(ps["p_idle"], ps["p_max"], ps["gamma"]),
                     "D_gamma": d_gamma(ps["p_idle"], ps["p_max"], ps["gamma"]),
                     "limit": lim})
    return pd.DataFrame(rows)


def eta_needed(fraction: float, p_idle: float, p_max: float, gamma: float) -> float:
    """Smallest ``eta_sum`` for which the alpha -> infinity bound reaches
    ``fraction`` of the Corollary 1 limit: ``P_max/eta + C = C/fraction``."""
    c = c_gamma(p_idle, p_max, gamma)
    return p_max / (c / fraction - c)


# ----------------------------------------------------------------------------- paper runs


def _consts(frame: pd.DataFrame, col: str, default: float) -> np.ndarray:
    return frame[col].to_numpy(float) if col in frame.columns else np.full(len(frame), float(default))


def check_runs(frame: pd.DataFrame, constants: PaperConstants | None = None, rtol: float = 1e-9) -> pd.DataFrame:
    """Decomposition check of simulator run summaries (Theorem 4, Eq. (E-exact)).

    ``frame`` needs ``energy_sync_j``, ``energy_correction_j``,
    ``energy_correction_bound_j``, ``imbalance_total``, ``work_total`` (whole-run
    totals on the gating loads, :func:`bfio.ground.metrics.run_totals`) plus any
    identifying columns, which are kept. ``kappa = t_l`` and the power
    parameters come from columns ``token_latency_s``, ``p_idle_w``, ``p_max_w``,
    ``gamma`` if present, else from ``constants``. Returns the identifying
    columns, the decomposition terms, the recomputed bound and ``pass``.
    """
    c = constants or PaperConstants()
    need = ["energy_sync_j", "energy_correction_j", "energy_correction_bound_j", "imbalance_total", "work_total"]
    missing = [k for k in need if k not in frame.columns]
    if missing:
        raise KeyError(f"check_runs: missing columns {missing}")
    kappa = _consts(frame, "token_latency_s", c.token_latency_s)
    pi = _consts(frame, "p_idle_w", c.p_idle_w)
    pm = _consts(frame, "p_max_w", c.p_max_w)
    ga = _consts(frame, "gamma", c.gamma)
    E = frame["energy_sync_j"].to_numpy(float)
    W = frame["work_total"].to_numpy(float)
    I = frame["imbalance_total"].to_numpy(float)
    X = frame["energy_correction_j"].to_numpy(float)
    Xb = frame["energy_correction_bound_j"].to_numpy(float)
    base = kappa * pm * W
    idle = kappa * pi * I
    bound = kappa * (1.0 - ga) * (pm - pi) * I
    tol = rtol * np.maximum(np.abs(E), 1e-300)
    out = frame[[k for k in frame.columns if k not in need]].copy()
    out["energy_sync_j"] = E
    out["base_term_j"] = base
    out["idle_term_j"] = idle
    out["correction_j"] = X
    out["correction_bound_j"] = bound
    out["residual_j"] = E - (base + idle + X)
    out["correction_frac_of_bound"] = np.where(bound > 0, X / np.where(bound > 0, bound, 1), 0.0)
    out["pass"] = ((np.abs(out["residual_j"]) <= tol) & (X >= -tol) & (X <= bound + tol)
                   & (np.abs(Xb - bound) <= tol) & (I >= 0) & (W > 0))
    return out


def saving_vs_baseline(frame: pd.DataFrame, baseline: str = "fcfs", policy_col: str = "policy",
                       group_cols=None, constants: PaperConstants | None = None,
                       avg_imbalance_col: str = "avg_imbalance", rtol: float = 1e-9) -> pd.DataFrame:
    """Theorem 4 on simulator runs: every policy against ``baseline`` within each
    group (same instance). ``alpha`` is the ratio of total imbalance (the bound
    uses it); ``alpha_paper`` the ratio of ``avg_imbalance_col`` (the paper's
    per-step-average IIR, reported only)."""
    c = constants or PaperConstants()
    if group_cols is None:
        group_cols = [k for k in ("trace", "workload", "workers", "slots", "seed", "n_requests", "G", "B")
                      if k in frame.columns]
    rows = []
    groups = frame.groupby(group_cols, dropna=False) if group_cols else [((), frame)]
    for key, grp in groups:
        base = grp[grp[policy_col] == baseline]
        if base.empty:
            continue
        b = base.iloc[0]
        d0 = {"energy": b["energy_sync_j"], "imbalance_total": b["imbalance_total"], "work": b["work_total"]}
        for _, r in grp.iterrows():
            if r[policy_col] == baseline:
                continue
            d1 = {"energy": r["energy_sync_j"], "imbalance_total": r["imbalance_total"], "work": r["work_total"]}
            ap = None
            if avg_imbalance_col in grp.columns and r[avg_imbalance_col] > 0:
                ap = float(b[avg_imbalance_col] / r[avg_imbalance_col])
            row = dict(zip(group_cols, key if isinstance(key, tuple) else (key,)))
            row["baseline"] = baseline
            row["policy"] = r[policy_col]
            row.update(saving_row(d0, d1, c.p_idle_w, c.p_max_w, c.gamma, alpha_paper=ap, rtol=rtol))
            row["pass"] = bool(row["bound_le_saving"] and row["work_equal"])
            rows.append(row)
    return pd.DataFrame(rows)
