"""Shared pieces of the online, predictor and starvation studies: study
settings from the config, reading trace tables, and Markdown cells
``mean [lo, hi]`` for summaries made by :func:`bfio.studies.summarize_runs`."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from bfio.ground.errors import ConfigError
from bfio.traces.canonical import read_trace_table
from bfio.runs.paper import TABLE_SETTINGS
from bfio.traces.registry import KNOWN_TRACES


def setting_slots(setting: dict, config: dict) -> int:
    """B of a study setting: its own ``slots`` or the top-level ``slots``."""
    return int(setting.get("slots") or config.get("slots", 72))


def check_settings(config: dict, study: str, groups=("settings",)) -> dict:
    """The settings of ``config[study][group]`` (lists) for every group, by name,
    after checking that names are unique across ``groups`` and every trace is a
    known trace or one of ``extra_traces`` (it need not be listed in ``traces``:
    its table is prepared on demand). Raises :class:`ConfigError` naming the key."""
    known = set(KNOWN_TRACES) | set(config.get("extra_traces") or {})
    seen, out = {}, {}
    for group in groups:
        for i, s in enumerate(config.get(study, {}).get(group) or []):
            name = s["name"]
            if name in seen:
                raise ConfigError(f"config key '{study}.{group}.{i}.name': '{name}' is also used by "
                                  f"'{study}.{seen[name]}'")
            seen[name] = f"{group}.{i}"
            if s["trace"] not in known:
                raise ConfigError(f"config key '{study}.{group}.{i}.trace': unknown trace '{s['trace']}' "
                                  f"(known: {', '.join(sorted(known))}; add your own under 'extra_traces')")
            out[name] = dict(s)
    return out


def scale_note(settings: dict, paper: dict) -> str:
    """``'; N scaled down from the paper (...)'`` when a setting uses fewer requests
    than the paper setting of its trace (``paper``: trace -> (N, G)), else ``''``."""
    notes = []
    for name, s in settings.items():
        ref = paper.get(s["trace"])
        if ref and (s.get("requests") or 0) < ref[0]:
            notes.append(f"{name}: N={s['requests']:,} (paper N={ref[0]:,})")
        if ref and int(s["workers"]) != ref[1]:
            notes.append(f"{name}: G={s['workers']} (paper G={ref[1]})")
    return ("; scaled from the paper setting: " + ", ".join(notes)) if notes else ""


def fmt(x, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)) or pd.isna(x):
        return "n/a"
    x = float(x) + 0.0  # no "-0"
    if x == 0:
        return "0"
    if x != 0 and (abs(x) >= 1e5 or abs(x) < 1e-3):
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}"


def ci_cell(rec, metric: str, scale: float = 1.0, digits: int = 3) -> str:
    """``'mean [lo, hi]'`` of ``metric`` in a summary record (``scale`` divides)."""
    mean, lo, hi = (rec.get(f"{metric}_{k}", np.nan) for k in ("mean", "ci_lo", "ci_hi"))
    if mean is None or pd.isna(mean):
        return "n/a"
    if lo is None or pd.isna(lo):
        return fmt(mean / scale, digits)
    return f"{fmt(mean / scale, digits)} [{fmt(lo / scale, digits)}, {fmt(hi / scale, digits)}]"


def markdown_table(records, columns) -> str:
    """Markdown of ``records`` with ``columns``: list of (header, fn(record) -> str)."""
    rows = [{head: fn(r) for head, fn in columns} for r in records]
    if not rows:
        return "(no rows)"
    return pd.DataFrame(rows).to_markdown(index=False)


def ci_columns(metrics: dict) -> list:
    """Markdown columns ``"<label> (<unit>)"`` of ``metric -> (label, unit)``, each cell
    the metric's mean [95% CI] (:func:`ci_cell`)."""
    return [(f"{label} ({unit})", lambda r, m=m: ci_cell(r, m)) for m, (label, unit) in metrics.items()]


def backlog_heading(name, sub) -> str:
    """Section heading of a backlog setting: its trace, G, B and N."""
    first = sub.iloc[0]
    return f"## {name}: {first['trace']}, G={first['workers']}, B={first['slots']}, N={int(first['requests']):,}"


def setting_sections(summary, columns, heading=backlog_heading) -> list[str]:
    """One Markdown section per setting (in order of appearance): ``heading(name,
    rows)`` (default :func:`backlog_heading`), then its rows as a table."""
    lines = []
    for name in dict.fromkeys(summary["setting"]):
        sub = summary[summary["setting"] == name]
        lines += [heading(name, sub), "", markdown_table(sub.to_dict("records"), columns), ""]
    return lines


def read_product(path):
    """A study product (:class:`bfio.studies.registry.Product`): a data frame
    (``.csv``) or a JSON object (``.json``)."""
    if str(path).endswith(".json"):
        import json

        with open(path) as f:
            return json.load(f)
    return pd.read_csv(path)


def read_frames(paths: dict) -> dict:
    """trace name -> canonical trace table (``results/traces/<trace>.parquet``)."""
    return {name: read_trace_table(p) for name, p in paths.items()}


def _paper_settings() -> dict:
    return {t["trace"]: (int(t["requests"]), int(t["workers"])) for t in TABLE_SETTINGS.values()}


#: The paper's settings by trace: (N, G) (Section 6.2; Table 1 and Table 2).
PAPER_SETTINGS = _paper_settings()

__all__ = ["setting_slots", "check_settings", "scale_note", "fmt", "ci_cell", "markdown_table", "read_product", "read_frames",
           "PAPER_SETTINGS"]
