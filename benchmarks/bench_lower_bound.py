"""Certified gap of the ``auto`` placement at scale (issue 40): ``J(auto)`` against
:func:`bfio.solvers.bounds.lp_bound` on captured routing calls.

BurstGPT as in ``bench_scaling.py`` (``N = 1,500 G``, ``B = 72``, seed 42, oracle
predictor, BF-IO ``H = 20`` with the library's discount and lifetimes,
``placement: auto``, admission ``aging:200``: ``drain`` places requests before the
solver and cannot be captured). The run is stopped once ``--calls`` calls are
kept: every ``--every``-th routing call after the first ``--skip`` (warm-up).
Per call: ``J`` of ``auto`` (the fast solver with ``placement: auto``),
:func:`bfio.solvers.trivial_bound`, :func:`~bfio.solvers.bounds.lp_bound` and its
seconds; per ``G`` the certified gap ``(J - bound) / bound``, median and p95,
beside the trivial bound's (``(J - trivial) / |trivial|``; the trivial bound is
often negative on these calls).

    python benchmarks/bench_lower_bound.py [--workers 256,1024] [--calls 10] [--every 25] [--skip 150] [--json FILE]

Target (issue 40): median certified gap at most 1%. With BF-IO's defaults (``drain:100``,
whose placement sub-problem this capture cannot see): ``bench_certified_gap.py``.
"""

import argparse
import json
import sys
import time

import numpy as np

from bfio.policies import make_policy
from bfio.simulator import simulate
from bfio.solvers import solve, trivial_bound
from bfio.solvers.bounds import lp_bound
from bfio.traces import load_trace
from bfio.workloads.workload import draw_workload

SLOTS = 72
PER_WORKER = 1_500
SEED = 42
HORIZON = 20
ADMISSION = "aging:200"


class _Enough(Exception):
    pass


def capture(G: int, calls: int, every: int, skip: int) -> list:
    """Instances of ``calls`` routing calls of a BF-IO run on ``G`` workers (see the module docstring)."""
    t = load_trace("burstgpt")
    w = draw_workload(t.prefill, t.decode, PER_WORKER * G, SEED)
    policy = make_policy("bfio", seed=SEED, horizon=HORIZON, admission=ADMISSION, placement="auto")
    kept, count = [], [0]

    def sink(inst):
        c = count[0]
        count[0] += 1
        if c >= skip and (c - skip) % every == 0 and inst.admissible > 0:
            kept.append(inst)
            if len(kept) >= calls:
                raise _Enough

    policy.capture_instances(sink)
    try:
        simulate(w, G, SLOTS, policy, seed=SEED, show_progress=False)
    except _Enough:
        pass
    return kept


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", default="256,1024")
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--every", type=int, default=25)
    ap.add_argument("--skip", type=int, default=150)
    ap.add_argument("--time-limit-s", type=float, default=60.0)
    ap.add_argument("--json", default=None, help="write the rows and the summary as JSON ('-' for stdout)")
    args = ap.parse_args()
    rows, summary = [], []
    log = sys.stderr if args.json == "-" else sys.stdout
    for G in (int(g) for g in args.workers.split(",")):
        caps = capture(G, args.calls, args.every, args.skip)
        for k, inst in enumerate(caps):
            sol = solve(inst, "fast", placement="auto")
            J = float(sol.objective)
            b = lp_bound(inst, time_limit_s=args.time_limit_s, details=True)
            row = {"workers": G, "call": k, "step": inst.meta.get("step"), "waiting": inst.waiting,
                   "free_workers": int((inst.free > 0).sum()), "admissible": inst.admissible,
                   "placement": sol.solver, "J_auto": J, "trivial_bound": b.trivial, "lp_bound": b.value,
                   "lp_objective": b.lp, "status": b.status, "bound_s": b.wall_s,
                   "gap": (J - b.value) / abs(b.value), "trivial_gap": (J - b.trivial) / abs(b.trivial)}
            rows.append(row)
            print(f"G={G} call {k} (step {row['step']}, n={inst.waiting}, |T|={row['free_workers']}, "
                  f"U={inst.admissible}): J={J:.6g} bound={b.value:.6g} trivial={b.trivial:.6g} "
                  f"gap {row['gap']:.2%} ({b.status}, {b.wall_s:.1f} s)", file=log, flush=True)
        g = [r for r in rows if r["workers"] == G]
        gap = np.array([r["gap"] for r in g])
        tg = np.array([r["trivial_gap"] for r in g])
        secs = np.array([r["bound_s"] for r in g])
        summary.append({"workers": G, "calls": len(g), "gap_median": float(np.median(gap)),
                        "gap_p95": float(np.percentile(gap, 95)), "trivial_gap_median": float(np.median(tg)),
                        "trivial_gap_p95": float(np.percentile(tg, 95)), "bound_s_mean": float(secs.mean()),
                        "bound_s_max": float(secs.max()),
                        "trivial_negative": int(sum(r["trivial_bound"] < 0 for r in g))})
    print(f"BurstGPT, N = {PER_WORKER:,} G, B = {SLOTS}, seed {SEED}, H = {HORIZON}, auto, {ADMISSION}; "
          f"every {args.every}th call after {args.skip}", file=log)
    print("| G | calls | certified gap median | p95 | trivial-bound gap median | p95 | trivial < 0 "
          "| bound s mean | max |", file=log)
    print("|---|---|---|---|---|---|---|---|---|", file=log)
    for s in summary:
        print(f"| {s['workers']} | {s['calls']} | {s['gap_median']:.2%} | {s['gap_p95']:.2%} | "
              f"{s['trivial_gap_median']:.2%} | {s['trivial_gap_p95']:.2%} | {s['trivial_negative']} | "
              f"{s['bound_s_mean']:.1f} | {s['bound_s_max']:.1f} |", file=log)
    if args.json:
        text = json.dumps({"rows": rows, "summary": summary}, indent=1)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w") as f:
                f.write(text + "\n")


if __name__ == "__main__":
    main()
