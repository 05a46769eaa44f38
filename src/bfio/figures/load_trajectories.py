"""Per-worker load trajectories of a sample of workers under several policies
(paper Figs. ``load_heavy`` and ``load_light``)."""

from __future__ import annotations

import math

import numpy as np

from bfio.figures.style import OTHERS, figure, row_or_label, scale_for, setting_title


def sample_workers(workers: int, k: int, seed: int = 0) -> np.ndarray:
    """``k`` distinct workers drawn at random (sorted), the same for every panel."""
    k = min(k, workers)
    return np.sort(np.random.default_rng(seed).choice(workers, size=k, replace=False))


def plot_load_trajectories(panels, sample: int = 16, seed: int = 0, title: str = "", setting: dict | None = None):
    """``panels``: list of ``(row, loads, t_start)`` with ``row`` a row key
    (or a label), ``loads`` the ``(steps, G)`` gating loads and ``t_start`` the
    clock (s) at which each step starts. Draws ``sample`` randomly chosen
    workers (same ones in every panel) in the policy's colour on a shared y
    axis, over the grey min-max band of all workers; ``setting`` (trace, G, N,
    B, seed) is named in the title."""
    n = len(panels)
    ncols = 2 if n > 1 else 1
    nrows = math.ceil(n / ncols)
    fig, axes = figure(nrows, ncols, width=7.0, height=2.4 * nrows, sharey=True)
    G = panels[0][1].shape[1]
    chosen = sample_workers(G, sample, seed)
    top = max(float(np.max(p[1])) if p[1].size else 0.0 for p in panels)
    factor, unit = scale_for([top], "tokens")
    for i, ax in enumerate(axes.flat):
        if i >= n:
            ax.set_visible(False)
            continue
        label, st = row_or_label(panels[i][0])
        colour = st["color"]
        loads, t = np.asarray(panels[i][1], dtype=float), panels[i][2]
        for j, g in enumerate(chosen):  # one series: the sampled workers, in the policy's colour
            ax.plot(t, loads[:, g] / factor, color=colour, linewidth=0.6, alpha=0.55,
                    label=f"{len(chosen)} sampled workers (one line each)" if j == 0 else "_worker")
        if loads.size:
            ax.fill_between(t, loads.min(axis=1) / factor, loads.max(axis=1) / factor, color=OTHERS, alpha=0.5,
                            linewidth=0, zorder=0, label=f"min-max over all {G} workers")
        ax.set_title(label)
        ax.set_xlabel("time (s)")
        ax.set_ylabel(f"load ({unit})")
    # one legend for the figure, below the panels (inside a panel it hides curves); the
    # title above (tight_layout makes room for it)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    where = setting_title(**(setting or {}))
    heading = "\n".join(t for t in (title, where) if t)
    if heading:
        fig.suptitle(f"{heading}\nper-worker load, {len(chosen)} of {G} workers sampled", fontsize=9)
    bottom = 0.0
    if handles:  # the band first: it is what every panel shares
        fig.legend(handles[::-1], labels[::-1], loc="lower center", fontsize=7, ncol=len(labels))
        bottom = 0.3 / fig.get_figheight()
    fig.tight_layout(rect=(0, bottom, 1, 1))
    return fig


__all__ = ["plot_load_trajectories", "sample_workers"]
