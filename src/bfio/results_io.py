"""Pipeline outputs on disk: JSON and files written atomically (temp file,
then rename, so a failed job leaves nothing half-written), run summaries read
back with a clear error, and the runs of an experiment collected into a table.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from bfio.errors import BfioError


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


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; on success it is renamed over
    ``path`` (``os.replace``, atomic on one file system), on failure removed.
    A killed job leaves no truncated output that a rerun would take as done."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp" + "".join(path.suffixes))
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.replace(tmp, path)
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
    :class:`~bfio.errors.BfioError` naming it (delete it and rerun)."""
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


