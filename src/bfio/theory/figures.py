"""Figures of the theory checks (PDF and PNG). Every series takes its colour,
marker, line style and label from the one registry of
:mod:`bfio.figures.style` (drifts and prefill laws by name, levels of B and p in
the palette's order); each group's points and fitted power law share one legend
entry; titles name the setting (the law or drift, p, s_max, the B and G of the
grid); Monte Carlo bars are one standard error, clipped at 0 for the
non-negative IIR."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.legend_handler import HandlerTuple
from matplotlib.ticker import LogLocator, NullFormatter
import numpy as np
import pandas as pd

from bfio.figures.style import SERIES, label, level_style, plain_log_ticks, plain_ticks, series
from bfio.figures.style import save as save_figure
from bfio.theory.checks import C2_PROOF
from bfio.theory.figure_names import FIGURES  # noqa: F401  (re-exported: the figures draw_all draws)
from bfio.ground.student_t import t_quantile

#: The registry family of each grouping column of the cells.
FAMILIES = {"dist": "distribution", "drift": "drift"}
#: Monte Carlo bars, as the titles say.
SE_NOTE = "bars: +-1 standard error (Monte Carlo), clipped at 0"


def _style(key: str, name, i: int) -> dict:
    """Colour, marker and line style of group ``name`` of column ``key``: the
    registry's for a drift or a prefill law, else the ``i``-th level's."""
    if key in FAMILIES:
        st = series(FAMILIES[key], str(name)).style()
        st.pop("label")
        return st
    return level_style(i)


def _name(key: str, name) -> str:
    """A group's label: the registry's for a drift or a prefill law, ``B = 8`` for a level."""
    return label(FAMILIES[key], str(name)) if key in FAMILIES else f"{key} = {name:g}"


def _span(values) -> str:
    v = sorted(set(int(x) for x in values))
    return str(v[0]) if len(v) == 1 else f"{v[0]}-{v[-1]}"


def _slot_setting(cells: pd.DataFrame, key: str) -> str:
    """The grid of a slot-model figure in words: what is fixed and what varies."""
    parts = []
    if key != "dist" and "dist" in cells and cells["dist"].nunique() == 1:
        parts.append(label("distribution", str(cells["dist"].iloc[0])))
    if "p" in cells:
        parts.append("p = " + ", ".join(f"{x:g}" for x in sorted(cells["p"].unique())))
    if "s_max" in cells:
        parts.append(f"$s_{{\\max}}$ = {int(cells['s_max'].iloc[0])}")
    parts.append(f"B = {_span(cells['B'])}, G = {_span(cells['G'])}")
    return ", ".join(parts)


def _clip(y, se):
    """Error bars of ``y +- se`` with the lower end at 0 at most."""
    y, se = np.asarray(y, dtype=float), np.nan_to_num(np.asarray(se, dtype=float))
    return np.vstack([np.minimum(se, np.maximum(y, 0)), se])


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
    """IIR against the theorem's rate: the cells and each group's fitted power
    law with its exponent and 95% interval (the theorem's rate has exponent 1),
    one legend entry per group; the proof's constant ``c2 x rate`` and the
    slope-1 line ``c x rate`` fitted on all cells."""
    groups = list(cells.groupby(key))
    x = np.geomspace(cells["rate"].min(), cells["rate"].max(), 50)
    handles, labels = [], []
    for i, (name, g) in enumerate(groups):
        st = _style(key, name, i)
        points = ax.errorbar(g["rate"], g["iir"], yerr=_clip(g["iir"], g["iir_se"]), fmt=st["marker"],
                             color=st["color"], ms=5, lw=0.8, capsize=2, label=_name(key, name))
        b, lo, hi, a = loglog_slope(g["rate"], g["iir"])
        text = _name(key, name)
        entry = points
        if np.isfinite(b):
            xs = np.geomspace(g["rate"].min(), g["rate"].max(), 20)
            ci = f" [{lo:.2f}, {hi:.2f}]" if np.isfinite(lo) else " (2 points: no interval)"
            (fit,) = ax.plot(xs, np.exp(a) * xs ** b, color=st["color"], linestyle=st["linestyle"], lw=0.9,
                             label=f"_fit {text}")
            text += f": fit b = {b:.2f}{ci}"
            entry = (points, fit)
        handles.append(entry)
        labels.append(text)
    c2 = SERIES["reference"]["c2"].style(marker=False)
    (h,) = ax.plot(x, C2_PROOF * x, lw=1.2, **{**c2, "label": f"c2 x rate (c2 = {C2_PROOF:.4f}, the proof's)"})
    handles.append(h)
    labels.append(h.get_label())
    if fits is not None:
        allrow = fits[(fits[key] == "all") & (fits["y"] == "iir")]
        if len(allrow):
            c = float(allrow["c_fit"].iloc[0])
            cf = SERIES["reference"]["c_fit"].style(marker=False)
            (h,) = ax.plot(x, c * x, lw=1.0, **{**cf, "label": f"c x rate, slope 1 imposed (c = {c:.3g}, all cells)"})
            handles.append(h)
            labels.append(h.get_label())
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("IIR = E[Imb(FCFS)] / E[Imb(BF-IO)] (ratio)")
    ax.grid(True, which="both", alpha=0.3)
    plain_ticks(ax)  # plain numbers, no math text to lay out
    # below the panel, framed: it hides no cell and no grid line runs through it; each
    # group's points and fitted line are one entry ("theorem: b = 1" once, in the title)
    ax.legend(handles, labels, handler_map={tuple: HandlerTuple(ndivide=None)}, fontsize=6.5, frameon=True,
              framealpha=1.0, edgecolor="0.8", loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1)


def thm1_iir(cells: pd.DataFrame, fits: pd.DataFrame, stem) -> list[str]:
    """Theorem 1: IIR against ``(sigma_s/s_max) sqrt(B log G) G/(G-1)``; Lemma 1 gaps."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 6.0))
    _iir_panel(axes[0], cells, "dist", fits, r"rate $(\sigma_s/s_{\max})\sqrt{B\log G}\,G/(G-1)$ (dimensionless)")
    samples = f", {int(cells['samples'].max())} samples a cell" if "samples" in cells else ""
    axes[0].set_title("Theorem 1: IIR vs rate (fit IIR ~ rate^b; theorem: b = 1)", fontsize=9)
    fig.suptitle(f"Homogeneous model: $s_{{\\max}}$ = {int(cells['s_max'].iloc[0])}, B = {_span(cells['B'])}, "
                 f"G = {_span(cells['G'])}{samples}; {SE_NOTE}", fontsize=9)
    ax = axes[1]
    groups = list(cells.groupby("dist"))
    for i, (name, g) in enumerate(groups):
        st = _style("dist", name, i)
        gg = g.groupby("G")["lemma1_max_gap"].max()
        ax.plot(gg.index, gg.values / g["s_max"].iloc[0], label=_name("dist", name), **st)
    ax.axhline(1.0, color="black", lw=1.2, linestyle=":", label="Lemma 1 bound ($s_{\\max}$)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("workers G (count)")
    ax.set_ylabel("max over samples and B of (max L - min L) / $s_{\\max}$ (ratio)")
    ax.set_title("Lemma 1 on every sample (BF-IO, sorted rounds)", fontsize=9)
    ax.grid(True, alpha=0.3)
    plain_ticks(ax)
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
    ax.set_title(f"{theorem}: IIR vs rate (slot model, steady state, H = 0; fit IIR ~ rate^b, theorem: b = 1)\n"
                 f"{_slot_setting(cells, key)}; {SE_NOTE}", fontsize=8)
    fig.tight_layout()
    return save(fig, stem)


def thm2_snapshot(cells: pd.DataFrame, stem) -> list[str]:
    """Theorem 2 (a): FCFS per-slot snapshot mean and variance, measured vs formula."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for ax, m, label in ((axes[0], "mean", "mean (tokens)"), (axes[1], "var", "variance (tokens$^2$)")):
        groups = list(cells.groupby("p"))
        for i, (p, g) in enumerate(groups):
            st = _style("p", p, i)
            ax.errorbar(g[f"snap_{m}_theory"], g[f"snap_{m}"], yerr=_clip(g[f"snap_{m}"], g[f"snap_{m}_se"]),
                        fmt=st["marker"], color=st["color"], ms=4, lw=0.8, capsize=2, label=f"p = {p:g}")
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
    axes[0].set_title(r"$\mu_s + (1-p)/p$", fontsize=9)
    axes[1].set_title(r"$\sigma_s^2 + (1-p)/p^2$", fontsize=9)
    fig.suptitle(f"Theorem 2 (a): FCFS per-slot snapshot, formula against measured; {_slot_setting(cells, 'p')}\n"
                 f"{SE_NOTE}", fontsize=9)
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
            ax.errorbar(h["G"], h["gap_ratio"], yerr=_clip(h["gap_ratio"], h["gap_bf_se"] / h["gap_bound"]),
                        capsize=2, ms=4, label=f"B = {B}", **_style("B", B, i))
        ax.axhline(1.0, color="black", lw=1.2, linestyle=":")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"{_name(key, name)}, p = {p:g}", fontsize=9)
        ax.set_xlabel("workers G (count)")
        ax.grid(True, which="both", alpha=0.3)
        plain_ticks(ax)
    for ax in axes[:, 0]:
        ax.set_ylabel("avg gap / ($s_{\\max}/p$) (ratio)")
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7, frameon=False)
    fig.suptitle(f"{title} (dotted line: the O($s_{{\\max}}/p$) bound with constant 1)\n"
                 f"slot model, {_slot_setting(cells, key)}; {SE_NOTE}", fontsize=10)
    fig.tight_layout(h_pad=1.5)  # an x label must not run into the title of the panel below
    return save(fig, stem)


def _power_label(name: str) -> str:
    """A power profile's name in words: ``A100_gamma0.5`` -> ``A100, gamma = 0.5``."""
    text = str(name).replace("_gamma", ", gamma = ").replace("_illustrative", " (illustrative)")
    return text.replace("_", " ")


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
        ax.plot(g["G"], 100 * g["saving"], label="measured saving", **level_style(0))
        ax.plot(g["G"], 100 * g["bound"], label="Theorem 4 bound", **level_style(1))
        ax.plot(g["G"], 100 * g["bound_limit_eta"], label=r"bound at $\alpha\to\infty$", **level_style(2))
        ax.axhline(100 * lim, color="black", lw=1.2, linestyle=":", label=f"Cor. 1 limit {100 * lim:.1f}%")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("workers G (count)")
        ax.set_title(_power_label(pw), fontsize=9)
        ax.grid(True, alpha=0.3)
        plain_ticks(ax)
    axes[0, 0].set_ylabel("synchronized-phase energy saving (%)")
    axes[0, 0].legend(fontsize=7, frameon=False)
    fig.suptitle(f"BF-IO vs FCFS energy, slot model ({label('distribution', series['distribution'])}, B = {B}, "
                 f"p = {p:g}, G = {_span(s['G']) if len(s) else '-'})", fontsize=10)
    return save(fig, stem)


def draw_all(cells: dict, fits: dict, saving: pd.DataFrame, corollary: pd.DataFrame, series: dict,
             outdir) -> list[str]:
    """Every figure of :data:`FIGURES` under ``outdir`` (the pipeline's one theory
    figure job): ``cells`` and ``fits`` by theorem (``thm1``, ``thm2``, ``thm3``),
    Theorem 4's saving and Corollary 1's limits, ``series`` the energy figure's setting."""
    out = Path(outdir)
    return [*thm1_iir(cells["thm1"], fits["thm1"], out / "thm1_iir"),
            *slot_iir(cells["thm2"], fits["thm2"], "dist", "Theorem 2", out / "thm2_iir"),
            *thm2_snapshot(cells["thm2"], out / "thm2_snapshot"),
            *gap_figure(cells["thm2"], "dist", "Theorem 2: BF-IO long-run average gap", out / "thm2_gap"),
            *slot_iir(cells["thm3"], fits["thm3"], "drift", "Theorem 3", out / "thm3_iir"),
            *gap_figure(cells["thm3"], "drift", "Theorem 3: BF-IO long-run average gap", out / "thm3_gap"),
            *energy_vs_G(saving, corollary, series, out / "energy_saving_vs_G")]
