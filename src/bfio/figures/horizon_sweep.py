"""Effect of the lookahead horizon H on the four metrics (paper Fig. ``Hnum``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.figures.style import figure, line_style, scale_for

#: Metric -> (axis label, SI unit).
METRIC_AXES = {"avg_imbalance": ("Avg imbalance", "tokens"), "throughput": ("Throughput", "tokens/s"),
               "tpot": ("TPOT", "s/token"), "energy_j": ("Energy", "J")}
BASELINE_LABELS = {"fcfs": "FCFS", "jsq_tokens": "JSQ"}


def _err(sub, m, factor):
    mean = sub[f"{m}_mean"].to_numpy(dtype=float) / factor
    lo = sub[f"{m}_ci_lo"].to_numpy(dtype=float) / factor
    hi = sub[f"{m}_ci_hi"].to_numpy(dtype=float) / factor
    yerr = np.vstack([mean - lo, hi - mean])
    return mean, np.where(np.isfinite(yerr), yerr, 0.0)


def plot_horizon_sweep(summary: pd.DataFrame, title: str = ""):
    """Four panels (imbalance, throughput, TPOT, energy) against H for the
    ``bfio_h*`` rows of an experiment summary (:func:`bfio.tables.summarize`):
    mean over seeds with 95% CI bars and the reference-seed value; baselines as
    horizontal reference lines."""
    bf = summary[summary["row"].str.startswith("bfio_h")].copy()
    bf["H"] = bf["row"].str[6:].astype(int)
    bf = bf.sort_values("H")
    ref_seed = int(summary["ref_seed"].iloc[0]) if "ref_seed" in summary else None
    fig, axes = figure(2, 2, width=6.8, height=4.8)
    for ax, (m, (label, unit)) in zip(axes.flat, METRIC_AXES.items()):
        vals = np.concatenate([bf[m].to_numpy(dtype=float), summary[m].to_numpy(dtype=float)])
        factor, u = scale_for(vals, unit) if unit in ("tokens", "J") else (1.0, unit)
        mean, yerr = _err(bf, m, factor)
        if bf.empty:
            ax.text(0.5, 0.5, "no BF-IO rows in this experiment", transform=ax.transAxes, ha="center")
        else:
            ax.errorbar(bf["H"], mean, yerr=yerr, capsize=2,
                        label=f"BF-IO mean, 95% CI (n={int(bf['n_seeds'].max())})", **line_style(0))
            ax.plot(bf["H"], bf[m] / factor, label=f"BF-IO seed {ref_seed}", linestyle="none", marker="x",
                    color="0.45", markersize=5)
        for j, row in enumerate(r for r in summary["row"] if not r.startswith("bfio_h")):
            val = float(summary.loc[summary["row"] == row, m].iloc[0]) / factor
            st = line_style(j + 1, markers=False)
            ax.axhline(val, color=st["color"], linestyle=st["linestyle"], linewidth=1.0,
                       label=f"{BASELINE_LABELS.get(row, row)} (seed {ref_seed})")
        ax.set_xlabel("lookahead horizon H (steps)")
        ax.set_ylabel(f"{label} ({u})")
    axes[0, 0].legend(fontsize=7, loc="best")
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


__all__ = ["plot_horizon_sweep", "METRIC_AXES"]
