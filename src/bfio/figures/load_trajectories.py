"""Per-worker load trajectories of a sample of workers under several policies
(paper Figs. ``load_heavy`` and ``load_light``)."""

from __future__ import annotations

import math

import numpy as np

from bfio.figures.style import figure, scale_for


def sample_workers(workers: int, k: int, seed: int = 0) -> np.ndarray:
    """``k`` distinct workers drawn at random (sorted), the same for every panel."""
    k = min(k, workers)
    return np.sort(np.random.default_rng(seed).choice(workers, size=k, replace=False))


def plot_load_trajectories(panels, sample: int = 16, seed: int = 0, title: str = ""):
    """``panels``: list of ``(label, loads, t_start)`` with ``loads`` the
    ``(steps, G)`` gating loads and ``t_start`` the clock (s) at which each step
    starts. Draws ``sample`` randomly chosen workers (same ones in every panel)
    in shades of gray on a shared y axis."""
    n = len(panels)
    ncols = 2 if n > 1 else 1
    nrows = math.ceil(n / ncols)
    fig, axes = figure(nrows, ncols, width=7.0, height=2.4 * nrows, sharey=True)
    G = panels[0][1].shape[1]
    chosen = sample_workers(G, sample, seed)
    top = max(float(np.max(p[1])) if p[1].size else 0.0 for p in panels)
    factor, unit = scale_for([top], "tokens")
    shades = np.linspace(0.0, 0.65, len(chosen))
    for i, ax in enumerate(axes.flat):
        if i >= n:
            ax.set_visible(False)
            continue
        label, loads, t = panels[i]
        loads = np.asarray(loads, dtype=float)
        for j, g in enumerate(chosen):
            ax.plot(t, loads[:, g] / factor, color=str(shades[j]), linewidth=0.7, alpha=0.9)
        if loads.size:
            ax.fill_between(t, loads.min(axis=1) / factor, loads.max(axis=1) / factor, color="0.85",
                            linewidth=0, zorder=0, label=f"min-max over all {G} workers")
        ax.set_title(label)
        ax.set_xlabel("time (s)")
        ax.set_ylabel(f"load ({unit})")
    # one legend for the figure, above the panels (inside a panel it hides curves)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    top = 1.0
    if title:
        fig.suptitle(f"{title}: {len(chosen)} sampled workers", fontsize=9, y=0.995)
        top -= 0.3 / fig.get_figheight()
    if handles:
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, top), fontsize=7, ncol=len(labels))
        top -= 0.25 / fig.get_figheight()
    fig.tight_layout(rect=(0, 0, 1, top))
    return fig


__all__ = ["plot_load_trajectories", "sample_workers"]
