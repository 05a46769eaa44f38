"""Shared figure style: ONE palette and ONE registry of series (defined in
:mod:`bfio.figures.series`, read through this module), labelled axes with
units, titles that name the setting, honest intervals, PDF + PNG output; the
readability checks :func:`save` logs live in :mod:`bfio.figures.checks`.

**The registry** (:data:`SERIES`): every series a figure draws (a router, a
BF-IO variant, an admission rule, a predictor, a theory drift, a trace, ...)
is looked up by the name the tables and the config write (``fcfs``,
``sglang_total_tokens``, ``aging``, ``speculative_per_request``) in its family,
and gets its colour, marker, line style and readable label from there, and
nowhere else: a label is written once, here. :func:`glossary_markdown` renders
the registry's meanings; ``figures/README.md`` carries that glossary and the
figure test checks it is the registry's. :func:`router` resolves a table's row
key (``bfio_h40_aging200``, ``vllm_dp_r10``) to its series.

**The palette** (:data:`COLOURS`): Okabe and Ito's colour-blind-safe colours.
Every series also has its own marker (and BF-IO's variants a line style), so a
figure stays readable in grayscale. What is shown only for comparison (the
routers not named in a panel, a reference's interval) is grey (:data:`OTHERS`).

**A panel shows at most** :data:`MAX_SERIES` series (:func:`panel_series`
counts them; :func:`save` logs a panel with more): a figure with more splits
its panels or draws the rest as one grey band (:func:`others_band`).

**Intervals** (:func:`interval`): a 95% Student-t interval over seeds only with
at least :data:`MIN_SEEDS_FOR_CI` seeds, otherwise the spread (one standard
deviation over the seeds); a non-negative quantity's bar or band is clipped at
0, and :func:`interval_note` says which of these the figure draws.
"""

from __future__ import annotations

from pathlib import Path
import re

import matplotlib
import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter, LogFormatter, NullFormatter
import numpy as np

from bfio.ground.student_t import t_quantile
from bfio.lookahead.discount import effective_horizon
from bfio.figures.checks import MAX_SERIES, crowded_panels, non_gray_artists, panel_series, text_overlaps

# The palette and the series registry (bfio.figures.series), read here and by every figure through
# this module.
from bfio.figures.series import (  # noqa: F401
    COLOURS,
    ORDER,
    MARKERS,
    LINESTYLES,
    HATCHES,
    OTHERS,
    Series,
    SERIES,
    HEFF,
    series,
    label,
    trace_label,
    admission_text,
    router,
    row_or_label,
    level_style,
    plain_text,
    glossary_markdown,
)


# --------------------------------------------------------------------------- titles that name the setting

def setting_title(trace=None, workers=None, requests=None, slots=None, seeds=None, extra: str = "",
                  seed=None) -> str:
    """``'LongBench v2, G = 32 workers, N = 3,000 requests, B = 72 slots, 2 seeds'``:
    the setting in words (the parts given; ``workers`` a number or a list of G;
    ``seed``: the one seed a single-run figure draws)."""
    parts = []
    if trace is not None and not (isinstance(trace, float) and np.isnan(trace)):
        parts.append(trace_label(str(trace)))
    if workers is not None:
        gs = sorted({int(g) for g in np.atleast_1d(workers)})
        parts.append(f"G = {gs[0]} workers" if len(gs) == 1 else f"G = {', '.join(map(str, gs))} workers")
    if requests is not None and np.isfinite(float(requests)):
        parts.append(f"N = {int(requests):,} requests")
    if slots is not None and np.isfinite(float(slots)):
        parts.append(f"B = {int(slots)} slots")
    if seeds is not None:
        parts.append(f"{int(seeds)} seed{'s' if int(seeds) != 1 else ''}")
    if seed is not None:
        parts.append(f"seed {int(seed)}")
    if extra:
        parts.append(extra)
    return ", ".join(parts)


def setting_of(frame, wrap: bool = False, **extra) -> str:
    """:func:`setting_title` of a summary frame (its ``trace``, ``workers``,
    ``requests``, ``slots`` and ``n_seeds`` columns, where present); ``wrap``:
    on two lines (trace and G, then N and B), for a panel's title."""
    def one(col):
        if col not in frame or not len(frame):
            return None
        vals = frame[col].dropna().unique()
        return vals[0] if len(vals) == 1 else None

    workers = sorted(frame["workers"].dropna().unique()) if "workers" in frame and len(frame) else None
    seeds = int(frame["n_seeds"].max()) if "n_seeds" in frame and len(frame) else None
    text = setting_title(one("trace"), workers, one("requests"), one("slots"), seeds, **extra)
    return text.replace(", N = ", ",\nN = ", 1) if wrap else text


# --------------------------------------------------------------------------- honest intervals

#: Fewer seeds than this: no Student-t interval (with 2 seeds its half width is
#: 12.7 standard errors, through 0 for any noisy metric); the spread instead.
MIN_SEEDS_FOR_CI = 5


def interval(frame, metric: str, factor: float = 1.0, nonneg: bool = True):
    """``(mean, yerr, kind)`` of ``<metric>_mean`` / ``_ci_lo`` / ``_ci_hi`` over the
    rows of ``frame``, divided by ``factor``: the 95% interval with at least
    :data:`MIN_SEEDS_FOR_CI` seeds (``n_seeds``), else one standard deviation
    over the seeds (read back from the t interval), none with one seed; for a
    non-negative quantity the lower end is clipped at 0. ``kind`` is a set of
    what was drawn (``'ci'``, ``'sd'``, ``'clipped'``) for :func:`interval_note`."""

    mean = frame[f"{metric}_mean"].to_numpy(dtype=float) / factor
    lo = frame[f"{metric}_ci_lo"].to_numpy(dtype=float) / factor
    hi = frame[f"{metric}_ci_hi"].to_numpy(dtype=float) / factor
    n = frame["n_seeds"].to_numpy(dtype=float) if "n_seeds" in frame else np.full(len(mean), np.inf)
    down, up = mean - lo, hi - mean
    kind = set()
    for i, k in enumerate(n):
        if not (np.isfinite(down[i]) and np.isfinite(up[i])) or k < 2:
            down[i] = up[i] = 0.0
        elif k < MIN_SEEDS_FOR_CI:
            sd = (hi[i] - lo[i]) / 2 * np.sqrt(k) / t_quantile(0.975, k - 1)
            down[i] = up[i] = sd
            kind.add("sd")
        else:
            kind.add("ci")
    if nonneg:
        over = down > np.maximum(mean, 0) + 1e-12 * np.abs(mean)
        if over.any():
            kind.add("clipped")
        down = np.minimum(down, np.maximum(mean, 0))
    return mean, np.vstack([down, up]), kind


def interval_note(kinds, seeds=None) -> str:
    """What the bars of a figure show, for its title: ``'bars: 95% CI'``,
    ``'bars: +-1 s.d. over seeds (fewer than 5 seeds: no t-interval)'``, and
    ``', clipped at 0'`` where a lower end was."""
    k = set().union(*kinds) if kinds and not isinstance(next(iter(kinds)), str) else set(kinds)
    parts = []
    if "ci" in k:
        parts.append("95% CI")
    if "sd" in k:
        parts.append(f"+-1 s.d. over seeds (fewer than {MIN_SEEDS_FOR_CI} seeds: no t-interval)")
    text = "bars: " + "; ".join(parts) if parts else "no interval (one seed)"
    return text + (", clipped at 0" if "clipped" in k else "")


def reach_of(discount: float) -> int:
    """How many offsets the objective with ``discount`` weighs at all (the fast
    solver's cut-off): :func:`bfio.lookahead.discount.effective_horizon` of an
    unbounded H."""

    return effective_horizon(10**9, discount)


def heff_text(reach: int, horizon: int | None = None) -> str:
    """The one wording of the effective window: ``'H_eff = min(H, 13)'``, or with
    ``horizon`` ``'H_eff = min(H, 13) = 10'`` (``H_eff`` as math text, :data:`HEFF`)."""
    text = f"{HEFF} = min(H, {int(reach)})"
    return text if horizon is None else f"{text} = {min(int(horizon), int(reach))}"


# --------------------------------------------------------------------------- readable panels

#: A raw key in a label: an identifier with underscores (``bfio_h40_instant``,
#: ``mooncake_x0_5``) or a pull-request number (``#49204``). Math text is not read.
RAW_KEY = re.compile(r"[A-Za-z0-9]_[A-Za-z0-9]|#\d+")


def raw_keys(text: str) -> list[str]:
    """The raw keys in ``text`` outside ``$...$`` math (:data:`RAW_KEY`)."""
    plain = re.sub(r"\$[^$]*\$", "", str(text))
    return [m.group(0) for m in RAW_KEY.finditer(plain)]


def others_band(ax, curves, factor: float = 1.0, **kw):
    """The grey band from the lowest to the highest of ``curves`` (``(x, y)``
    pairs, one per router a panel does not name, ``y`` divided by ``factor``) at
    each x: how the other routers spread, as one element (at a single x: a
    thick grey bar). Returns it, or ``None`` with no curve."""
    if not curves:
        return None
    xs = np.asarray(sorted(set(np.concatenate([np.asarray(f[0], dtype=float) for f in curves]))))
    vals = np.full((len(curves), len(xs)), np.nan)
    for i, (fx, fy) in enumerate(curves):
        pos = {float(a): j for j, a in enumerate(xs)}
        for a, b in zip(np.asarray(fx, dtype=float), np.asarray(fy, dtype=float)):
            vals[i, pos[float(a)]] = b / factor
    lo, hi = np.nanmin(vals, axis=0), np.nanmax(vals, axis=0)
    lab = kw.pop("label", f"{len(curves)} other routers: range of their means")
    if len(xs) == 1:  # one x: a bar of the range, not an area
        return ax.errorbar(xs, [(lo[0] + hi[0]) / 2], yerr=[[(hi[0] - lo[0]) / 2], [(hi[0] - lo[0]) / 2]],
                           color=OTHERS, linestyle="none", elinewidth=6, capsize=0, label=lab, zorder=1, **kw)
    return ax.fill_between(xs, lo, hi, color=OTHERS, alpha=0.55, linewidth=0, label=lab, zorder=1, **kw)


class PlainLogFormatter(LogFormatter):
    """Log-axis labels as plain numbers ("5", "20", "0.1"), not 5x10^0."""

    def _num_to_string(self, x, vmin, vmax):
        return f"{x:g}"


def plain_log_ticks(axis) -> None:
    """One tick format per log axis (an ``Axis``: ``ax.yaxis``): plain numbers on
    the major ticks and, when it spans less than two decades (few majors), on
    some minor ticks (matplotlib picks which); otherwise minor ticks stay
    unlabelled."""
    axis.set_major_formatter(FuncFormatter(lambda x, _pos: f"{x:g}"))  # every major tick, as placed
    lo, hi = axis.get_view_interval()
    if lo > 0 and hi / lo < 100:
        axis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))
    else:
        axis.set_minor_formatter(NullFormatter())


def plain_ticks(ax) -> None:
    """:func:`plain_log_ticks` on each log axis of ``ax`` (call it once the data and
    scales are set): plain numbers ("0.5", "16") instead of matplotlib's default
    ``10^k`` / ``2^k`` labels, which are math text, parsed and laid out at every
    draw (a third of a theory figure's save)."""
    for axis in (ax.xaxis, ax.yaxis):
        if axis.get_scale() == "log":
            plain_log_ticks(axis)


def apply_style() -> None:
    plt.rcParams.update({
        "figure.dpi": 100, "savefig.dpi": 150, "font.size": 9, "axes.titlesize": 9, "axes.labelsize": 9,
        "legend.fontsize": 8, "xtick.labelsize": 8, "ytick.labelsize": 8, "axes.spines.top": False,
        "axes.spines.right": False, "axes.grid": True, "grid.color": "0.88", "grid.linewidth": 0.6,
        "lines.linewidth": 1.4, "lines.markersize": 4, "legend.frameon": False, "pdf.fonttype": 42,
        "axes.prop_cycle": matplotlib.cycler(color=[COLOURS[c] for c in ORDER]),
    })


def figure(nrows: int = 1, ncols: int = 1, width: float = 6.5, height: float = 3.0, **kw):
    apply_style()
    return plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False, **kw)


#: Metadata that would make two saves of the same figure differ: left out, so
#: the same data give byte-identical files (``python -m bfio.runs.results_diff``).
REPRODUCIBLE_METADATA = {".pdf": {"CreationDate": None, "ModDate": None}, ".svg": {"Date": None}}


def save(fig, *paths, dpi: float | None = None) -> None:
    """Save ``fig`` to every path (format from the extension) and close it.
    No creation dates are written, so the files depend on the figure only.
    Overlapping text (:func:`text_overlaps`) and a panel with more than
    :data:`MAX_SERIES` series (:func:`crowded_panels`) are logged as warnings
    naming the files (``bfio.figures``; the pipeline's figure logs), never silently.

    The figure is laid out once (issue 42): the overlap check's layout
    (:func:`text_overlaps` draws it without rendering, at the dpi the PNG is
    saved at) gives the tight box every file is cut to (:func:`laid_out_box`),
    and the figure's layout engine (the placeholder ``tight_layout`` leaves, or a
    constrained layout, already applied by that draw) is removed, so each
    ``savefig`` renders once instead of laying the figure out again first
    (``bbox_inches="tight"`` or an engine: a second draw per file). The box is
    measured with the raster renderer, not each file's: a PNG is the one
    ``bbox_inches="tight"`` saves (pixel for pixel on the first look's figures), a
    PDF's page may be a few points larger or smaller (up to 10 pt wider where a long
    legend's text measures wider on the raster renderer than in the PDF; the
    content is the same, the 0.1 in pad keeps every text inside)."""
    import logging

    log = logging.getLogger("bfio.figures")
    # laid out at the PNG's dpi (savefig's), so the box measured is the one a PNG needs;
    # the overlap tolerance (1 pixel at the figure's dpi) scaled with it
    out_dpi = dpi if dpi is not None else plt.rcParams["savefig.dpi"]
    scale = 1.0
    if out_dpi != "figure" and float(out_dpi) != fig.dpi:
        scale = float(out_dpi) / fig.dpi
        fig.dpi = float(out_dpi)
    overlaps = text_overlaps(fig, tolerance_px=scale)
    if overlaps:
        log.warning("overlapping text in %s: %s", ", ".join(map(str, paths)), "; ".join(overlaps[:10]))
    crowded = crowded_panels(fig)
    if crowded:
        log.warning("more than %d series in a panel of %s: %s", MAX_SERIES, ", ".join(map(str, paths)),
                    "; ".join(crowded))
    box = laid_out_box(fig)
    for p in paths:
        Path(p).parent.mkdir(parents=True, exist_ok=True)
        kw = {"dpi": dpi} if dpi is not None else {}
        fig.savefig(p, bbox_inches=box, metadata=REPRODUCIBLE_METADATA.get(Path(p).suffix.lower()), **kw)
    plt.close(fig)


def laid_out_box(fig):
    """The box (inches) ``savefig(bbox_inches="tight")`` would cut ``fig`` to, from
    the layout of its last draw (:func:`text_overlaps`' draw without rendering),
    with the layout engine removed so that saving does not lay the figure out
    again; ``"tight"`` (a layout per file) where an axes has a locator (an inset
    axes: placed only with a renderer at hand)."""
    if any(ax.get_axes_locator() is not None for ax in fig.axes):
        return "tight"
    box = fig.get_tightbbox(fig.canvas.get_renderer())
    pad = plt.rcParams["savefig.pad_inches"]
    with plt.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
        fig.set_layout_engine(None)  # its layout is in place: savefig would run it (a draw) again
    return box.padded(pad, pad)


def off_palette_artists(fig) -> list[str]:
    """The drawn elements of ``fig`` coloured outside the one palette
    (:data:`COLOURS`; gray levels are the comparison-only elements): empty for a
    figure drawn from the registry (issue 42). Seaborn's bootstrap band and
    matplotlib's defaults would show here."""
    from matplotlib.colors import to_rgb

    return non_gray_artists(fig, allowed=[to_rgb(c) for c in COLOURS.values()])


#: Unit prefixes used to rescale axes: factor -> prefix.
_PREFIXES = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]


def scale_for(values, unit: str) -> tuple[float, str]:
    """A divisor and a prefixed unit label so the largest |value| is below 1000,
    e.g. ``(1e6, 'M tokens')`` for loads of ~3e7 tokens, ``(1e6, 'MJ')`` for energy;
    tokens past millions in words (``'billion tokens'``, never ``'G tokens'``)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    top = float(np.max(np.abs(v))) if v.size else 1.0
    for factor, prefix in _PREFIXES:
        if top >= factor:
            break
    else:
        factor, prefix = 1.0, ""
    if unit in ("J", "W"):
        return factor, f"{prefix}{unit}"
    if unit.startswith("tokens") or unit.startswith("tok"):
        # words past M: "G tokens" would read as the number of workers G
        word = {"G": "billion", "T": "trillion"}.get(prefix, prefix)
        return factor, (f"{word} {unit}" if word else unit).replace("  ", " ")
    return factor, (f"{prefix}{unit}" if not prefix else f"x{factor:.0e} {unit}")




__all__ = ["COLOURS", "ORDER", "MARKERS", "LINESTYLES", "HATCHES", "OTHERS", "MAX_SERIES", "MIN_SEEDS_FOR_CI",
           "Series", "SERIES", "series", "label", "trace_label", "admission_text", "router", "level_style",
           "row_or_label", "plain_text", "glossary_markdown", "HEFF", "setting_title", "setting_of", "interval", "interval_note", "reach_of", "heff_text",
           "raw_keys", "others_band", "panel_series", "crowded_panels", "apply_style", "figure", "save", "laid_out_box", "scale_for",
           "non_gray_artists", "off_palette_artists", "text_overlaps", "plain_log_ticks", "plain_ticks"]
