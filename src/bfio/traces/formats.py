"""Reading a trace file into a table, by extension: the paper's JSON object
with ``data`` records or a JSON array of records, JSON Lines (streamed), CSV
and Parquet (Section 6.1 traces and your own, README "Bring your own trace").
A file that cannot be read, or names a column or key twice, raises
:class:`~bfio.ground.errors.TraceError` naming the file; the values are checked by
:mod:`bfio.traces.validation`.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pandas as pd

from bfio.ground.errors import TraceError
from bfio.traces.registry import not_regular


#: :func:`unreadable`'s answer for a path with nothing behind it.
MISSING = "file does not exist"


def unreadable(path: Path) -> str | None:
    """Why ``path`` cannot be opened as a trace file (``None``: it can): missing
    (:data:`MISSING`), a symlink loop or another error of the operating system,
    said as such."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return MISSING
    except OSError as e:  # e.g. ELOOP: a symlink loop is not a missing file
        return f"cannot be opened: {e.strerror or e}"
    if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
        return None  # a directory: the readers say so in their own words
    return not_regular(st)


def read_table(path: Path, columns=None) -> pd.DataFrame:
    """The file as a table. ``columns`` (JSONL only): keep just these keys, so
    a large JSONL trace is streamed line by line without holding its records."""
    suffix = path.suffix.lower()
    try:
        if path.stat().st_size == 0:
            raise TraceError(path, "file is empty")
        if suffix == ".json":
            with open(path, "r", encoding="utf-8-sig") as f:
                try:
                    obj = json.load(f, object_pairs_hook=_unique_keys(path))
                except json.JSONDecodeError as e:
                    raise TraceError(path, f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
            return _records_frame(path, obj)
        if suffix in (".jsonl", ".ndjson"):
            return _read_jsonl(path, columns)
        if suffix == ".csv":
            _check_csv_header(path)
            return pd.read_csv(path, encoding="utf-8-sig", skipinitialspace=True)
        if suffix in (".parquet", ".pq"):
            import pyarrow.parquet as pq  # local: loaded for a parquet trace alone (startup)

            _check_unique(path, pq.read_schema(path).names, "column")
            return pd.read_parquet(path)
    except TraceError:
        raise
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as e:
        raise TraceError(path, f"cannot read file ({type(e).__name__}: {e})") from None
    except Exception as e:  # pyarrow raises its own error types on corrupt files
        raise TraceError(path, f"cannot read file ({type(e).__name__}: {e})") from None
    raise TraceError(path, f"unsupported extension '{suffix}' (use .json, .jsonl, .ndjson, .csv, .parquet)")



def refuse_repeated_keys(error):
    """``json`` ``object_pairs_hook`` refusing an object with a repeated key
    (``json`` would silently keep the last value): raises ``error(key)``. Trace
    files and BF-IO instance files (:mod:`bfio.solvers.instance`) both use it."""

    def hook(pairs):
        obj = dict(pairs)
        if len(obj) != len(pairs):
            seen = set()
            for k, _ in pairs:
                if k in seen:
                    raise error(k)
                seen.add(k)
        return obj

    return hook


def _unique_keys(path: Path):
    """:func:`refuse_repeated_keys` for a trace file: the error names the file and the key."""
    return refuse_repeated_keys(
        lambda k: TraceError(path, "key appears twice in one record (which value is meant is ambiguous)", field=k))


def _check_unique(path: Path, names, what: str) -> None:
    seen = set()
    for k in names:
        if k in seen:
            raise TraceError(path, f"{what} name appears twice in the header (which one is meant is ambiguous)",
                             field=k)
        seen.add(k)


def _check_csv_header(path: Path) -> None:
    """pandas renames a repeated CSV column ``a`` to ``a.1``; refuse it instead."""
    import csv

    with open(path, "r", encoding="utf-8-sig", newline="") as f:
        header = next(csv.reader(f, skipinitialspace=True), [])
    _check_unique(path, [h.strip() for h in header], "column")


#: A key token of a JSON object: a closing quote, optional white space, a colon
#: (``"a": 1`` and ``"a" : 1`` alike). More tokens on a line than the record has
#: keys means a repeated key, or a key inside a string or nested object: the line
#: is parsed again with the hook that names a repeated key.
_KEY_TOKEN = re.compile(r'"\s*:')


def _read_jsonl(path: Path, columns) -> pd.DataFrame:
    """JSON Lines, one object per line, streamed: only ``columns`` are kept (all
    keys when ``None``); a key missing from a line is a missing value (NaN)."""
    hook = _unique_keys(path)
    keep = None if columns is None else list(dict.fromkeys(columns))
    data: dict[str, list] = {} if keep is None else {c: [] for c in keep}
    seen: dict[str, None] = {}
    n = 0
    with open(path, "r", encoding="utf-8-sig") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                # a repeated key collapses silently: when the line has more
                # '"key":' tokens than the record has keys, parse it again
                # with the hook that names the repeated key
                if isinstance(rec, dict) and len(_KEY_TOKEN.findall(line)) != len(rec):
                    json.loads(line, object_pairs_hook=hook)
            except json.JSONDecodeError as e:
                raise TraceError(path, f"line {lineno} is not valid JSON ({e.msg})", row=n) from None
            except TraceError as e:
                raise TraceError(path, f"line {lineno}: key appears twice in one record", row=n,
                                 field=e.field) from None
            if not isinstance(rec, dict):
                raise TraceError(path, f"line {lineno} is a {type(rec).__name__}, expected a JSON object", row=n)
            if len(seen) < 10_000:
                seen.update(dict.fromkeys(rec))
            if keep is None:
                for k in rec:
                    if k not in data:
                        data[k] = [None] * n
                for k, col in data.items():
                    col.append(rec.get(k))
            else:
                for k in keep:
                    data[k].append(rec.get(k, None))
            n += 1
    if n == 0:
        return pd.DataFrame()
    # a requested key that never occurs is a missing column, reported by
    # bfio.traces.validation.validate_columns
    frame = pd.DataFrame({k: _column(v) for k, v in data.items() if k in seen})
    frame.attrs["available"] = list(seen)
    return frame


def _column(values: list) -> pd.Series:
    """A list of JSON values as a column, dtype inferred as ``DataFrame.from_records`` does."""
    return pd.Series(values)


def _records_frame(path: Path, obj) -> pd.DataFrame:
    if isinstance(obj, dict):
        if "data" not in obj:
            raise TraceError(path, "JSON object has no 'data' key (expected {'data': [{...}, ...]})", field="data")
        obj = obj["data"]
        if not isinstance(obj, list):
            raise TraceError(path, f"'data' is a {type(obj).__name__}, expected a list of records", field="data")
    if not isinstance(obj, list):
        raise TraceError(path, f"top-level JSON is a {type(obj).__name__}, expected an object or a list of records")
    for row, rec in enumerate(obj):
        if not isinstance(rec, dict):
            raise TraceError(path, f"record is a {type(rec).__name__}, expected a JSON object", row=row)
    return pd.DataFrame.from_records(obj) if obj else pd.DataFrame()
