"""Full-run quality of the fast solver's placements (issue 27): ``heap`` against ``greedy``.

BurstGPT, ``N = 1,500 G``, ``B = 72``, BF-IO with the library defaults at
``H = 20`` (oracle, ``aging:200``, default objective), for each ``G`` and seed:
AvgImbalance and throughput of both placements, and the paired relative
difference heap / greedy - 1 as a mean over seeds with its 95% interval
(:func:`bfio.tables.mean_ci`, Student t).

    python benchmarks/bench_placement_quality.py [--workers 256,1024] [--seeds 42,1,2,3,4] [--per-worker 1500]

Targets (issue 27): imbalance within 2% and throughput within 0.3% of the greedy's.
"""

import argparse

import numpy as np

from bfio.simulator import simulate
from bfio.tables import mean_ci
from bfio.traces import load_trace
from bfio.workload import draw_workload

SLOTS = 72


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", default="256,1024")
    ap.add_argument("--seeds", default="42,1,2,3,4")
    ap.add_argument("--per-worker", type=int, default=1_500)
    ap.add_argument("--horizon", type=int, default=20)
    args = ap.parse_args()
    t = load_trace("burstgpt")
    seeds = [int(s) for s in args.seeds.split(",")]
    print("| G | metric | greedy (mean) | heap (mean) | heap / greedy - 1, mean [95% CI] over seeds |")
    print("|---|---|---|---|---|")
    for G in (int(g) for g in args.workers.split(",")):
        rows = {p: {"avg_imbalance": [], "throughput": []} for p in ("greedy", "heap")}
        for seed in seeds:
            w = draw_workload(t.prefill, t.decode, args.per_worker * G, seed)
            for p in rows:
                m = simulate(w, G, SLOTS, "bfio", seed=seed, show_progress=False,
                             policy_options={"horizon": args.horizon, "placement": p}).metrics
                for k in rows[p]:
                    rows[p][k].append(m[k])
        for k in ("avg_imbalance", "throughput"):
            g, h = np.asarray(rows["greedy"][k]), np.asarray(rows["heap"][k])
            mean, lo, hi, n = mean_ci(100 * (h / g - 1))
            print(f"| {G} | {k} | {g.mean():.5g} | {h.mean():.5g} | {mean:+.2f}% [{lo:+.2f}%, {hi:+.2f}%] (n = {n}) |",
                  flush=True)


if __name__ == "__main__":
    main()
