"""Compare two ``results/`` trees number for number (issue 14).

A refactor or a speed-up must leave every table, run summary and per-step
series unchanged. This compares the files two versions of the pipeline wrote:
CSV and Parquet as exact data frames, JSON as exact values, ``.npy`` arrays
exactly, text (Markdown, reST) line by line. Only measured durations differ
between two honest runs; they are left out by name (:data:`VOLATILE`: wall
times and routing-call timings).

    python -m bfio.runs.results_diff results_before/ results_after/

prints one line per differing or missing file and exits 1 if there is any.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

#: Keys and columns that measure time on the machine, not the simulated system.
VOLATILE = re.compile(r"(^|_)wall(_|$)|^solver_s_|^route_s_|_wall_s$|^elapsed")
#: Files that only hold such timings (the theory checks' ``timing_<check>.json``).
VOLATILE_FILES = re.compile(r"(^|/)timing_[^/]*\.json$")


def _drop_volatile(value):
    if isinstance(value, dict):
        return {k: _drop_volatile(v) for k, v in value.items() if not VOLATILE.search(str(k))}
    if isinstance(value, list):
        return [_drop_volatile(v) for v in value]
    return value


def without_timings(value):
    """``value`` (a JSON-like dict or list, or a table) without the keys or
    columns that measure the machine (:data:`VOLATILE`): what ``bfio simulate
    --no-timings`` writes, the same bytes on every run."""
    if isinstance(value, pd.DataFrame):
        return value.drop(columns=[c for c in value.columns if VOLATILE.search(str(c))])
    return _drop_volatile(value)


def _frames_equal(a: pd.DataFrame, b: pd.DataFrame) -> str | None:
    keep_a = [c for c in a.columns if not VOLATILE.search(str(c))]
    keep_b = [c for c in b.columns if not VOLATILE.search(str(c))]
    if keep_a != keep_b:
        return f"columns differ: {sorted(set(keep_a) ^ set(keep_b))}"
    try:
        pd.testing.assert_frame_equal(a[keep_a], b[keep_b], check_exact=True)
    except AssertionError as exc:
        return str(exc).splitlines()[0] + " " + " ".join(str(exc).splitlines()[1:4])
    return None


def _volatile_line(line: str) -> bool:
    return bool(re.search(r"wall|routing call", line, re.IGNORECASE))


def compare_file(a: Path, b: Path) -> str | None:
    """``None`` if the two files hold the same numbers, else what differs."""
    suffix = a.suffix.lower()
    if suffix == ".csv":
        return _frames_equal(pd.read_csv(a), pd.read_csv(b))
    if suffix == ".parquet":
        return _frames_equal(pd.read_parquet(a), pd.read_parquet(b))
    if suffix == ".json":
        da, db = (_drop_volatile(json.loads(p.read_text())) for p in (a, b))
        return None if da == db else "values differ"
    if suffix == ".npy":
        return None if np.array_equal(np.load(a), np.load(b)) else "arrays differ"
    la = [x for x in a.read_text(errors="replace").splitlines() if not _volatile_line(x)]
    lb = [x for x in b.read_text(errors="replace").splitlines() if not _volatile_line(x)]
    if la != lb:
        k = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
        return f"line {k + 1} differs"
    return None


def compare_trees(a: Path, b: Path) -> list[tuple[str, str]]:
    """``(relative path, what differs)`` for every differing, missing or extra file."""
    a, b = Path(a), Path(b)
    for root in (a, b):
        if not root.is_dir():
            raise FileNotFoundError(f"results_diff: {root} is not a directory")
    fa = {p.relative_to(a) for p in a.rglob("*") if p.is_file()}  # timing files: presence compared, content not
    fb = {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    out = [(str(p), f"only in {a}") for p in sorted(fa - fb)]
    out += [(str(p), f"only in {b}") for p in sorted(fb - fa)]
    for p in sorted(fa & fb):
        if VOLATILE_FILES.search(p.as_posix()):
            continue
        diff = compare_file(a / p, b / p)
        if diff is not None:
            out.append((str(p), diff))
    return out


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m bfio.runs.results_diff RESULTS_A RESULTS_B", file=sys.stderr)
        return 2
    diffs = compare_trees(Path(args[0]), Path(args[1]))
    for path, what in diffs:
        print(f"{path}: {what}")
    n = sum(1 for p in Path(args[0]).rglob("*") if p.is_file())
    print(f"{len(diffs)} differing of {n} files" if diffs else f"identical: {n} files, same numbers")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
