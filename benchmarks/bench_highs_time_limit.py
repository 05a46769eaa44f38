"""Does the HiGHS time limit hold? (issue 12, item 2)

Builds routing calls of the size that overran the limit (G = 256, H = 40,
1,024 waiting) and smaller ones, solves each with ``solve(inst, "highs",
time_limit_s=L)`` and reports the wall time against the limit, the model size,
and what happened (solved, time limit, or refused as too large).

Two shapes of call:

- ``rampup``: an empty cluster (every worker has all B slots free), every
  waiting request admitted -- the calls at the start of a run;
- ``steady``: a full cluster with a few free slots per worker, admission a real
  choice among the waiting requests.

``--max-binaries`` overrides the backend's size bound
(:data:`bfio.solvers.highs.MAX_BINARIES`) to time HiGHS itself on models it
would otherwise refuse; ``--cli`` also runs ``bfio solve --solver highs
--time-limit-s L`` on the saved instance (process start included).

    PYTHONPATH=src python benchmarks/bench_highs_time_limit.py --limit 20
    PYTHONPATH=src python benchmarks/bench_highs_time_limit.py --limit 5 --max-binaries 1000000 --shapes rampup
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bfio.solvers import SolverError, solve
from bfio.solvers.instance import Instance, save_instance
from bfio.solvers.model import model_size


def make_call(shape: str, workers: int, waiting: int, horizon: int, slots: int = 72, seed: int = 0,
              lifetimes: bool = False, discount: float = 1.0) -> Instance:
    """A routing call shaped like Table 1's (G workers, B slots, LongBench-like sizes)."""
    rng = np.random.default_rng(seed)
    h = np.arange(horizon + 1)
    base = np.zeros((workers, horizon + 1), dtype=np.int64)
    free = np.full(workers, slots, dtype=np.int64)
    if shape == "steady":
        for g in range(workers):
            active = int(rng.integers(slots - 4, slots + 1))
            free[g] = slots - active
            load = rng.integers(1, 4000, size=active)
            remaining = rng.integers(1, 400, size=active)
            base[g] = ((load[:, None] + h[None, :]) * (h[None, :] < remaining[:, None])).sum(axis=0)
    elif shape != "rampup":
        raise SystemExit(f"--shapes: expected rampup | steady, got {shape!r}")
    sizes = rng.integers(1, 2000, size=waiting)
    ages = np.sort(rng.integers(0, 30, size=waiting))[::-1]
    life = rng.integers(1, 400, size=waiting) if lifetimes else None
    return Instance(base=base, free=free, sizes=sizes, ages=ages, admission="free", lifetimes=life,
                    discount=discount, meta={"shape": shape})


def run_one(inst: Instance, limit: float, max_binaries: int | None) -> dict:
    import bfio.solvers.highs as highs_mod

    saved = highs_mod.MAX_BINARIES
    if max_binaries is not None:
        highs_mod.MAX_BINARIES = max_binaries
    nv, nr, nb = model_size(inst)
    row = {"shape": inst.meta["shape"], "workers": inst.workers, "horizon": inst.horizon,
           "waiting": inst.waiting, "admissible": inst.admissible, "binaries": nb, "variables": nv, "rows": nr,
           "limit_s": limit}
    t0 = time.perf_counter()
    try:
        sol = solve(inst, "highs", time_limit_s=limit)
        row.update(outcome=sol.status, proven_optimal=sol.proven_optimal, gap=sol.gap)
    except SolverError as e:
        row.update(outcome="refused", message=str(e))
    finally:
        highs_mod.MAX_BINARIES = saved
    row["wall_s"] = time.perf_counter() - t0
    row["over_limit_s"] = row["wall_s"] - limit
    row["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    row["max_rss_child_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # guarded HiGHS
    return row


def run_cli(inst: Instance, limit: float) -> dict:
    with tempfile.TemporaryDirectory() as d:
        path = save_instance(inst, Path(d) / "call.json")
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "bfio.cli", "solve", "--instance", str(path), "--solver", "highs",
                            "--time-limit-s", str(limit)], capture_output=True, text=True)
        wall = time.perf_counter() - t0
    try:
        out = json.loads(p.stdout)
        outcome = out.get("status")
    except json.JSONDecodeError:
        outcome = f"exit {p.returncode}: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ''}"
    return {"shape": inst.meta["shape"], "cli": True, "limit_s": limit, "wall_s": wall,
            "over_limit_s": wall - limit, "exit": p.returncode, "outcome": outcome}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=float, default=20.0, help="time limit in seconds (default 20)")
    ap.add_argument("--workers", type=int, default=256)
    ap.add_argument("--waiting", type=int, default=1024)
    ap.add_argument("--horizon", type=int, default=40)
    ap.add_argument("--shapes", default="rampup,steady")
    ap.add_argument("--lifetimes", action="store_true", help="random new-request lifetimes")
    ap.add_argument("--discount", type=float, default=1.0)
    ap.add_argument("--max-binaries", type=int, default=None, help="override the HiGHS size bound")
    ap.add_argument("--cli", action="store_true", help="also time 'bfio solve' in a subprocess")
    args = ap.parse_args(argv)
    for shape in args.shapes.split(","):
        inst = make_call(shape, args.workers, args.waiting, args.horizon, lifetimes=args.lifetimes,
                         discount=args.discount)
        print(json.dumps(run_one(inst, args.limit, args.max_binaries)), flush=True)
        if args.cli:
            print(json.dumps(run_cli(inst, args.limit)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
