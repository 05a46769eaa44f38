"""Pipeline outputs on disk: JSON and files written atomically (temp file,
then rename, so a failed job leaves nothing half-written; devices, pipes and
symlink targets written where they are, never replaced), run summaries read
back with a clear error, and the runs of an experiment collected into a table.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from bfio.ground.errors import BfioError


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        x = float(x)
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    return x


def output_target(path) -> Path:
    """The file an output at ``path`` really goes to: symlinks followed to their
    target (a dangling link to the file it names), so the link survives and the
    target is written. A symlink loop raises :class:`~bfio.ground.errors.BfioError`."""
    path = Path(path)
    try:
        return path.resolve()
    except RuntimeError:  # Python 3.11 raises RuntimeError on a symlink loop
        raise BfioError(f"output {path}: symlink loop, cannot tell which file to write") from None
    except OSError:  # e.g. a path under a regular file: the caller's checks name it
        return Path(os.path.abspath(path))


def output_kind(path: Path) -> str:
    """How an output at ``path`` (a resolved :func:`output_target`) is written:
    ``'file'`` (a regular file, or none yet: temporary file, then rename),
    ``'in place'`` (a character or block device such as ``/dev/null``, or a
    named pipe: a rename would replace it), or what else it is (``'a
    directory'``, ``'a socket'``, ``'not a file'``), which cannot be written."""
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "file"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode):
        return "in place"
    return "a directory" if stat.S_ISDIR(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a file"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path):
    """Yield the path to write ``path``'s content to, so that ``path`` is either
    complete or unchanged:

    - a regular file (or a new one): a temporary file beside it, renamed over it
      on success (``os.replace``, atomic on one file system) and removed on
      failure, with the permissions the umask gives a new file; a killed job
      leaves no truncated output that a rerun would take as done;
    - a symlink: the same, at its target (the link is kept);
    - a device or a named pipe (``/dev/null``, ``/dev/stdout``, a FIFO): the path
      itself, written in place (a rename would replace the device);
    - a socket or a directory: refused with :class:`~bfio.ground.errors.BfioError`.
    """
    target = output_target(path)
    kind = output_kind(target)
    if kind == "in place":
        yield target
        return
    if kind != "file":
        raise BfioError(f"output {path}: is {kind}, cannot write it")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp" + "".join(target.suffixes))
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_json(obj, path) -> None:
    """``obj`` as JSON at ``path``, written atomically (temp file, then rename)."""
    text = json.dumps(_jsonable(obj), indent=1, sort_keys=True) + "\n"
    with atomic_path(path) as tmp:
        tmp.write_text(text)



def read_summary(path) -> dict:
    """A run summary; a missing, truncated or non-object file raises
    :class:`~bfio.ground.errors.BfioError` naming it (delete it and rerun)."""
    try:
        with open(path) as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise BfioError(f"file {path}: not valid JSON ({e.msg} at line {e.lineno} column {e.colno}); the run "
                        "summary is truncated or corrupt: delete it and rerun its job") from None
    except (OSError, UnicodeDecodeError) as e:
        raise BfioError(f"file {path}: cannot read run summary ({e})") from None
    if not isinstance(data, dict):
        raise BfioError(f"file {path}: run summary is a {type(data).__name__}, expected a JSON object")
    return data


def collect_runs(paths, experiment: str | None = None) -> pd.DataFrame:
    """One row per run summary (flat columns; ``policy_options`` kept as JSON text)."""
    rows = []
    for p in paths:
        s = read_summary(p)
        s = {k: (json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v) for k, v in s.items()}
        if experiment is not None:
            s["experiment"] = experiment
        rows.append(s)
    frame = pd.DataFrame(rows)
    if "horizon" in frame:
        frame["horizon"] = frame["horizon"].astype("Int64")
    return frame


