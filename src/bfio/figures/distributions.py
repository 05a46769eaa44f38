"""Prefill and decode length distributions of a trace (paper Figs.
``distribution1`` (LongBench) and ``burstd`` (BurstGPT))."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.figures.style import COLOURS, HATCHES, OTHERS, figure, setting_title


def log_bins(x, n: int = 40) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    lo, hi = max(1.0, float(x.min())), float(x.max())
    if hi <= lo:
        hi = lo + 1.0
    return np.logspace(np.log10(lo), np.log10(hi * 1.0001), n + 1)


def plot_distributions(frame: pd.DataFrame, trace: str, bins: int = 40):
    """Two panels: histograms of ``prefill_tokens`` and ``decode_tokens``
    (log-spaced bins, log x axis) with mean and median marked."""
    fig, axes = figure(1, 2, width=6.5, height=2.6)
    for ax, col, name, hatch in zip(axes[0], ("prefill_tokens", "decode_tokens"),
                                    ("Prefill (prompt) length", "Decode (output) length"), HATCHES[:2]):
        x = frame[col].to_numpy(dtype=float)
        ax.hist(x, bins=log_bins(x, bins), color=OTHERS, edgecolor="0.2", linewidth=0.4, hatch=hatch)
        ax.set_xscale("log")
        mean, med = float(np.mean(x)), float(np.median(x))
        ax.axvline(mean, color=COLOURS["blue"], linestyle="-", linewidth=1.2, label=f"mean {mean:,.0f}")
        ax.axvline(med, color=COLOURS["vermillion"], linestyle="--", linewidth=1.2, label=f"median {med:,.0f}")
        ax.set_xlabel(f"{name} (tokens, log scale)")
        ax.set_ylabel("requests (count)")
        ax.legend(loc="upper right")
        ax.set_title(f"{name}")
    fig.suptitle(f"Request lengths: {setting_title(trace, requests=len(frame))}", fontsize=9)
    fig.tight_layout()
    return fig


__all__ = ["plot_distributions", "log_bins"]
