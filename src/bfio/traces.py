"""Reading and validating request traces.

Two families of input are supported:

* the paper's trace files (``paper-traces/*.json``): a JSON object whose ``data``
  key holds ``{"input_length": int, "output_length": int}`` records;
* generic tables (CSV, JSONL, JSON array of records, Parquet) where the user
  names the prefill, decode and (optional) arrival columns.

Every row is validated; a bad value raises :class:`~bfio.errors.TraceError`
naming the file, the 0-based data row and the field. Nothing is dropped or
clipped. Known traces (:data:`KNOWN_TRACES`) are looked up by name in a data
directory and their sha256 is verified against the pinned value.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bfio.errors import ChecksumError, TraceError
from bfio.limits import MAX_DECODE, MAX_PREFILL

PAPER_TRACE_SOURCE = (
    "https://raw.githubusercontent.com/Echoscd/Load-Balancing-Release/"
    "6ae705d5c18e475a1f0a7ed6697c722b76a07d98/{file}"
)
AZURE_TRACE_SOURCE = (
    "https://raw.githubusercontent.com/Azure/AzurePublicDataset/"
    "b469a113cedca53ddc3bdea71a143dc4b7d8700c/data/{file}"
)
# The further traces' origins (../shared/data/README.md: repository @ commit : path).
VIDUR_ARXIV_SOURCE = (
    "https://raw.githubusercontent.com/microsoft/vidur/7d47513363ec447a741ac5e47241580b47724fbf/"
    "data/processed_traces/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv"
)
SARATHI_SHAREGPT_SOURCE = (
    "https://raw.githubusercontent.com/microsoft/sarathi-serve/72339db5b120614033b317880ad3a05a5e4c9415/"
    "data/processed_traces/sharegpt_8k_filtered_stats_llama2_tokenizer.csv"
)
SHAREGPT_10K_SOURCE = (
    "https://raw.githubusercontent.com/AKafakA/vidur_opt_scheduler/20bdc49d6c1d23de84c9d4e7a8626ea33fe498f4/"
    "data/trace_data/sharegpt/sharegpt_val_10k_llama2.csv"
)


@dataclass(frozen=True)
class TraceSpec:
    """A trace the project knows by name: where it lives under the data
    directory, its pinned sha256, its columns and (if any) a public source."""

    name: str
    relpath: str
    sha256: str
    prefill_col: str
    decode_col: str
    arrival_col: str | None = None
    url: str | None = None
    description: str = ""
    #: data rows of the pinned file (config cross-checks, e.g. replay windows)
    rows: int | None = None
    #: bytes of the pinned file (what a download costs; README "Data")
    size: int | None = None


KNOWN_TRACES: dict[str, TraceSpec] = {
    t.name: t
    for t in [
        TraceSpec("longbench", "paper-traces/longbench_data_8000.json",
                  "03677fdcc5d46eb6fe47fffb7de07b43f95ab2395db48430d8dc4071dde1d8c7",
                  "input_length", "output_length",
                  url=PAPER_TRACE_SOURCE.format(file="longbench_data_8000.json"),
                  rows=8000, size=546843, description="LongBench-v2 (paper Table 1)"),
        TraceSpec("burstgpt", "paper-traces/burst_data_8000.json",
                  "f030a60ce35565661e0669484037f823af68a48fcf51e9ef043c9223e4580361",
                  "input_length", "output_length",
                  url=PAPER_TRACE_SOURCE.format(file="burst_data_8000.json"),
                  rows=8000, size=525317, description="BurstGPT (paper Table 2)"),
        TraceSpec("arxiv", "paper-traces/arxiv_data_8000.json",
                  "6c45abface3b26619953fd91c981ec93d861ac9910fccf3816103df3901f285f",
                  "input_length", "output_length",
                  url=PAPER_TRACE_SOURCE.format(file="arxiv_data_8000.json"),
                  rows=8000, size=1281545, description="arXiv summarization (paper repository)"),
        TraceSpec("azure_code", "azure-llm-2023/AzureLLMInferenceTrace_code.csv",
                  "54e9a6d2a4bd06ba1e060304b900abbc74cbea53de96506e60fe5bb4f2277fb6",
                  "ContextTokens", "GeneratedTokens", "TIMESTAMP",
                  url=AZURE_TRACE_SOURCE.format(file="AzureLLMInferenceTrace_code.csv"),
                  rows=8819, size=320117, description="Azure LLM inference 2023, code (CC-BY-4.0)"),
        TraceSpec("azure_conv", "azure-llm-2023/AzureLLMInferenceTrace_conv.csv",
                  "2f1e5b666d4e3055fdbba98598ce2ec307767b9064e03e2fa46676dbcc7d0bf8",
                  "ContextTokens", "GeneratedTokens", "TIMESTAMP",
                  url=AZURE_TRACE_SOURCE.format(file="AzureLLMInferenceTrace_conv.csv"),
                  rows=19366, size=719188, description="Azure LLM inference 2023, conversation (CC-BY-4.0)"),
        TraceSpec("vidur_arxiv", "vidur/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv",
                  "9d3580538d915ca75e4aaaa54590b42dbb17abc6d74c8913310cf07c232adcdc",
                  "num_prefill_tokens", "num_decode_tokens",
                  url=VIDUR_ARXIV_SOURCE,
                  rows=28257, size=884932, description="vidur arXiv summarization, Llama-2 tokenizer (MIT)"),
        TraceSpec("sarathi_sharegpt", "sarathi_serve/sharegpt_8k_filtered_stats_llama2_tokenizer.csv",
                  "6d6c296302a853e2669a674a96f269283e60c57e60363bd450588a1066919f9f",
                  "num_prefill_tokens", "num_decode_tokens",
                  url=SARATHI_SHAREGPT_SOURCE,
                  rows=30731, size=949600, description="sarathi-serve ShareGPT 8k filtered (Apache-2.0)"),
        TraceSpec("sharegpt_10k", "vidur_opt_scheduler/sharegpt_val_10k_llama2.csv",
                  "e8eb6769b07f47a44fcb8caecf78dfc247103d65f84c4053bd9ae593caa01c63",
                  "num_prefill_tokens", "num_decode_tokens",
                  url=SHAREGPT_10K_SOURCE,
                  rows=10000, size=278423, description="ShareGPT validation 10k, Llama-2 tokenizer (MIT)"),
        TraceSpec("longbench_v1", "longbench/longbench_v1_llama2-7b-chat-4k_lengths.csv",
                  "d69d97d67302d9e0c7a18096005eeb7e317cfa194cbc7ded4b3830c1d607b58f",
                  "est_prompt_tokens", "pred_tokens",
                  rows=4750, size=220223, description="LongBench v1 with llama2-7b-chat-4k outputs (MIT, derived)"),
    ]
}
TRACE_ALIASES = {"burst": "burstgpt", "longbench_v2": "longbench"}


@dataclass(frozen=True)
class Trace:
    """A validated trace: one ``(prefill, decode[, arrival_s])`` per row."""

    name: str
    path: str
    prefill: np.ndarray
    decode: np.ndarray
    arrival_s: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.prefill.shape[0])

    def to_frame(self) -> pd.DataFrame:
        """The canonical table: ``prefill_tokens``, ``decode_tokens`` [, ``arrival_s``]."""
        df = pd.DataFrame({"prefill_tokens": self.prefill, "decode_tokens": self.decode})
        if self.arrival_s is not None:
            df["arrival_s"] = self.arrival_s
        return df


def sha256_of(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def default_data_dir() -> Path:
    """``$BFIO_DATA_DIR`` if set, else ``../shared/data`` beside the checkout
    (searched from the working directory upwards)."""
    env = os.environ.get("BFIO_DATA_DIR")
    if env:
        return Path(env)
    for base in [Path.cwd(), *Path.cwd().parents]:
        cand = base / ".." / "shared" / "data"
        if cand.is_dir():
            return cand.resolve()
    return Path("../shared/data")


def resolve_trace(name_or_path, data_dir=None) -> tuple[Path, TraceSpec | None]:
    """Map a known trace name (e.g. ``longbench``) to its file, or pass a path through."""
    key = TRACE_ALIASES.get(str(name_or_path), str(name_or_path))
    if key in KNOWN_TRACES:
        spec = KNOWN_TRACES[key]
        root = Path(data_dir) if data_dir is not None else default_data_dir()
        return root / spec.relpath, spec
    return Path(name_or_path), None


def verify_sha256(path, expected: str) -> None:
    actual = sha256_of(path)
    if actual != expected:
        raise ChecksumError(path, f"sha256 is {actual}, expected {expected}; the file is not the pinned trace "
                                  "(re-download it or point the data directory at the original)")


def load_trace(name_or_path, prefill_col=None, decode_col=None, arrival_col=None,
               data_dir=None, verify: bool = True) -> Trace:
    """Load and validate a trace by known name or by path.

    Known names verify the pinned sha256 (``verify=False`` skips it). For paths,
    the format follows the extension: ``.json`` (paper object with ``data`` or
    an array of records), ``.jsonl``/``.ndjson``, ``.csv``, ``.parquet``/``.pq``.
    Column names default to the known trace's, or the paper's
    ``input_length``/``output_length``.
    """
    path, spec = resolve_trace(name_or_path, data_dir)
    if not path.exists():
        hint = ""
        if spec is not None:
            hint = (f"; trace '{spec.name}' is expected at {spec.relpath} under the data directory "
                    f"(set BFIO_DATA_DIR or --data-dir" + (f", or download it from {spec.url}" if spec.url else "") + ")")
        raise TraceError(path, "file does not exist" + hint)
    if spec is not None and verify:
        verify_sha256(path, spec.sha256)
    prefill_col = prefill_col or (spec.prefill_col if spec else "input_length")
    decode_col = decode_col or (spec.decode_col if spec else "output_length")
    if arrival_col is None and spec is not None:
        arrival_col = spec.arrival_col
    frame = _read_table(path, columns=[c for c in (prefill_col, decode_col, arrival_col) if c is not None])
    name = spec.name if spec else path.stem
    return _validate(frame, path, name, prefill_col, decode_col, arrival_col)


def _read_table(path: Path, columns=None) -> pd.DataFrame:
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
            import pyarrow.parquet as pq

            _check_unique(path, pq.read_schema(path).names, "column")
            return pd.read_parquet(path)
    except TraceError:
        raise
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as e:
        raise TraceError(path, f"cannot read file ({type(e).__name__}: {e})") from None
    except Exception as e:  # pyarrow raises its own error types on corrupt files
        raise TraceError(path, f"cannot read file ({type(e).__name__}: {e})") from None
    raise TraceError(path, f"unsupported extension '{suffix}' (use .json, .jsonl, .ndjson, .csv, .parquet)")


class _DuplicateKey(ValueError):
    def __init__(self, key):
        super().__init__(key)
        self.key = key


def _unique_keys(path: Path):
    """``object_pairs_hook`` refusing a JSON object with a repeated key (``json``
    would silently keep the last value)."""

    def hook(pairs):
        obj = dict(pairs)
        if len(obj) != len(pairs):
            seen = set()
            for k, _ in pairs:
                if k in seen:
                    raise TraceError(path, "key appears twice in one record (which value is meant is ambiguous)",
                                     field=k)
                seen.add(k)
        return obj

    return hook


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
                if isinstance(rec, dict) and line.count('":') != len(rec):
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
    # a requested key that never occurs is a missing column, reported by _validate
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


def _validate(frame: pd.DataFrame, path: Path, name: str, prefill_col, decode_col, arrival_col) -> Trace:
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
    return Trace(name, str(path), out["prefill"], out["decode"], arrival)


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
            if isinstance(v, bool) or v is None:
                raise TraceError(path, f"value {v!r} is not an integer token count", row=row, field=col)
            if isinstance(v, (int, np.integer, float, np.floating)) or (isinstance(v, str) and _is_number(v)):
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


def _arrival_seconds(series: pd.Series, path: Path, col: str) -> np.ndarray:
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
    return v


def _timestamps(series: pd.Series, path: Path, col: str) -> pd.Series:
    """Parse timestamps (unparseable values become NaT). Timestamps that all
    carry a UTC offset may differ in offset (e.g. across a DST change): they are
    compared in UTC. Mixing timestamps with and without an offset is ambiguous
    and refused, naming the first row that differs from row 0."""
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
