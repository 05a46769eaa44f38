"""Canonical trace tables: a trace file verified against its pinned sha256,
every row validated and written once as ``results/traces/<trace>.parquet``
(``prefill_tokens``, ``decode_tokens``[, ``arrival_s``]) with its statistics
(pipeline rule ``prepare_trace``); every simulation job then reads the table
(:func:`read_trace_table`) instead of parsing and checking the trace again.

Only the trace package, pandas and the results' writers: the trace jobs start
without the simulator's imports (numba among them).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from bfio.ground.errors import ChecksumError, TraceError
from bfio.ground.results_io import atomic_path, write_json
from bfio.traces import load_trace
from bfio.traces.formats import unreadable
from bfio.traces.registry import KNOWN_TRACES, TraceSpec, sha256_of, verify_sha256


def _quantiles(x: np.ndarray) -> dict:
    x = np.asarray(x, dtype=float)
    return {"mean": float(x.mean()), "std": float(x.std(ddof=1)) if x.size > 1 else 0.0,
            "min": float(x.min()), "p50": float(np.percentile(x, 50)), "p90": float(np.percentile(x, 90)),
            "p99": float(np.percentile(x, 99)), "max": float(x.max())}


def trace_stats(frame: pd.DataFrame) -> dict:
    """Summary statistics of a canonical trace table."""
    out = {"rows": int(len(frame)),
           "prefill_tokens": _quantiles(frame["prefill_tokens"]),
           "decode_tokens": _quantiles(frame["decode_tokens"])}
    if "arrival_s" in frame:
        a = frame["arrival_s"].to_numpy(dtype=float)
        span = float(a.max() - a.min())
        out["arrival_s"] = {"span": span, "rate_per_s": float(len(a) / span) if span > 0 else float("nan")}
    return out


def prepare_trace(name: str, source, out_table, out_stats, spec: TraceSpec | None = None) -> dict:
    """Verify ``source`` against trace ``name``'s pinned sha256, validate every
    row and write the canonical table (parquet) and its statistics (JSON).

    ``spec`` describes a trace the project does not know (``extra_traces``, see
    :func:`trace_specs`); its sha256 is verified only when pinned."""
    spec = spec or KNOWN_TRACES[name]
    source = Path(source)
    problem = unreadable(source)
    if problem is not None:
        raise TraceError(source, problem)
    if name in KNOWN_TRACES:
        digest = verify_sha256(source, spec.sha256, recovery="pipeline", size=spec.size)
    else:
        digest = sha256_of(source)
    if spec.sha256 and digest != spec.sha256:
        raise ChecksumError(source, f"sha256 is {digest}, expected {spec.sha256} for trace '{name}' (config key "
                                    f"'extra_traces.{name}.sha256': fix the file or the pinned digest)")
    trace = load_trace(str(source), prefill_col=spec.prefill_col, decode_col=spec.decode_col,
                       arrival_col=spec.arrival_col, arrival_unit=spec.arrival_unit, hash_col=spec.hash_col,
                       block_tokens=spec.block_tokens, verify=False)
    frame = trace.to_frame()
    with atomic_path(out_table) as tmp:
        frame.to_parquet(tmp, index=False)
    stats = {"trace": name, "description": spec.description, "source": str(source), "sha256": digest,
             "url": spec.url, "columns": {"prefill_tokens": spec.prefill_col, "decode_tokens": spec.decode_col,
                                         "arrival_s": spec.arrival_col},
             **trace_stats(frame)}
    write_json(stats, out_stats)
    return stats


def read_trace_table(path) -> pd.DataFrame:
    try:
        frame = pd.read_parquet(path)
    except Exception as e:  # pyarrow raises its own types on truncated files
        raise TraceError(path, f"cannot read canonical trace table ({type(e).__name__}: {e}); delete it and "
                               "rerun its job") from None
    missing = {"prefill_tokens", "decode_tokens"} - set(frame.columns)
    if missing:
        raise TraceError(path, f"canonical trace table lacks columns {sorted(missing)}")
    return frame


__all__ = ["prepare_trace", "trace_stats", "read_trace_table"]
