"""The fast solver's placements' optimality gap (issue 27): each of ``bfio.solvers.PLACEMENTS``.

1. The captured-call set of ``bench_bfio.py`` (LongBench, BurstGPT, Azure conv;
   H = 0, 20, 40; G = 8, B = 8, 2,000 requests, every 25th call, 15 a case; free
   admission): each call solved by the fast solver with each placement and by
   HiGHS (30 s); the gap to the proven optimum, median / p95 / max per case.
2. Calls HiGHS cannot solve (BurstGPT, B = 72, H = 20, library defaults;
   G = 256 and 1024, 1,500 G requests (the scaling benchmark's), every 100th call): ``J`` of each placement
   against :func:`bfio.solvers.trivial_bound` (a valid lower bound), a certified
   upper bound on the gap (weak: the bound ignores how the envelope rises).

    python benchmarks/bench_heap_gap.py [--skip-small] [--skip-large] [--workers 256,1024]

Targets (issue 27): on set 1 median gap <= 0.1%, p95 <= 1%.
"""

import argparse

import numpy as np
import pandas as pd

from bfio.solvers import PLACEMENTS, solve, trivial_bound
from bfio.studies.agreement import capture_instances, gap_summary, gap_table


def small():
    caps = []
    for trace in ("longbench", "burstgpt", "azure_conv"):
        for H in (0, 20, 40):
            caps += capture_instances(trace, 8, 8, 2000, H, every=25, limit=15)
    exact = gap_table(caps, solvers=("highs",), time_limit_s=30)
    for placement in PLACEMENTS:
        t = exact.copy()
        t["fast_objective"] = [solve(inst, "fast", placement=placement).objective for inst in caps]
        t["fast_gap"] = (t["fast_objective"] - t["optimum"]) / np.maximum(t["optimum"], 1)
        print(f"placement {placement}: gap to HiGHS's proven optimum ({len(caps)} captured calls)")
        print(gap_summary(t).to_string(index=False), flush=True)


def large(workers):
    rows = []
    for G in workers:
        caps = capture_instances("burstgpt", G, 72, 1500 * G, 20, every=100, limit=8, admission="aging:200")
        for k, inst in enumerate(caps):
            lb = trivial_bound(inst)
            for placement in PLACEMENTS:
                sol = solve(inst, "fast", placement=placement)
                rows.append({"workers": G, "call": k, "placement": placement, "J": sol.objective, "bound": lb,
                             "gap_bound": (sol.objective - lb) / max(abs(lb), 1), "wall_ms": 1e3 * sol.wall_s})
    t = pd.DataFrame(rows)
    print("certified gap upper bound (J - trivial bound) / bound, and heap J / greedy J - 1")
    for (G, p), g in t.groupby(["workers", "placement"]):
        print(f"G={G} {p}: calls {len(g)}, gap bound median {g['gap_bound'].median():.2%} "
              f"max {g['gap_bound'].max():.2%}, call {g['wall_ms'].median():.2f} ms")
    piv = t.pivot_table(index=["workers", "call"], columns="placement", values="J")
    for p in PLACEMENTS[1:]:
        rel = piv[p] / piv["greedy"] - 1
        for G, r in rel.groupby(level=0):
            print(f"G={G}: {p} J / greedy J - 1: median {r.median():+.2%}, max {r.max():+.2%}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-small", action="store_true")
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--workers", default="256,1024")
    args = ap.parse_args()
    if not args.skip_small:
        small()
    if not args.skip_large:
        large([int(g) for g in args.workers.split(",")])
