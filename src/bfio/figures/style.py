"""Shared figure style: readable in grayscale (lines differ by dash pattern and
marker, not only by colour), labelled axes with units, PDF + PNG output."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
from matplotlib.colors import to_rgba_array
from matplotlib.ticker import FuncFormatter, LogFormatter, NullFormatter
import numpy as np

#: Line styles in order of use: black solid, dark-gray dashed, gray dotted, light-gray dash-dot.
LINE_STYLES = [
    {"color": "0.0", "linestyle": "-", "marker": "o"},
    {"color": "0.4", "linestyle": "--", "marker": "s"},
    {"color": "0.25", "linestyle": ":", "marker": "^"},
    {"color": "0.6", "linestyle": "-.", "marker": "D"},
    {"color": "0.15", "linestyle": (0, (5, 1, 1, 1, 1, 1)), "marker": "v"},
    {"color": "0.5", "linestyle": (0, (1, 1)), "marker": "P"},
]
HATCHES = ["", "//", "..", "xx"]
#: Markers of the many-series figures (one per series, with a colour of :func:`series_colours`).
SERIES_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">", "p"]


def series_colours(n: int) -> list:
    """``n`` colours of seaborn's colour-blind-safe palette (past its 10, its hues darker, then cycled),
    for figures with many series; each series also gets its own marker
    (:data:`SERIES_MARKERS`), so the figure stays legible in grayscale."""
    import seaborn as sns

    base = sns.color_palette("colorblind", 10)
    if n > len(base):  # then the same hues, darker, before any colour repeats
        base = base + sns.color_palette("dark", 10)
    return [base[i % len(base)] for i in range(n)]


def series_style(i: int, n: int) -> dict:
    """Colour and marker of series ``i`` of ``n`` (:func:`series_colours`, :data:`SERIES_MARKERS`)."""
    return {"color": series_colours(n)[i], "marker": SERIES_MARKERS[i % len(SERIES_MARKERS)]}


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


def apply_style() -> None:
    plt.rcParams.update({
        "figure.dpi": 100, "savefig.dpi": 150, "font.size": 9, "axes.titlesize": 9, "axes.labelsize": 9,
        "legend.fontsize": 8, "xtick.labelsize": 8, "ytick.labelsize": 8, "axes.spines.top": False,
        "axes.spines.right": False, "axes.grid": True, "grid.color": "0.88", "grid.linewidth": 0.6,
        "lines.linewidth": 1.4, "lines.markersize": 4, "legend.frameon": False, "pdf.fonttype": 42,
        "axes.prop_cycle": matplotlib.cycler(color=[s["color"] for s in LINE_STYLES]),
    })


def line_style(i: int, markers: bool = True) -> dict:
    st = dict(LINE_STYLES[i % len(LINE_STYLES)])
    if not markers:
        st.pop("marker")
    return st


def figure(nrows: int = 1, ncols: int = 1, width: float = 6.5, height: float = 3.0, **kw):
    apply_style()
    return plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False, **kw)


#: Metadata that would make two saves of the same figure differ: left out, so
#: the same data give byte-identical files (``python -m bfio.results_diff``).
REPRODUCIBLE_METADATA = {".pdf": {"CreationDate": None, "ModDate": None}, ".svg": {"Date": None}}


def save(fig, *paths, dpi: float | None = None) -> None:
    """Save ``fig`` to every path (format from the extension) and close it.
    No creation dates are written, so the files depend on the figure only.
    Overlapping text (:func:`text_overlaps`) is logged as a warning naming the
    files (``bfio.figures``; the pipeline's figure logs), never silently."""
    overlaps = text_overlaps(fig)
    if overlaps:
        import logging

        logging.getLogger("bfio.figures").warning("overlapping text in %s: %s", ", ".join(map(str, paths)),
                                                  "; ".join(overlaps[:10]))
    for p in paths:
        Path(p).parent.mkdir(parents=True, exist_ok=True)
        kw = {"dpi": dpi} if dpi is not None else {}
        fig.savefig(p, bbox_inches="tight", metadata=REPRODUCIBLE_METADATA.get(Path(p).suffix.lower()), **kw)
    plt.close(fig)


def non_gray_artists(fig, tol: float = 1e-6) -> list[str]:
    """Descriptions of the drawn elements of ``fig`` whose colour is not a gray
    level (lines, markers, patches, collections, texts); empty for a figure
    that follows the pipeline's grayscale rule (docs/pipeline.md)."""
    def colours(x):
        if x is None or (isinstance(x, str) and x == "none"):
            return np.zeros((0, 4))
        try:
            return to_rgba_array(x)
        except (TypeError, ValueError):
            return np.zeros((0, 4))

    bad = []
    for artist in fig.findobj():
        if not artist.get_visible():
            continue
        getters = [g for g in ("get_color", "get_facecolor", "get_edgecolor", "get_markerfacecolor",
                               "get_markeredgecolor") if hasattr(artist, g)]
        for g in getters:
            try:
                rgba = colours(getattr(artist, g)())
            except Exception:  # noqa: BLE001 - some artists raise for unset colours
                continue
            rgba = rgba[rgba[:, 3] > 0] if rgba.size else rgba
            if rgba.size and (np.ptp(rgba[:, :3], axis=1) > tol).any():
                bad.append(f"{type(artist).__name__} {artist.get_label() if hasattr(artist, 'get_label') else ''} "
                           f"{g}")
    return bad


#: Unit prefixes used to rescale axes: factor -> prefix.
_PREFIXES = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]


def scale_for(values, unit: str) -> tuple[float, str]:
    """A divisor and a prefixed unit label so the largest |value| is below 1000,
    e.g. ``(1e6, 'M tokens')`` for loads of ~3e7 tokens, ``(1e6, 'MJ')`` for energy."""
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
        return factor, (f"{prefix} {unit}" if prefix else unit).replace("  ", " ")
    return factor, (f"{prefix}{unit}" if not prefix else f"x{factor:.0e} {unit}")




def _texts(fig):
    """``(description, Text)`` of every visible, non-empty text a reader sees:
    tick labels (only the ticks drawn), axis labels, titles, legend entries and
    the figure's own texts."""
    out = []
    owner = -1

    def add(desc, t):
        if t is not None and t.get_visible() and t.get_text().strip():
            out.append((desc, t, owner))

    for i, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        owner = i
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)) if ax.axison else ():
            try:
                ticks = axis._update_ticks()  # the ticks matplotlib draws (inside the view)
            except Exception:  # pragma: no cover - private API changed
                ticks = axis.get_major_ticks()
            for tick in ticks:
                for lab in (tick.label1, tick.label2):
                    add(f"axes {i} {name} tick '{lab.get_text()}'", lab)
            add(f"axes {i} {name} label", axis.label)
        for title in (ax.title, getattr(ax, "_left_title", None), getattr(ax, "_right_title", None)):
            add(f"axes {i} title", title)
        leg = ax.get_legend()
        if leg is not None:
            for t in leg.get_texts():
                add(f"axes {i} legend '{t.get_text()}'", t)
    owner = -1
    for leg in fig.legends:
        for t in leg.get_texts():
            add(f"legend '{t.get_text()}'", t)
    for t in fig.texts:
        if t is not getattr(fig, "_suptitle", None):
            add(f"figure text '{t.get_text()[:30]}'", t)
    if getattr(fig, "_suptitle", None) is not None:
        add("suptitle", fig._suptitle)
    return out


def text_overlaps(fig, tolerance_px: float = 1.0) -> list[str]:
    """Pairs of texts of ``fig`` whose drawn boxes overlap (more than
    ``tolerance_px`` pixels each way: tick labels running into each other or
    into an axis label, a legend over a title), and texts that run into another
    panel's plotting area (a y label over the panel to its left). Empty for a
    readable figure: the figure tests assert it for every figure, and
    :func:`save` logs it for every figure the pipeline draws."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = []
    for desc, t, owner in _texts(fig):
        bb = t.get_window_extent(renderer)
        if bb.width > 0 and bb.height > 0:
            boxes.append((desc, t.get_text(), owner, bb.x0 + tolerance_px, bb.y0 + tolerance_px,
                          bb.x1 - tolerance_px, bb.y1 - tolerance_px))
    bad = []
    for i in range(len(boxes)):
        d1, s1, _, a0, b0, a1, b1 = boxes[i]
        for j in range(i + 1, len(boxes)):
            d2, s2, _, c0, e0, c1, e1 = boxes[j]
            if s1 == s2 and abs(a0 - c0) < 1 and abs(b0 - e0) < 1:
                continue  # the same text drawn twice in one place (a twin axis): reads as one
            if a0 < c1 and c0 < a1 and b0 < e1 and e0 < b1:
                bad.append(f"{d1} overlaps {d2}")
    # a text over another panel's plotting area (twins share their area: not another panel)
    panels = [(k, ax.get_window_extent(renderer)) for k, ax in enumerate(fig.axes)
              if ax.get_visible() and ax.axison]
    for desc, _, owner, a0, b0, a1, b1 in boxes:
        own = fig.axes[owner].get_window_extent(renderer) if owner >= 0 else None
        for k, pb in panels:
            if k == owner or (own is not None and np.allclose(own.bounds, pb.bounds)):
                continue
            if a0 < pb.x1 and pb.x0 < a1 and b0 < pb.y1 and pb.y0 < b1:
                bad.append(f"{desc} runs into the plotting area of axes {k}")
    return bad


__all__ = ["apply_style", "line_style", "figure", "save", "scale_for", "non_gray_artists", "text_overlaps",
           "series_colours", "series_style", "LINE_STYLES", "HATCHES", "SERIES_MARKERS"]
