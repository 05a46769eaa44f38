"""Energy against the cluster size G for FCFS and BF-IO, with the energy
reduction in percent on a second axis (paper Fig. ``scalability_energy``)."""

from __future__ import annotations

import pandas as pd

from bfio.figures.style import (COLOURS, figure, interval, interval_note, router, scale_for, setting_title)


def plot_energy_vs_workers(energy: pd.DataFrame, title: str = "", metric: str = "energy_j",
                           setting: dict | None = None):
    """``energy``: :func:`bfio.runs.tables.energy_reduction` output (one row per G);
    ``setting``: the sweep's ``trace``, ``requests`` and ``slots`` (the table
    does not carry them), named in the title with the seeds."""
    energy = energy.sort_values("workers")
    fig, axes = figure(1, 1, width=6.0, height=3.3)
    ax = axes[0, 0]
    base, target = energy["baseline"].iloc[0], energy["target"].iloc[0]
    factor, unit = scale_for(energy[[f"{metric}_baseline_mean", f"{metric}_target_mean"]].to_numpy().ravel(), "J")
    handles = []
    for col, row in ((f"{metric}_baseline_mean", base), (f"{metric}_target_mean", target)):
        st = router(row).style()
        st["label"] = f"{st['label']}: energy (left axis, mean)"
        (h,) = ax.plot(energy["workers"], energy[col] / factor, **st)
        handles.append(h)
    ax.set_xlabel("workers G (GPUs)")
    ax.set_ylabel(f"energy ({unit})")
    ax.set_ylim(bottom=0)
    ax2 = ax.twinx()
    ax2.spines["right"].set_visible(True)
    ax2.grid(False)
    mean, yerr, kind = interval(energy, "reduction_pct", nonneg=False)  # a reduction can be negative
    h = ax2.errorbar(energy["workers"], mean, yerr=yerr, capsize=2, color=COLOURS["green"], marker="^",
                     linestyle=":", label=f"reduction of {router(target).label} vs {router(base).label} (right axis)")
    handles.append(h)
    ax2.axhline(0.0, color="0.5", linewidth=0.6)
    ax2.set_ylabel(f"energy reduction of {router(target).label} vs {router(base).label} (%)")
    fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=7, bbox_to_anchor=(0.5, -0.01))
    n = int(energy["n_seeds"].max())
    where = setting_title(**(setting or {}), seeds=n)
    ax.set_title((title + "\n" if title else "") + f"Energy against G: {where}\nreduction: {interval_note([kind])}",
                 fontsize=9)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


__all__ = ["plot_energy_vs_workers"]
