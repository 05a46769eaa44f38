"""Reading and validating request traces.

Two families of input are supported:

* the paper's trace files (``paper-traces/*.json``): a JSON object whose ``data``
  key holds ``{"input_length": int, "output_length": int}`` records;
* generic tables (CSV, JSONL, JSON array of records, Parquet) where the user
  names the prefill, decode and (optional) arrival columns.

Every row is validated; a bad value raises :class:`~bfio.errors.TraceError`
naming the file, the 0-based data row and the field. Nothing is dropped or
clipped. Known traces (:data:`~bfio.traces.registry.KNOWN_TRACES`) are looked
up by name in a data directory and their sha256 is verified against the pinned
value. This package holds :class:`Trace` and :func:`load_trace`; the file
formats are :mod:`bfio.traces.formats`, the row checks
:mod:`bfio.traces.validation`, the known traces :mod:`bfio.traces.registry`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from bfio.errors import TraceError
from bfio.traces.formats import read_table
from bfio.traces.registry import (  # noqa: F401  (re-exported: the names users import from bfio.traces)
    KNOWN_TRACES, TRACE_ALIASES, TraceSpec, default_data_dir, resolve_trace, sha256_of, verify_sha256)
from bfio.traces.validation import validate_columns


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
    frame = read_table(path, columns=[c for c in (prefill_col, decode_col, arrival_col) if c is not None])
    name = spec.name if spec else path.stem
    prefill, decode, arrival = validate_columns(frame, path, prefill_col, decode_col, arrival_col)
    return Trace(name, str(path), prefill, decode, arrival)
