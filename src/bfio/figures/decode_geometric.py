"""Decode lengths against a fitted geometric distribution (the paper's Fig. 5
claim that output lengths are roughly geometric).

The geometric law on ``{1, 2, ...}`` with success probability ``p`` has
``P(o = k) = (1 - p)^(k-1) p``; its maximum-likelihood estimate is
``p = 1 / mean(o)``. Goodness of fit is reported as the Kolmogorov-Smirnov
distance ``max_k |F_emp(k) - F_geo(k)|`` and the total-variation distance
``(1/2) sum_k |f_emp(k) - f_geo(k)|`` (geometric mass beyond the largest
observed length included).
"""

from __future__ import annotations

import math

from matplotlib.ticker import NullFormatter
import numpy as np
import pandas as pd

from bfio.figures.style import COLOURS, OTHERS, figure, trace_label


def fit_geometric(decode) -> dict:
    """MLE ``p`` and goodness of fit of a geometric law on ``{1, 2, ...}``."""
    o = np.asarray(decode, dtype=np.int64)
    if o.size == 0 or o.min() < 1:
        raise ValueError("decode lengths must be a non-empty array of integers >= 1")
    mean = float(o.mean())
    p = 1.0 / mean
    kmax = int(o.max())
    k = np.arange(1, kmax + 1)
    counts = np.bincount(o, minlength=kmax + 1)[1:]
    f_emp = counts / o.size
    f_geo = (1.0 - p) ** (k - 1) * p
    F_emp = np.cumsum(f_emp)
    F_geo = 1.0 - (1.0 - p) ** k
    ks = float(np.max(np.abs(F_emp - F_geo)))
    tail = float((1.0 - p) ** kmax)  # geometric mass beyond kmax (empirical mass there is 0)
    tv = float(0.5 * (np.sum(np.abs(f_emp - f_geo)) + tail))
    loglik = float(np.sum(np.log(f_geo[o - 1])))
    return {"n": int(o.size), "mean": mean, "p": p, "ks": ks, "tv": tv, "loglik": loglik,
            "median": float(np.median(o)), "geo_median": float(math.ceil(-math.log(2) / math.log1p(-p)))
            if p < 1 else 1.0}


def fit_table(decodes: dict) -> pd.DataFrame:
    """One row per trace: ``trace``, ``n``, ``mean``, ``p``, ``ks``, ``tv``, ..."""
    return pd.DataFrame([{"trace": name, **fit_geometric(o)} for name, o in decodes.items()])


def plot_decode_geometric(decodes: dict, fits: pd.DataFrame | None = None, ncols: int = 3, bins: int = 40):
    """One panel per trace: the decode-length histogram (density per token, log
    y) and the fitted geometric pmf, with ``p`` and the KS distance in the legend."""
    fits = fits if fits is not None else fit_table(decodes)
    fits = fits.set_index("trace")
    names = list(decodes)
    nrows = max(1, math.ceil(len(names) / ncols))
    fig, axes = figure(nrows, ncols, width=9.0, height=2.9 * nrows)
    for i, ax in enumerate(axes.flat):
        if i >= len(names):
            ax.set_visible(False)
            continue
        name = names[i]
        o = np.asarray(decodes[name], dtype=float)
        top = float(np.percentile(o, 99.5))
        edges = np.linspace(0.5, max(top, 2.0) + 0.5, bins + 1)
        counts, _ = np.histogram(o, bins=edges)
        dens = counts / o.size / (edges[1] - edges[0])
        ax.stairs(dens, edges, fill=True, color=OTHERS, edgecolor="0.3", linewidth=0.4,
                  label="trace (probability per token)")
        p = float(fits.loc[name, "p"])
        k = np.arange(1, int(edges[-1]) + 1)
        ax.plot(k, (1 - p) ** (k - 1) * p, color=COLOURS["vermillion"], linestyle="--", linewidth=1.2,
                label="geometric, MLE p = 1/mean")
        ax.set_yscale("log")
        ax.yaxis.set_minor_formatter(NullFormatter())  # minor labels (3x10^-4, 4x10^-4) collide
        positive = dens[dens > 0]
        if positive.size:
            ax.set_ylim(positive.min() / 3, max(positive.max(), p) * 3)
        ax.set_xlim(0, edges[-1])
        ax.set_title(f"{trace_label(name)} (n={o.size:,}, mean {o.mean():.0f})\n"
                     f"p={p:.3g}, KS={fits.loc[name, 'ks']:.3f}, TV={fits.loc[name, 'tv']:.3f}")
        ax.set_xlabel("decode length (tokens)")
        ax.set_ylabel("probability (1/token, log scale)")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, bbox_to_anchor=(0.5, -0.02))
    fig.suptitle(f"Decode lengths of {len(names)} traces against the geometric law (the paper's Fig. 5 claim)",
                 fontsize=9)
    fig.tight_layout(rect=(0, 0.04, 1, 1), w_pad=1.5, h_pad=1.2)
    return fig


def caption_text(template: str, fits: pd.DataFrame) -> str:
    """The report caption: ``template`` followed by an RST table of the fits."""
    rows = ["   * - trace\n     - n\n     - mean decode (tokens)\n     - fitted p (MLE)\n     - KS distance\n"
            "     - TV distance"]
    for r in fits.itertuples():
        rows.append(f"   * - {r.trace}\n     - {r.n:,}\n     - {r.mean:.1f}\n     - {r.p:.4g}\n"
                    f"     - {r.ks:.3f}\n     - {r.tv:.3f}")
    table = ".. list-table:: Geometric fit per trace\n   :header-rows: 1\n\n" + "\n".join(rows) + "\n"
    return template.rstrip() + "\n\n" + table


__all__ = ["fit_geometric", "fit_table", "plot_decode_geometric", "caption_text"]
