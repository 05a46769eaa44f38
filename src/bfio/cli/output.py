"""Writing the command line's outputs: JSON (``--json``), per-step and
per-request tables (``--series``, ``--per-request``), each checked writable
before any work is done and written all or nothing through
:func:`bfio.ground.results_io.atomic_path` (a regular file complete or unchanged; a
device, pipe or symlink target written in place, never replaced)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import tempfile
from pathlib import Path

from bfio.ground.errors import BfioError, ConfigError
from bfio.ground.results_io import atomic_path, output_kind, output_target


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




def json_text(obj) -> str:
    """``obj`` as the JSON text the command line writes."""
    return json.dumps(_clean(obj), indent=2, sort_keys=True) + "\n"


def write_json(obj, dest: str, option: str = "--json") -> None:
    """Write ``obj`` as JSON to ``dest`` (``-`` for stdout): a file is either
    complete or unchanged, never partial."""
    write_outputs([(dest, json_output(obj), option)])


def json_output(obj):
    """A writer of ``obj`` as JSON for :func:`write_outputs`: to a path, or to a
    text stream (standard output, for ``-``)."""
    text = json_text(obj)
    return lambda target: target.write(text) if hasattr(target, "write") else Path(target).write_text(text)


FRAME_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def frame_output(frame, dest: str, option: str):
    """A writer of ``frame`` for :func:`write_outputs`, its format from ``dest``'s
    extension (CSV or Parquet)."""
    kind = FRAME_SUFFIXES.get(Path(dest).suffix.lower())
    if kind is None:
        raise ConfigError(f"{option} {dest}: unknown extension '{Path(dest).suffix}' (use {', '.join(FRAME_SUFFIXES)})")
    return (lambda path: frame.to_parquet(path)) if kind == "parquet" else (lambda path: frame.to_csv(path))


def check_writable(dest: str, option: str, suffixes=None) -> None:
    """Refuse, before any work is done, an output ``dest`` that cannot be
    written: a directory, a socket, a symlink loop, a path under a file, a
    directory without write permission, or (``suffixes``) an unknown extension.
    ``-`` (stdout) passes; so do a writable device or named pipe (written in
    place) and a symlink whose target can be written."""
    if dest == "":
        raise ConfigError(f"{option}: empty path (use - for standard output)")
    if dest == "-" and suffixes is None:
        return
    path = Path(dest)
    try:
        target = output_target(path)
    except BfioError as e:
        raise _option_error(option, e) from None
    kind = output_kind(target)
    if kind == "a directory":
        raise ConfigError(f"{option} {dest}: is a directory, expected a file path")
    if suffixes is not None and path.suffix.lower() not in suffixes:
        raise ConfigError(f"{option} {dest}: unknown extension '{path.suffix}' (use {', '.join(suffixes)})")
    if kind not in ("file", "in place"):
        raise ConfigError(f"{option} {dest}: is {kind}, expected a file path")
    if kind == "in place":
        if not os.access(target, os.W_OK):
            raise ConfigError(f"{option} {dest}: is not writable")
        return
    parent = target.parent
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
    if target.exists() and not os.access(target, os.W_OK):
        raise ConfigError(f"{option} {dest}: file is not writable")


def check_distinct(outputs) -> None:
    """Refuse two options that name the same file (after following symlinks):
    one would overwrite the other. ``-`` and devices (``/dev/null``) may repeat."""
    seen: dict[Path, str] = {}
    for dest, option in outputs:
        if not dest or dest == "-":
            continue
        target = output_target(dest)
        if output_kind(target) != "file":
            continue
        if target in seen:
            raise ConfigError(f"{option} {dest}: the same file as {seen[target]}; give each output its own path")
        seen[target] = option


def write_outputs(outputs) -> None:
    """Write every ``(dest, write, option)`` all or nothing: each file goes to a
    temporary beside it and all are renamed into place only when every write
    succeeded; an OS error names the option and the file and leaves every
    output unchanged. ``-`` goes to standard output, after the files."""
    stdout = [write for dest, write, _ in outputs if dest == "-"]
    option = dest = None
    try:
        with contextlib.ExitStack() as stack:
            for dest, write, option in outputs:
                if dest != "-":
                    write(stack.enter_context(atomic_path(dest)))
    except OSError as e:
        raise ConfigError(f"{option} {dest}: cannot write ({e.strerror or e})") from None
    except BfioError as e:
        raise _option_error(option, e) from None
    for write in stdout:  # only JSON may go to '-' (tables need an extension)
        write(sys.stdout)


def _option_error(option: str, e: BfioError) -> ConfigError:
    """A :mod:`bfio.ground.results_io` error (``output <path>: ...``) as the option's error."""
    return ConfigError(f"{option} {e}".replace("output ", "", 1))


def write_frame(frame, dest: str, option: str = "--series") -> None:
    """Write ``frame`` to ``dest`` (CSV or Parquet by extension), complete or unchanged."""
    write_outputs([(dest, frame_output(frame, dest, option), option)])
