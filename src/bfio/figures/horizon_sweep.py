"""Effect of the lookahead horizon H on the four metrics (paper Fig. ``Hnum``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.figures.style import (SERIES, figure, heff_text, interval, interval_note, plain_log_ticks, router,
                                scale_for, setting_of)
from bfio.lookahead.run_keys import paper_row_spec, row_key

#: Metric -> (axis label, SI unit).
METRIC_AXES = {"avg_imbalance": ("Avg imbalance", "tokens"), "throughput": ("Throughput", "tokens/s"),
               "tpot": ("TPOT", "s/token"), "energy_j": ("Energy", "J")}
#: A panel whose positive values span more than this factor gets a log axis.
LOG_SPAN = 10


def _objectives(summary: pd.DataFrame) -> pd.Series:
    """The BF-IO objective of each row (``None``: not a BF-IO row): the stored
    ``objective`` column when the frame has one. The summary tables
    (:func:`bfio.runs.tables.summarize`, ``results/tables/<experiment>_summary.csv``)
    store no such column (adding one would change those files), so there it is
    the declared row's (:func:`bfio.lookahead.run_keys.paper_row_spec`: a lookup of the
    BF-IO rows the experiments declare, the key is not parsed); ``H`` is the
    stored ``horizon``."""
    if "objective" in summary:
        return summary["objective"].where(summary["objective"].notna(), None)
    return summary["row"].map(lambda r: spec.objective if (spec := paper_row_spec(r)) else None)


def _bfio_rows(summary: pd.DataFrame, objective: pd.Series) -> pd.DataFrame:
    """BF-IO rows with their ``H`` (the stored ``horizon``) and ``objective`` (:func:`_objectives`).
    ``H = 0`` is the same program under both objectives (a single offset, and
    every new request lives at least one step), so the default's ``H = 0`` row
    also starts the paper-literal curve when that curve has none of its own."""
    bf = summary[objective.notna()].copy()
    bf["H"] = pd.to_numeric(bf["horizon"]).astype(int)
    bf["objective"] = objective[objective.notna()]
    lit = bf[bf["objective"] == "paper-literal"]
    if len(lit) and not (lit["H"] == 0).any():
        h0 = bf[(bf["objective"] == "default") & (bf["H"] == 0)].assign(objective="paper-literal")
        bf = pd.concat([bf, h0])
    return bf.sort_values(["objective", "H"], kind="mergesort")


def plot_horizon_sweep(summary: pd.DataFrame, title: str = "BF-IO against the lookahead window H"):
    """Four panels (imbalance, throughput, TPOT, energy) against H for the BF-IO
    rows of an experiment summary (:func:`bfio.runs.tables.summarize`), one curve per
    objective (the default and ``paper-literal``, side by side): mean over seeds
    (bars: :func:`bfio.figures.style.interval`) and the reference-seed value; baselines as horizontal
    reference lines. A panel whose values span more than a factor :data:`LOG_SPAN` (the
    baselines' imbalance far above BF-IO's) has a log axis, so the BF-IO curves
    stay readable. The default objective's effective window ``H_eff`` (column
    ``effective_horizon``: the fast solver's cut-off,
    :func:`bfio.lookahead.discount.effective_horizon`) is marked where some H
    goes beyond it: rows past it solve the same program (worded by
    :func:`bfio.figures.style.heff_text`, as in every figure). The title names
    the setting (trace, G, N, B, seeds)."""
    objective = _objectives(summary)
    bf = _bfio_rows(summary, objective)
    baselines = list(summary["row"][objective.isna()])
    objectives = [o for o in ("default", "paper-literal") if (bf["objective"] == o).any()]
    ref_seed = int(summary["ref_seed"].iloc[0]) if "ref_seed" in summary else None
    h_eff = None
    if "effective_horizon" in bf:
        d = bf[(bf["objective"] == "default") & bf["effective_horizon"].notna()]
        if len(d) and (d["H"] > d["effective_horizon"]).any():
            h_eff = int(d["effective_horizon"].max())
    fig, axes = figure(2, 2, width=6.8, height=5.9)
    kinds = []
    h_eff_style = SERIES["reference"]["h_eff"].style(marker=False)
    for ax, (m, (label, unit)) in zip(axes.flat, METRIC_AXES.items()):
        vals = np.concatenate([bf[m].to_numpy(dtype=float), summary[m].to_numpy(dtype=float)])
        factor, u = scale_for(vals, unit) if unit in ("tokens", "J") else (1.0, unit)
        if bf.empty:
            ax.text(0.5, 0.5, "no BF-IO rows in this experiment", transform=ax.transAxes, ha="center")
        for k, obj in enumerate(objectives):
            sub = bf[bf["objective"] == obj]
            mean, yerr, kind = interval(sub, m, factor)
            kinds.append(kind)
            st = router(row_key("bfio", 1, obj)).style()
            st["label"] = "BF-IO: mean" if obj == "default" else "BF-IO, paper-literal: mean"
            ax.errorbar(sub["H"], mean, yerr=yerr, capsize=2, **st)
            seed_style = SERIES["reference"]["seed"].style(line=False)
            seed_style["label"] = seed_style["label"].format(N=ref_seed) if k == 0 else "_seed"
            ax.plot(sub["H"], sub[m] / factor, markersize=4, **seed_style)
        for row in baselines:
            val = float(summary.loc[summary["row"] == row, m].iloc[0]) / factor
            st = router(row).style(marker=False)
            st["label"] = f"{st['label']} (seed {ref_seed})"
            ax.axhline(val, linewidth=1.0, **st)
        finite = vals[np.isfinite(vals) & (vals > 0)]
        if finite.size and finite.max() / finite.min() > LOG_SPAN:
            ax.set_yscale("log")
            plain_log_ticks(ax.yaxis)
        if h_eff is not None:
            ax.axvline(h_eff, linewidth=1.2, **{**h_eff_style,
                                                "label": f"{heff_text(h_eff)}: larger H solve the same program"})
        ax.set_xlabel("lookahead horizon H (steps)")
        ax.set_ylabel(f"{label} ({u})")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=7, frameon=False)
    heading = "\n".join(t for t in (title, setting_of(summary.drop(columns="horizon", errors="ignore")),
                                    f"mean over seeds, {interval_note(kinds)}") if t)
    fig.suptitle(heading, fontsize=9)
    rows = -(-len(labels) // 3)
    fig.tight_layout(rect=(0, (0.1 + 0.16 * rows) / fig.get_figheight(), 1, 1))
    return fig


__all__ = ["plot_horizon_sweep", "METRIC_AXES"]
