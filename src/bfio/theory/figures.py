"""Figures of the theory checks (PDF and PNG, readable in grayscale: every
series has its own marker and line style as well as a gray level)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.ticker import LogLocator, NullFormatter
import numpy as np
import pandas as pd

from bfio.figures.style import plain_log_ticks
from bfio.figures.style import save as save_figure
from bfio.theory.checks import C2_PROOF
from bfio.student_t import t_quantile

MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
LINES = ["-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1))]


def _style(i: int, n: int):
    gray = str(0.05 + 0.6 * (i / max(n - 1, 1)))
    return {"color": gray, "marker": MARKERS[i % len(MARKERS)], "linestyle": LINES[i % len(LINES)]}


def save(fig, stem) -> list[str]:
    """``fig`` as ``<stem>.pdf`` and ``<stem>.png`` (:func:`bfio.figures.style.save`)."""
    out = [str(Path(stem).with_suffix(f".{ext}")) for ext in ("pdf", "png")]
    save_figure(fig, *out, dpi=150)
    return out


def loglog_slope(x, y) -> tuple[float, float, float, float]:
    """Least-squares ``log y = a + b log x``: ``(b, b_lo, b_hi, a)`` with the 95%
    Student-t interval of the exponent ``b`` (NaN bounds with fewer than 3 points)."""
    lx, ly = np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float))
    ok = np.isfinite(lx) & np.isfinite(ly)
    lx, ly = lx[ok], ly[ok]
    if lx.size < 2 or np.ptp(lx) == 0:
        return float("nan"), float("nan"), float("nan"), float("nan")
    b, a = np.polyfit(lx, ly, 1)
    if lx.size < 3:
        return float(b), float("nan"), float("nan"), float(a)
    resid = ly - (a + b * lx)
    se = float(np.sqrt(resid @ resid / (lx.size - 2) / np.sum((lx - lx.mean()) ** 2)))
    half = t_quantile(0.975, lx.size - 2) * se
    return float(b), float(b - half), float(b + half), float(a)


def _iir_panel(ax, cells: pd.DataFrame, key: str, fits: pd.DataFrame | None, xlabel: str):
    """IIR against the theorem's rate: the cells, each group's fitted power law
    with its exponent and 95% interval (the theorem's rate has exponent 1), the
    proof's constant ``c2 x rate`` and the slope-1 line ``c x rate`` fitted on
    all cells."""
    groups = list(cells.groupby(key))
    x = np.geomspace(cells["rate"].min(), cells["rate"].max(), 50)
    for i, (name, g) in enumerate(groups):
        st = _style(i, len(groups))
        ax.errorbar(g["rate"], g["iir"], yerr=g["iir_se"], fmt=st["marker"], color=st["color"],
                    mfc="none" if i % 2 else st["color"], ms=5, lw=0.8, capsize=2, label=str(name))
        b, lo, hi, a = loglog_slope(g["rate"], g["iir"])
        if np.isfinite(b):
            xs = np.geomspace(g["rate"].min(), g["rate"].max(), 20)
            ci = f" [{lo:.2f}, {hi:.2f}]" if np.isfinite(lo) else " (2 points: no interval)"
            ax.plot(xs, np.exp(a) * xs ** b, color=st["color"], linestyle="-", lw=0.9,
                    label=f"{name}: fit IIR ~ rate^b, b = {b:.2f}{ci} (theorem: b = 1)")
    ax.plot(x, C2_PROOF * x, color="black", linestyle=":", lw=1.2, label=f"c2 x rate (c2={C2_PROOF:.4f}, the proof's)")
    if fits is not None:
        allrow = fits[(fits[key] == "all") & (fits["y"] == "iir")]
        if len(allrow):
            c = float(allrow["c_fit"].iloc[0])
            ax.plot(x, c * x, color="black", linestyle="--", lw=1.0,
                    label=f"c x rate, slope 1 imposed (c={c:.3g} fitted on all cells)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("IIR = E[Imb(FCFS)] / E[Imb(BF-IO)] (ratio)")
    ax.grid(True, which="both", alpha=0.3)
    # below the panel, framed: it hides no cell and no grid line runs through it
    ax.legend(fontsize=6.5, frameon=True, framealpha=1.0, edgecolor="0.8", loc="upper center",
              bbox_to_anchor=(0.5, -0.2), ncol=1)


def thm1_iir(cells: pd.DataFrame, fits: pd.DataFrame, stem) -> list[str]:
    """Theorem 1: IIR against ``(sigma_s/s_max) sqrt(B log G) G/(G-1)``; Lemma 1 gaps."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 6.0))
    _iir_panel(axes[0], cells, "dist", fits, r"rate $(\sigma_s/s_{\max})\sqrt{B\log G}\,G/(G-1)$ (dimensionless)")
    axes[0].set_title("Theorem 1: IIR vs rate")
    ax = axes[1]
    groups = list(cells.groupby("dist"))
    for i, (name, g) in enumerate(groups):
        st = _style(i, len(groups))
        gg = g.groupby("G")["lemma1_max_gap"].max()
        ax.plot(gg.index, gg.values / g["s_max"].iloc[0], label=str(name), **st)
    ax.axhline(1.0, color="black", lw=1.2, linestyle=":", label="Lemma 1 bound (s_max)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("workers G (count)")
    ax.set_ylabel("max over samples and B of (max L - min L) / s_max")
    ax.set_title("Lemma 1 on every sample (BF-IO, sorted rounds)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, frameon=False)
    fig.tight_layout(w_pad=2.0)
    return save(fig, stem)


def slot_iir(cells: pd.DataFrame, fits: pd.DataFrame, key: str, theorem: str, stem) -> list[str]:
    """Theorem 2 / 3: IIR against the theorem's rate."""
    fig, ax = plt.subplots(figsize=(6, 6.2))
    if theorem == "Theorem 2":
        xl = r"rate $(p/s_{\max})\sqrt{\sigma_s^2+(1-p)/p^2}\,\frac{G}{G-1}\sqrt{B\log G}$ (dimensionless)"
    else:
        xl = r"rate $(p\,\sigma_s/s_{\max})\,\frac{G}{G-1}\sqrt{B\log G}$ (dimensionless)"
    _iir_panel(ax, cells, key, fits, xl)
    ax.set_title(f"{theorem}: IIR vs rate (steady state, H=0)")
    fig.tight_layout()
    return save(fig, stem)


def thm2_snapshot(cells: pd.DataFrame, stem) -> list[str]:
    """Theorem 2 (a): FCFS per-slot snapshot mean and variance, measured vs formula."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for ax, m, label in ((axes[0], "mean", "mean (tokens)"), (axes[1], "var", "variance (tokens$^2$)")):
        groups = list(cells.groupby("p"))
        for i, (p, g) in enumerate(groups):
            st = _style(i, len(groups))
            ax.errorbar(g[f"snap_{m}_theory"], g[f"snap_{m}"], yerr=g[f"snap_{m}_se"], fmt=st["marker"],
                        color=st["color"], ms=4, lw=0.8, capsize=2, label=f"p={p:g}")
        lo = min(cells[f"snap_{m}_theory"].min(), cells[f"snap_{m}"].min())
        hi = max(cells[f"snap_{m}_theory"].max(), cells[f"snap_{m}"].max())
        ax.plot([lo, hi], [lo, hi], color="black", lw=0.8, linestyle=":", label="y = x")
        if hi > 10 * lo:  # a log axis only where the values span a decade: plain ticks otherwise
            ax.set_xscale("log")
            ax.set_yscale("log")
            for axis in (ax.xaxis, ax.yaxis):  # labels at 1, 2, 5 x 10^k as plain numbers, not 10^3 alone
                axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
                plain_log_ticks(axis)
                axis.set_minor_formatter(NullFormatter())  # minor labels (300, 400) collide
        ax.set_xlabel(f"formula: snapshot {label}")
        ax.set_ylabel(f"measured: snapshot {label}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, frameon=False)
    axes[0].set_title(r"$\mu_s + (1-p)/p$")
    axes[1].set_title(r"$\sigma_s^2 + (1-p)/p^2$")
    fig.tight_layout(w_pad=2.0)  # the right panel's y label clear of the left panel
    return save(fig, stem)


def gap_figure(cells: pd.DataFrame, key: str, title: str, stem) -> list[str]:
    """Claim (c): BF-IO average gap / (s_max/p) against G, one line per B."""
    panels = list(cells.groupby([key, "p"]))
    n = len(panels)
    ncol = min(3, n)
    nrow = int(np.ceil(n / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.4 * nrow), squeeze=False, sharey=True)
    for ax, ((name, p), g) in zip(axes.flat, panels):
        bs = sorted(g["B"].unique())
        for i, B in enumerate(bs):
            h = g[g["B"] == B].sort_values("G")
            ax.errorbar(h["G"], h["gap_ratio"], yerr=h["gap_bf_se"] / h["gap_bound"], capsize=2, ms=4,
                        label=f"B={B}", **_style(i, len(bs)))
        ax.axhline(1.0, color="black", lw=1.2, linestyle=":")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"{name}, p={p:g}", fontsize=9)
        ax.set_xlabel("workers G (count)")
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("avg gap / (s_max/p) (ratio)")
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7, frameon=False)
    fig.suptitle(title + " (dotted line: the O(s_max/p) bound with constant 1)", fontsize=10)
    fig.tight_layout(h_pad=1.5)  # an x label must not run into the title of the panel below
    return save(fig, stem)


def energy_vs_G(saving: pd.DataFrame, corollary: pd.DataFrame, series: dict, stem) -> list[str]:
    """Corollary 1: measured saving and Theorem 4's bound against G, with the limit."""
    s = saving[(saving["model"] == "slot_geometric") & (saving["dist"] == series["distribution"])
               & (saving["drift"] == "one")]
    Bs = sorted(s["B"].unique())
    ps = sorted(s["p"].unique())
    B = min(Bs, key=lambda b: abs(b - series["B"])) if Bs else series["B"]
    p = min(ps, key=lambda q: abs(q - series["p"])) if ps else series["p"]
    s = s[(s["B"] == B) & (s["p"] == p)]
    powers = list(corollary["power"])
    fig, axes = plt.subplots(1, len(powers), figsize=(3.6 * len(powers), 3.6), squeeze=False, sharey=True)
    for ax, pw in zip(axes[0], powers):
        g = s[s["power"] == pw].sort_values("G")
        lim = float(corollary[corollary["power"] == pw]["limit"].iloc[0])
        ax.plot(g["G"], 100 * g["saving"], label="measured saving", **_style(0, 3))
        ax.plot(g["G"], 100 * g["bound"], label="Theorem 4 bound", **_style(1, 3))
        ax.plot(g["G"], 100 * g["bound_limit_eta"], label=r"bound at $\alpha\to\infty$", **_style(2, 3))
        ax.axhline(100 * lim, color="black", lw=1.2, linestyle=":", label=f"Cor. 1 limit {100 * lim:.1f}%")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("workers G (count)")
        ax.set_title(pw, fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0, 0].set_ylabel("synchronized-phase energy saving (%)")
    axes[0, 0].legend(fontsize=7, frameon=False)
    fig.suptitle(f"BF-IO vs FCFS energy, slot model ({series['distribution']}, B={B}, p={p:g})", fontsize=10)
    return save(fig, stem)
