"""Reading and validating request traces.

Two families of input are supported:

* the paper's trace files (``paper-traces/*.json``): a JSON object whose ``data``
  key holds ``{"input_length": int, "output_length": int}`` records;
* generic tables (CSV, JSONL, JSON array of records, Parquet) where the user
  names the prefill, decode and (optional) arrival columns.

A trace may also carry each prompt's KV-block hashes (prefix caching,
:mod:`bfio.engine.prefix`; the Mooncake trace's ``hash_ids``), read into
:attr:`Trace.blocks` when a hash column is named.

Every row is validated; a bad value raises :class:`~bfio.ground.errors.TraceError`
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

from bfio.ground.errors import ConfigError, TraceError
from bfio.engine.prefix import PrefixBlocks
from bfio.traces.formats import MISSING, read_table, unreadable
from bfio.traces.registry import (  # noqa: F401  (re-exported: the names users import from bfio.traces)
    ARRIVAL_UNITS, KNOWN_TRACES, TRACE_ALIASES, TraceSpec, default_data_dir, resolve_trace, sha256_of, verify_sha256)
from bfio.traces.validation import validate_columns, validate_hashes


@dataclass(frozen=True)
class Trace:
    """A validated trace: one ``(prefill, decode[, arrival_s])`` per row, and
    optionally each row's prompt block hashes (``blocks``, prefix caching)."""

    name: str
    path: str
    prefill: np.ndarray
    decode: np.ndarray
    arrival_s: np.ndarray | None = None
    blocks: PrefixBlocks | None = None

    def __len__(self) -> int:
        return int(self.prefill.shape[0])

    def to_frame(self) -> pd.DataFrame:
        """The canonical table: ``prefill_tokens``, ``decode_tokens`` [, ``arrival_s``]
        [, ``block_hashes``: each prompt's KV-block hashes as a list]."""
        df = pd.DataFrame({"prefill_tokens": self.prefill, "decode_tokens": self.decode})
        if self.arrival_s is not None:
            df["arrival_s"] = self.arrival_s
        if self.blocks is not None:
            df["block_hashes"] = [self.blocks.blocks_of(i).tolist() for i in range(len(self.blocks))]
            df.attrs["block_tokens"] = self.blocks.block_tokens  # a trace given by path has no registry entry
        return df


def load_trace(name_or_path, prefill_col=None, decode_col=None, arrival_col=None,
               data_dir=None, verify: bool = True, *, arrival_unit: str | None = None,
               hash_col: str | None = None, block_tokens: int | None = None) -> Trace:
    """Load and validate a trace by known name or by path.

    Known names verify the pinned sha256 (``verify=False`` skips it). For paths,
    the format follows the extension: ``.json`` (paper object with ``data`` or
    an array of records), ``.jsonl``/``.ndjson``, ``.csv``, ``.parquet``/``.pq``.
    Column names default to the known trace's, or the paper's
    ``input_length``/``output_length``.

    ``arrival_unit`` (``s``, ``ms``, ``us``): the unit of a numeric arrival
    column, converted to seconds; default the known trace's (``ms`` for
    ``mooncake``), else ``s``. ``hash_col``: the column of prompt block hashes
    (default the known trace's, ``hash_ids`` for ``mooncake``; none otherwise),
    read into :attr:`Trace.blocks` with ``block_tokens`` tokens per block
    (default the known trace's; required for a path).
    """
    path, spec = resolve_trace(name_or_path, data_dir)
    problem = unreadable(path)
    if problem is not None:
        hint = ""
        if spec is not None and problem == MISSING:
            hint = (f"; trace '{spec.name}' is expected at {spec.relpath} under the data directory "
                    f"(set BFIO_DATA_DIR or --data-dir" + (f", or download it from {spec.url}" if spec.url else "") + ")")
        raise TraceError(path, problem + hint)
    if spec is not None and verify:
        verify_sha256(path, spec.sha256, size=spec.size)
    prefill_col = prefill_col or (spec.prefill_col if spec else "input_length")
    decode_col = decode_col or (spec.decode_col if spec else "output_length")
    if arrival_col is None and spec is not None:
        arrival_col = spec.arrival_col
    if arrival_unit is None:
        arrival_unit = spec.arrival_unit if spec else "s"
    if arrival_unit not in ARRIVAL_UNITS:
        raise ConfigError(f"arrival_unit: expected one of {', '.join(ARRIVAL_UNITS)}, got {arrival_unit!r}")
    if hash_col is None and spec is not None:
        hash_col = spec.hash_col
    if hash_col is not None:
        block_tokens = block_tokens if block_tokens is not None else (spec.block_tokens if spec else None)
        if isinstance(block_tokens, bool) or not isinstance(block_tokens, (int, np.integer)) or block_tokens < 1:
            raise ConfigError(f"block_tokens: the tokens per block of hash column '{hash_col}' must be an "
                              f"integer >= 1, got {block_tokens!r}")
    roles = {"prefill": prefill_col, "decode": decode_col, "arrival": arrival_col, "hash": hash_col}
    named = [(role, c) for role, c in roles.items() if c is not None]
    for k, (role, c) in enumerate(named):
        for other, c2 in named[k + 1:]:
            if c == c2:
                raise ConfigError(f"file {path}: the {role} and {other} columns are both '{c}'; each role "
                                  f"needs its own column ({role}_col / {other}_col)")
    columns = [c for _, c in named]
    frame = read_table(path, columns=columns)
    name = spec.name if spec else path.stem
    prefill, decode, arrival = validate_columns(frame, path, prefill_col, decode_col, arrival_col, arrival_unit)
    blocks = None if hash_col is None else validate_hashes(frame, path, hash_col, prefill, block_tokens)
    return Trace(name, str(path), prefill, decode, arrival, blocks)
