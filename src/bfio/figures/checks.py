"""What a figure shows a reader, checked (issue 42): the series a panel asks a
reader to tell apart (:func:`panel_series`, at most :data:`MAX_SERIES`), the
colours outside a palette (:func:`non_gray_artists`) and text running into text
or into another panel (:func:`text_overlaps`). :func:`bfio.figures.style.save`
logs the crowded panels and the overlaps of every figure the pipeline draws;
the figure tests assert them. Reads matplotlib artists only, never the style.
"""

from __future__ import annotations

import matplotlib
from matplotlib.colors import to_rgba_array
import numpy as np

#: Series in one panel at most (issue 42): more are split over panels or drawn as
#: one grey band.
MAX_SERIES = 8


def _is_capline(line) -> bool:
    return str(line.get_linestyle()) in ("None", "none", "") and line.get_marker() in ("_", "|", 0, 1, 2, 3)


def panel_series(ax) -> list[str]:
    """What a reader must tell apart in panel ``ax``: one entry per legend label
    of its data artists (lines, error bars, bands, bars, points) and, for the
    unlabelled ones, one per colour that no labelled artist has (16 worker
    trajectories in one colour: one series; an error bar's caps: its line's).
    Issue 42: at most :data:`MAX_SERIES`."""
    labelled, unlabelled = {}, set()

    def colour_of(artist):
        for g in ("get_color", "get_facecolor", "get_edgecolor"):
            if hasattr(artist, g):
                try:
                    rgba = to_rgba_array(getattr(artist, g)())
                except (TypeError, ValueError):
                    continue
                if rgba.size:
                    return tuple(np.round(rgba[0, :3], 3))
        return None

    def add(artist, label=None):
        if not artist.get_visible():
            return
        label = artist.get_label() if label is None else label
        c = colour_of(artist)
        if label and not str(label).startswith("_"):
            labelled.setdefault(str(label), c)
        elif c is not None:
            unlabelled.add(c)

    in_container = set()
    for cont in ax.containers:
        kids = [a for a in cont.get_children() if a is not None]
        in_container.update(id(a) for a in kids)
        lab = cont.get_label()
        for a in kids:
            if isinstance(a, matplotlib.lines.Line2D) and _is_capline(a):
                continue
            add(a, lab if lab and not lab.startswith("_") else a.get_label())
    for line in ax.lines:
        if id(line) not in in_container and not _is_capline(line):
            add(line)
    for coll in ax.collections:
        if id(coll) not in in_container:
            add(coll)
    for patch in ax.patches:
        if id(patch) not in in_container:
            add(patch)
    colours = set(labelled.values())
    return list(labelled) + [f"unlabelled {c}" for c in sorted(unlabelled - colours)]


def crowded_panels(fig) -> list[str]:
    """Panels of ``fig`` with more than :data:`MAX_SERIES` series (:func:`panel_series`)."""
    out = []
    for i, ax in enumerate(fig.axes):
        if ax.get_visible():
            n = len(panel_series(ax))
            if n > MAX_SERIES:
                out.append(f"axes {i} ({ax.get_title()[:40]!r}): {n} series")
    return out


def non_gray_artists(fig, tol: float = 1e-6, allowed=()) -> list[str]:
    """Descriptions of the drawn elements of ``fig`` (lines, markers, patches,
    collections, texts) whose colour is neither a gray level nor one of
    ``allowed`` (RGB tuples)."""
    def colours(x):
        if x is None or (isinstance(x, str) and x == "none"):
            return np.zeros((0, 4))
        try:
            return to_rgba_array(x)
        except (TypeError, ValueError):
            return np.zeros((0, 4))

    ok = np.array([np.asarray(c, dtype=float)[:3] for c in allowed]).reshape(-1, 3)
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
            if not rgba.size:
                continue
            coloured = np.ptp(rgba[:, :3], axis=1) > tol
            if ok.size:
                known = (np.abs(rgba[:, None, :3] - ok[None, :, :]).max(axis=2) < 1e-3).any(axis=1)
                coloured &= ~known
            if coloured.any():
                bad.append(f"{type(artist).__name__} {artist.get_label() if hasattr(artist, 'get_label') else ''} "
                           f"{g}")
    return bad


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
    fig.draw_without_rendering()  # every text placed and measured, nothing rasterized (a third of a draw)
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


__all__ = ["MAX_SERIES", "panel_series", "crowded_panels", "non_gray_artists", "text_overlaps"]
