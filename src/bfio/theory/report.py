"""Markdown summary of the theory checks (one row per checked statement)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def _fmt(x, nd=3):
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    try:
        xf = float(x)
    except (TypeError, ValueError):
        return str(x)
    if not np.isfinite(xf):
        return str(xf)
    if xf != 0 and (abs(xf) >= 1e4 or abs(xf) < 1e-3):
        return f"{xf:.{nd}g}"
    return f"{xf:.{nd}g}" if abs(xf) >= 100 else f"{xf:.{nd}f}"


def to_markdown(df: pd.DataFrame) -> str:
    """A GitHub table without extra dependencies."""
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, r in df.iterrows():
        lines.append("| " + " | ".join(_fmt(r[c]).replace("|", "\\|") for c in cols) + " |")
    return "\n".join(lines)


def _row(statement, check, value, passed, n=None):
    return {"statement": statement, "check": check, "result": value,
            "cells": "" if n is None else n, "pass": "PASS" if passed else "FAIL"}


def summary_rows(t1: dict, t2: dict, t3: dict, energy_dec: pd.DataFrame, energy_sav: pd.DataFrame,
                 corollary: pd.DataFrame) -> pd.DataFrame:
    rows = []
    c1 = t1["cells"]
    rows.append(_row("Lemma 1", "BF-IO max-min load <= s_max on every sample (sorted rounds)",
                     f"max gap {c1['lemma1_max_gap'].max():.0f} vs s_max {c1['s_max'].iloc[0]}",
                     c1["lemma1_pass"].all(), len(c1)))
    rows.append(_row("Thm 1, Eq. (BF-upper)", "Imb(BF) <= (G-1) s_max on every sample",
                     f"max Imb(BF)/((G-1)s_max) = {(c1['imb_bf'] / c1['bf_upper_bound']).max():.3g} (mean)",
                     c1["bf_upper_pass"].all(), len(c1)))
    rows.append(_row("Thm 1, Eq. (FCFS-lb)", "E[Imb(FCFS)] >= c2 G sigma_s sqrt(B log G), c2 = 0.0671",
                     f"E[Imb]/(G sigma sqrt(B log G)) in [{c1['fcfs_const'].min():.2f}, {c1['fcfs_const'].max():.2f}]",
                     c1["fcfs_lb_pass"].all(), len(c1)))
    rows.append(_row("Thm 1, Eq. (IR-homog-lb)", "IIR >= c2 * rate (explicit proof constant)",
                     f"IIR/rate in [{c1['c_cell'].min():.3g}, {c1['c_cell'].max():.3g}]",
                     c1["iir_c2_pass"].all(), len(c1)))
    rows += _fit_rows(t1["fits"], "Thm 1", "dist")
    for name, t, key in (("Thm 2", t2, "dist"), ("Thm 3", t3, "drift")):
        c = t["cells"]
        if name == "Thm 2":
            rows.append(_row("Thm 2 (a) snapshot mean", "mu_s + (1-p)/p within t-quantile x SE (Bonferroni)",
                             f"max |z| = {np.max(np.abs((c['snap_mean'] - c['snap_mean_theory']) / c['snap_mean_se'])):.2f}",
                             c["snap_mean_pass"].all(), len(c)))
            rows.append(_row("Thm 2 (a) snapshot variance", "sigma_s^2 + (1-p)/p^2 within t-quantile x SE",
                             f"max |z| = {np.max(np.abs((c['snap_var'] - c['snap_var_theory']) / c['snap_var_se'])):.2f}",
                             c["snap_var_pass"].all(), len(c)))
        else:
            rows.append(_row("Thm 3 snapshot mean/variance", "prompt + sum of last A drifts (exact for each delta)",
                             f"max |z| = {np.max(np.abs((c['snap_mean'] - c['snap_mean_theory']) / c['snap_mean_se'])):.2f} / "
                             f"{np.max(np.abs((c['snap_var'] - c['snap_var_theory']) / c['snap_var_se'])):.2f}",
                             (c["snap_mean_pass"] & c["snap_var_pass"]).all(), len(c)))
        rows.append(_row(f"{name} (c) BF-IO gap", "long-run avg max-min <= s_max/p (Lemma avg-gap)",
                         f"gap/(s_max/p) in [{c['gap_ratio'].min():.3f}, {c['gap_ratio'].max():.3f}]",
                         c["gap_pass"].all(), len(c)))
        gt = t["gap_trends"]
        if "exp_G" in gt:
            rows.append(_row(f"{name} (c) gap vs B, G", "fitted exponents gap ~ B^b G^g (informational)",
                             f"b in [{gt['exp_B'].min():.2f}, {gt['exp_B'].max():.2f}], g in [{gt['exp_G'].min():.2f}, {gt['exp_G'].max():.2f}]",
                             True, len(gt)))
        rows.append(_row(f"{name} separation", "every BF-IO admission: gap <= s_max or heaviest/lightest separated",
                         f"{int(c['bf_uncertified'].sum())} uncertified of {int(c['bf_admissions'].sum())}",
                         c["bf_certified_pass"].all(), len(c)))
        rows.append(_row(f"{name} overloaded (Def. 1)", "min_l |R \\ R(l)| >= C_k on every step",
                         f"min margin {int(c['overload_margin_min'].min())}", c["overloaded_pass"].all(), len(c)))
        rows.append(_row(f"{name} FCFS lower bound", "E[Imb(FCFS)] >= c2 G sigma sqrt(B log G)",
                         f"ratio in [{c['fcfs_const'].min():.2f}, {c['fcfs_const'].max():.2f}]",
                         c["fcfs_lb_pass"].all(), len(c)))
        rows.append(_row(f"{name} IIR", "IIR >= c2 * rate (explicit proof constant)",
                         f"IIR/rate in [{c['c_cell'].min():.3g}, {c['c_cell'].max():.3g}]",
                         c["iir_c2_pass"].all(), len(c)))
        rows += _fit_rows(t["fits"], name, key)
    rows.append(_row("Thm 4 decomposition", "E = k Pmax W + k Pidle ImbTot + X, 0 <= X <= k D ImbTot (rtol 1e-9)",
                     f"max |residual|/E = {np.max(np.abs(energy_dec['residual_j']) / energy_dec['energy_j']):.2g}; "
                     f"X/bound in [{energy_dec['correction_frac_of_bound'].min():.3f}, {energy_dec['correction_frac_of_bound'].max():.3f}]",
                     energy_dec["pass"].all(), len(energy_dec)))
    app = energy_sav[energy_sav["applicable"]]
    rows.append(_row("Thm 4 saving bound", "bound(alpha = ImbTot ratio, eta_sum) <= measured saving",
                     f"saving - bound >= {np.min(app['saving'] - app['bound']):.3g}; max saving {app['saving'].max():.3f}",
                     energy_sav["bound_le_saving"].all(), len(energy_sav)))
    a100 = corollary[corollary["power"] == "A100"]
    if len(a100):
        lim = float(a100["limit"].iloc[0])
        rows.append(_row("Cor. 1 limit", "P_idle/((1-g)P_max + g P_idle), A100",
                         f"{100 * lim:.1f}% (max measured saving {100 * energy_sav[energy_sav['power'] == 'A100']['saving'].max():.1f}%)",
                         abs(lim - 100 / 190) < 1e-12))
    return pd.DataFrame(rows)


def _fit_rows(fits: pd.DataFrame, name: str, key: str):
    rows = []
    for _, f in fits.iterrows():
        if f.get("role") != "check":
            continue
        side = "FCFS side" in f["theorem"]
        what = "E[Imb(FCFS)] ~ c G sigma sqrt(B log G)" if side else "IIR ~ c * rate"
        rows.append(_row(f"{name} shape [{f[key]}]", what + " (slope >= 1 - tol, c_min > 0)",
                         f"c_fit {f['c_fit']:.3g}, R^2 {f['r2']:.2f}, slope {f['slope']:.2f}+-{f['slope_se']:.2f}, "
                         f"c in [{f['c_min']:.3g}, {f['c_max']:.3g}] ({'stable' if f['constant_stable'] else 'not stable'})",
                         f["shape_pass"], int(f["cells"])))
    return rows


def write_summary(path, rows: pd.DataFrame, timings: dict | None = None, header: str = "") -> None:
    text = ["# Monte Carlo checks of the Section 5 guarantees", ""]
    if header:
        text += [header, ""]
    text.append(to_markdown(rows))
    if timings:
        text += ["", "Wall times (s): " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items())]
    with open(path, "w") as fh:
        fh.write("\n".join(text) + "\n")
