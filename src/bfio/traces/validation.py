"""Validating a trace table row by row (Section 6.1; README "Bring your own
trace"): token counts are positive integers within :mod:`bfio.ground.limits`, arrival
times are numbers (seconds, or the column's unit: ``ms`` for Mooncake) or
timestamps, prompt block hashes (prefix caching, :func:`validate_hashes`) are
lists of ``ceil(prefill / block_tokens)`` non-negative integers; nothing is
dropped or clipped. A bad value raises :class:`~bfio.ground.errors.TraceError` naming
the file, the 0-based data row and the column.
"""

from __future__ import annotations

import json
import warnings
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd

from bfio.ground.errors import ConfigError, TraceError
from bfio.ground.limits import MAX_ARRIVAL_S, MAX_DECODE, MAX_PREFILL
from bfio.engine.prefix import PrefixBlocks, blocks_needed
from bfio.traces.registry import ARRIVAL_UNITS


def validate_columns(frame: pd.DataFrame, path: Path, prefill_col, decode_col,
                     arrival_col, arrival_unit: str = "s") -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The prefill and decode token counts (int64) and the arrival times in
    seconds (``None`` without ``arrival_col``) of ``frame``, every row checked.
    Numeric arrivals are in ``arrival_unit`` (:data:`~bfio.traces.registry.ARRIVAL_UNITS`)
    and converted to seconds; timestamps need the default ``'s'``."""
    if arrival_unit not in ARRIVAL_UNITS:
        raise ConfigError(f"arrival_unit: expected one of {', '.join(ARRIVAL_UNITS)}, got {arrival_unit!r}")
    if len(frame) == 0:
        raise TraceError(path, "trace has no rows")
    available = ", ".join(map(str, frame.attrs.get("available", frame.columns)))
    cols = {"prefill": (prefill_col, MAX_PREFILL), "decode": (decode_col, MAX_DECODE)}
    out = {}
    for role, (col, maximum) in cols.items():
        if col not in frame.columns:
            raise TraceError(path, f"missing {role} column (available: {available})", field=col)
        out[role] = _positive_ints(frame[col], path, col, maximum, role)
    arrival = None
    if arrival_col is not None:
        if arrival_col not in frame.columns:
            raise TraceError(path, f"missing arrival column (available: {available})", field=arrival_col)
        arrival = _arrival_seconds(frame[arrival_col], path, arrival_col, arrival_unit)
    return out["prefill"], out["decode"], arrival


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _fmt(value) -> str:
    return repr(value.item() if hasattr(value, "item") else value)


def _positive_ints(series: pd.Series, path: Path, col: str, maximum: int, role: str) -> np.ndarray:
    """Integer token counts in ``1..maximum`` (:mod:`bfio.ground.limits`) as int64."""
    values = series.to_numpy()
    if values.dtype == object:
        num = np.empty(len(values), dtype=float)
        for row, v in enumerate(values):
            if _is_numeric(v):
                try:
                    num[row] = float(v)
                except OverflowError:  # an int beyond float range
                    num[row] = np.inf
            else:
                raise TraceError(path, f"value {v!r} is not an integer token count", row=row, field=col)
        values = num
    elif values.dtype.kind == "b":
        raise TraceError(path, "column is boolean, expected integer token counts", row=0, field=col)
    elif values.dtype.kind not in "iuf":
        raise TraceError(path, f"column has type {values.dtype}, expected integer token counts", row=0, field=col)
    v = values.astype(float)
    bad = np.isnan(v)
    if bad.any():
        raise TraceError(path, "value is missing (NaN)", row=_first_bad(bad), field=col)
    bad = v > maximum
    if bad.any():
        r = _first_bad(bad)
        raise TraceError(path, f"value {_fmt(values[r])} exceeds the maximum {role} length of {maximum:,} tokens "
                               "(bfio.ground.limits: bounds that keep loads exact)", row=r, field=col)
    bad = ~np.isfinite(v) | (v != np.round(v))
    if bad.any():
        r = _first_bad(bad)
        raise TraceError(path, f"value {_fmt(values[r])} is not an integer token count", row=r, field=col)
    bad = v < 1
    if bad.any():
        r = _first_bad(bad)
        raise TraceError(path, f"value {_fmt(values[r])} is not positive (token counts must be >= 1)", row=r, field=col)
    return v.astype(np.int64)


def _is_numeric(value) -> bool:
    """A number (not a boolean, not missing) or numeric text: a token count or an
    arrival in seconds as a trace may write it."""
    if isinstance(value, (bool, np.bool_)):
        return False
    return isinstance(value, (int, np.integer, float, np.floating, Decimal)) or (
        isinstance(value, str) and _is_number(value))


def _arrival_seconds(series: pd.Series, path: Path, col: str, unit: str = "s") -> np.ndarray:
    if series.dtype.kind == "b":
        raise TraceError(path, f"value {_fmt(series.iloc[0])} is neither seconds nor a timestamp", row=0, field=col)
    if pd.api.types.is_object_dtype(series.dtype) or pd.api.types.is_string_dtype(series.dtype):
        # text or mixed values (pandas >= 3 reads an all-text column as dtype str): row by row
        for row, v in enumerate(series):
            if isinstance(v, (bool, np.bool_)):
                raise TraceError(path, f"value {v!r} is neither seconds nor a timestamp", row=row, field=col)
        seconds = np.array([_is_numeric(v) for v in series])
        if seconds.any() and not seconds.all() and not pd.isna(series[~seconds]).all():
            r = _first_bad(seconds != seconds[0])
            v = series.iloc[r]
            if not seconds[r] and pd.isna(pd.to_datetime(pd.Series([v], dtype=object), errors="coerce", utc=True)[0]):
                raise TraceError(path, f"value {v!r} is neither seconds nor a timestamp", row=r, field=col)
            kinds = ("a timestamp", "seconds")
            raise TraceError(path, f"value {v!r} is {kinds[int(seconds[r])]} while row 0 is {kinds[int(seconds[0])]}: "
                                   "one kind per column", row=r, field=col)
    if series.dtype.kind not in "iuf":
        numbers = pd.to_numeric(series, errors="coerce")
        if numbers.notna().all():  # seconds written as text ("0.5"), as token columns accept
            series = numbers
    if series.dtype.kind in "iuf":
        v = series.to_numpy(dtype=float)
        if unit != "s":  # a division, so integer milliseconds give the nearest float of seconds
            v = v / ARRIVAL_UNITS[unit]
    else:
        if unit != "s":
            raise TraceError(path, f"arrival unit '{unit}' is for numeric arrival times, but the column holds "
                                   f"timestamps (value {series.iloc[0]!r} in row 0)", row=0, field=col)
        parsed = _timestamps(series, path, col)
        bad = parsed.isna().to_numpy()
        if bad.any():
            r = _first_bad(bad)
            raise TraceError(path, f"value {series.iloc[r]!r} is neither seconds nor a timestamp", row=r, field=col)
        v = (parsed - parsed.min()).dt.total_seconds().to_numpy()
    bad = ~np.isfinite(v)
    if bad.any():
        raise TraceError(path, "arrival time is missing or not finite", row=_first_bad(bad), field=col)
    bad = v < 0
    if bad.any():
        raise TraceError(path, "arrival time is negative", row=_first_bad(bad), field=col)
    bad = v - v.min() > MAX_ARRIVAL_S
    if bad.any():
        raise TraceError(path, f"arrival time {v[_first_bad(bad)]:.3g} s is more than the bound of "
                               f"{MAX_ARRIVAL_S:.0e} s after the first (bfio.ground.limits.MAX_ARRIVAL_S)",
                         row=_first_bad(bad), field=col)
    return v


def _timestamps(series: pd.Series, path: Path, col: str) -> pd.Series:
    """Parse timestamps (unparseable values become NaT). Timestamps that all
    carry a UTC offset may differ in offset (e.g. across a DST change): they are
    compared in UTC. Mixing timestamps with and without an offset is ambiguous
    and refused, naming the first row that differs from row 0.

    One format per column: the format is inferred once and applied to every row,
    month first or day first. When both readings parse every row and disagree
    (``12/01/2024``: 1 December or 12 January) the column is refused as
    ambiguous, naming the first row where they differ; when only one parses
    every row (``13/01/2024`` is day first), that one is the column's."""
    readings = []
    text = series.dropna().astype(str)
    year_first = bool(len(text)) and bool(text.str.match(r"\s*\d{4}[-/.]").all())  # ISO 8601: no day/month question
    for dayfirst in (False,) if year_first else (False, True):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = pd.to_datetime(series, dayfirst=dayfirst)
        except (ValueError, TypeError, OverflowError):
            continue
        if pd.api.types.is_datetime64_any_dtype(r):
            readings.append(r)
    if len(readings) == 2:
        month_first, day_first = readings
        differ = (month_first != day_first).to_numpy() & month_first.notna().to_numpy()
        if differ.any():
            r = _first_bad(differ)
            raise TraceError(path, f"date {series.iloc[r]!r} reads as {month_first.iloc[r]:%Y-%m-%d} (month first) "
                                   f"or {day_first.iloc[r]:%Y-%m-%d} (day first), and every row of the column fits "
                                   "both: ambiguous; write dates as ISO 8601 (YYYY-MM-DD)", row=r, field=col)
        return month_first
    if readings:
        return readings[0]
    try:
        return pd.to_datetime(series, errors="coerce", format="mixed")
    except (ValueError, TypeError):
        pass
    aware = []
    for v in series:
        try:
            ts = pd.Timestamp(v)
        except (ValueError, TypeError):
            aware.append(None)
            continue
        aware.append(None if ts is pd.NaT else ts.tzinfo is not None)
    kinds = {a for a in aware if a is not None}
    if kinds == {True}:
        return pd.to_datetime(series, errors="coerce", format="mixed", utc=True)
    first = next(a for a in aware if a is not None)
    r = next(i for i, a in enumerate(aware) if a is not None and a != first)
    has = "has a UTC offset" if aware[r] else "has no UTC offset"
    raise TraceError(path, f"timestamp {series.iloc[r]!r} {has} but earlier ones "
                           f"{'do not' if aware[r] else 'do'}: mixed time zones are ambiguous "
                           "(give every timestamp an offset, or none)", row=r, field=col)


def validate_hashes(frame: pd.DataFrame, path: Path, hash_col: str, prefill: np.ndarray,
                    block_tokens: int) -> PrefixBlocks:
    """The prompt block hashes of ``frame[hash_col]`` (prefix caching,
    :mod:`bfio.engine.prefix`). Every row holds a list of non-negative integers (a
    JSON array; in a CSV cell, the array as text), exactly
    ``ceil(prefill / block_tokens)`` of them, the prompt's first block first."""
    if hash_col not in frame.columns:
        available = ", ".join(map(str, frame.attrs.get("available", frame.columns)))
        raise TraceError(path, f"missing block-hash column (available: {available})", field=hash_col)
    need = blocks_needed(prefill, block_tokens)
    rows: list = []
    for row, value in enumerate(frame[hash_col].tolist()):
        seq = _hash_list(value, path, row, hash_col)
        if len(seq) != need[row]:
            raise TraceError(path, f"{len(seq)} block hashes, but a prompt of {int(prefill[row])} tokens has "
                                   f"ceil({int(prefill[row])} / {block_tokens}) = {int(need[row])} blocks",
                             row=row, field=hash_col)
        rows.append(seq)
    counts = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    flat = [h for r in rows for h in r]
    return PrefixBlocks(offsets, np.array(flat, dtype=np.int64), block_tokens)


_INT64_MAX = int(np.iinfo(np.int64).max)


def _hash_list(value, path: Path, row: int, col: str) -> list[int]:
    """One row's block hashes as Python ints, or a TraceError naming the row."""
    if isinstance(value, str):  # CSV: the JSON array as text
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise TraceError(path, f"value {value[:40]!r} is not a list of block hashes", row=row, field=col) from None
    if isinstance(value, np.ndarray):  # Parquet list columns
        if value.ndim != 1 or value.size and value.dtype.kind not in "iu":
            raise TraceError(path, f"value is an array of {value.dtype}, expected integer block hashes",
                             row=row, field=col)
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        what = "missing" if value is None or (isinstance(value, float) and np.isnan(value)) else repr(value)
        raise TraceError(path, f"value {what} is not a list of block hashes", row=row, field=col)
    for k, h in enumerate(value):
        if isinstance(h, (bool, np.bool_)) or not isinstance(h, (int, np.integer)):
            raise TraceError(path, f"block {k}: {h!r} is not an integer block hash", row=row, field=col)
        if not 0 <= h <= _INT64_MAX:
            raise TraceError(path, f"block {k}: hash {h} is outside 0..2^63-1 (hashes are non-negative int64)",
                             row=row, field=col)
    return [int(h) for h in value]
