"""Validating a trace table row by row (Section 6.1; README "Bring your own
trace"): token counts are positive integers within :mod:`bfio.limits`, arrival
times are seconds or timestamps, nothing is dropped or clipped. A bad value
raises :class:`~bfio.errors.TraceError` naming the file, the 0-based data row
and the column.
"""

from __future__ import annotations

import warnings
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd

from bfio.errors import TraceError
from bfio.limits import MAX_ARRIVAL_S, MAX_DECODE, MAX_PREFILL


def validate_columns(frame: pd.DataFrame, path: Path, prefill_col, decode_col,
                     arrival_col) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The prefill and decode token counts (int64) and the arrival times in
    seconds (``None`` without ``arrival_col``) of ``frame``, every row checked."""
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
        arrival = _arrival_seconds(frame[arrival_col], path, arrival_col)
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
    """Integer token counts in ``1..maximum`` (:mod:`bfio.limits`) as int64."""
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
                               "(bfio.limits: bounds that keep loads exact)", row=r, field=col)
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


def _arrival_seconds(series: pd.Series, path: Path, col: str) -> np.ndarray:
    if series.dtype.kind == "b":
        raise TraceError(path, f"value {_fmt(series.iloc[0])} is neither seconds nor a timestamp", row=0, field=col)
    if series.dtype == object:
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
    else:
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
                               f"{MAX_ARRIVAL_S:.0e} s after the first (bfio.limits.MAX_ARRIVAL_S)",
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
