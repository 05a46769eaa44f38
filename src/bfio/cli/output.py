"""Writing the command line's outputs: JSON (``--json``), per-step and
per-request tables (``--series``, ``--per-request``), each checked writable
before any work is done and written atomically (complete or absent)."""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from pathlib import Path

from bfio.errors import ConfigError


def _clean(obj):
    """JSON-safe copy: NaN/inf become null, numpy scalars become Python numbers."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def write_json(obj, dest: str) -> None:
    """Write ``obj`` as JSON to ``dest`` (``-`` for stdout) atomically: a file is
    either complete or absent, never partial."""
    text = json.dumps(_clean(obj), indent=2, sort_keys=True) + "\n"
    if dest == "-":
        sys.stdout.write(text)
        return
    atomic_write(Path(dest), lambda tmp: tmp.write_text(text), "--json")


FRAME_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def check_writable(dest: str, option: str, suffixes=None) -> None:
    """Refuse, before any work is done, an output ``dest`` that cannot be
    written: a directory, a path under a file, a directory without write
    permission, or (``suffixes``) an unknown extension. ``-`` (stdout) passes."""
    if dest == "-" and suffixes is None:
        return
    path = Path(dest)
    if path.is_dir():
        raise ConfigError(f"{option} {dest}: is a directory, expected a file path")
    if suffixes is not None and path.suffix.lower() not in suffixes:
        raise ConfigError(f"{option} {dest}: unknown extension '{path.suffix}' (use {', '.join(suffixes)})")
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ConfigError(f"{option} {dest}: {parent} is a file, not a directory")
    try:
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=".bfio-write-check.")
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise ConfigError(f"{option} {dest}: cannot write in {parent} ({e.strerror or e})") from None
    if path.exists() and not os.access(path, os.W_OK):
        raise ConfigError(f"{option} {dest}: file is not writable")


def atomic_write(path: Path, write, option: str) -> None:
    """``write(tmp)`` to a temporary file beside ``path``, then rename it over
    ``path``; an OS error names the option and the file, and leaves nothing."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
        tmp = Path(name)
        write(tmp)
        os.replace(tmp, path)
    except OSError as e:
        raise ConfigError(f"{option} {path}: cannot write ({e.strerror or e})") from None
    finally:
        if tmp is not None and tmp.exists():
            tmp.unlink()



def write_frame(frame, dest: str, option: str = "--series") -> None:
    path = Path(dest)
    kind = FRAME_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise ConfigError(f"{option} {dest}: unknown extension '{path.suffix}' (use {', '.join(FRAME_SUFFIXES)})")
    atomic_write(path, (lambda tmp: frame.to_parquet(tmp)) if kind == "parquet" else (lambda tmp: frame.to_csv(tmp)),
                  option)
