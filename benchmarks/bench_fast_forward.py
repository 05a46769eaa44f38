"""Fast-forward of the step loop (issue 14): wall time of ``simulate`` before and after.

While no request waits, a routing call between two steps is a no-op until the
next arrival (or for good, once every request has entered); ``simulate`` then
runs those steps in one kernel call (``fast_forward=True``, the default) instead
of returning to Python after every step. Timestamp replays are mostly such steps
(a handful of active requests, an empty pool, the next arrival dozens of steps
away).

Columns: ``plain`` = ``simulate(..., fast_forward=False)`` (the same code one
step at a time), ``fast`` = the default, and with ``--baseline-src DIR`` also
``before`` = the package found in ``DIR`` (e.g. a ``git archive`` of the commit
before the change), run in a subprocess. Times exclude imports, trace loading and
numba compilation (warmed up first); best of ``--repeat``, wall clock and
process CPU time (steadier on a busy machine). Every run's metrics,
step counts and per-step series are compared across the columns (wall and
routing times aside) and the script exits 1 on any difference.

    PYTHONPATH=src python benchmarks/bench_fast_forward.py [--repeat 3] [--baseline-src /tmp/old/src]
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import subprocess
import sys
import time

import numpy as np

#: (label, trace, N, G, B, arrival mode, Poisson rate or time scale, dispatch, policy)
CASES = [
    ("azure_conv replay G=16 fcfs", "azure_conv", 4000, 16, 72, "trace", 1.0, "central", "fcfs"),
    ("azure_conv replay G=16 jsq_tokens", "azure_conv", 4000, 16, 72, "trace", 1.0, "central", "jsq_tokens"),
    ("azure_code replay G=16 vllm_dp inst", "azure_code", 4000, 16, 72, "trace", 1.0, "instant", "vllm_dp"),
    ("burstgpt poisson 50/s G=16 jsq_tok", "burstgpt", 4000, 16, 72, "poisson", 50.0, "central", "jsq_tokens"),
    ("burstgpt backlog G=16 fcfs", "burstgpt", 20000, 16, 72, "backlog", None, "central", "fcfs"),
]
TIMING_KEYS = ("wall_s", "route_s_p50", "route_s_p99", "route_s_total", "solver_s_p50", "solver_s_p99",
               "solver_s_max", "solver_s_total")


def _workload(trace_name, n, mode, x):
    from bfio.traces import load_trace
    from bfio.workloads.workload import draw_workload, poisson_arrivals, replay_workload, with_arrivals

    t = load_trace(trace_name)
    if mode == "trace":
        return replay_workload(t.prefill, t.decode, t.arrival_s, n=n, seed=42, time_scale=x, name=t.name)
    w = draw_workload(t.prefill, t.decode, n, 42, name=t.name)
    return with_arrivals(w, poisson_arrivals(n, x, 42)) if mode == "poisson" else w


def _fingerprint(result) -> dict:
    """Everything a run reports except wall and routing times: metrics, step
    counts and a hash of the per-step series and per-request frame."""
    m = {k: v for k, v in result.summary().items() if k not in TIMING_KEYS}
    h = hashlib.sha256()
    for frame in (result.series, result.requests):
        h.update(np.ascontiguousarray(frame.to_numpy(dtype=float)).tobytes())
    m["frames_sha256"] = h.hexdigest()
    return json.loads(json.dumps(m, default=str))


def run_cases(columns, repeat):
    """``{label: {column: (best wall s, best CPU s, fingerprint, steps)}}`` for ``columns``."""
    from bfio.simulator import simulate
    from bfio.workloads.workload import Workload

    has_ff = "fast_forward" in inspect.signature(simulate).parameters
    tiny = Workload(np.array([3, 4]), np.array([2, 1]), np.array([0.0, 1.0]))
    simulate(tiny, 2, 2, "jsq_tokens", entry="arrivals")  # compile / load the numba cache
    simulate(tiny, 2, 2, "vllm_dp", entry="arrivals", dispatch="instant")
    out = {}
    for label, trace, n, G, B, mode, x, dispatch, policy in CASES:
        w = _workload(trace, n, mode, x)
        out[label] = {}
        for col in columns:
            kw = {"fast_forward": col == "fast"} if has_ff else {}
            walls, cpus = [], []
            for _ in range(repeat):
                t0, c0 = time.perf_counter(), time.process_time()
                r = simulate(w, G, B, policy, entry="backlog" if mode == "backlog" else "arrivals",
                             dispatch=dispatch, show_progress=False, **kw)
                walls.append(time.perf_counter() - t0)
                cpus.append(time.process_time() - c0)
            out[label][col] = (min(walls), min(cpus), _fingerprint(r), r.steps)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline-src", help="src directory of the code before the change (run in a subprocess)")
    ap.add_argument("--emit-json", action="store_true", help=argparse.SUPPRESS)  # subprocess mode
    args = ap.parse_args()
    if args.emit_json:
        json.dump(run_cases(["before"], args.repeat), sys.stdout)
        return 0
    res = run_cases(["plain", "fast"], args.repeat)
    if args.baseline_src:
        env = {**os.environ, "PYTHONPATH": args.baseline_src}
        proc = subprocess.run([sys.executable, __file__, "--emit-json", "--repeat", str(args.repeat)], env=env,
                              capture_output=True, text=True, check=True)
        for label, cols in json.loads(proc.stdout).items():
            res[label]["before"] = tuple(cols["before"])
    ok = True
    cols = ["before", "plain", "fast"] if args.baseline_src else ["plain", "fast"]
    print("wall s (CPU s), best of", args.repeat)
    print(f"{'run':38s} {'steps':>7s} " + " ".join(f"{c:>15s}" for c in cols) + f" {'speedup':>13s}  identical")
    for label, r in res.items():
        prints = [r[c][2] for c in cols]
        same = all(p == prints[0] for p in prints)
        ok &= same
        speed = f"{r[cols[0]][0] / r['fast'][0]:.1f}x ({r[cols[0]][1] / r['fast'][1]:.1f}x)"
        print(f"{label:38s} {r['fast'][3]:7d} " + " ".join(f"{r[c][0]:6.3f} ({r[c][1]:6.3f})" for c in cols)
              + f" {speed:>13s}  {'yes' if same else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
