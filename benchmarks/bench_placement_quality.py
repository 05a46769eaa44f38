"""Full-run quality of the fast solver's placements and admissions (issues 27 and 30).

BurstGPT, ``N = 1,500 G``, ``B = 72``, BF-IO with the library defaults at
``H = 20`` (oracle, default objective) but the placement and admission of each
configuration ``placement/admission``, for each ``G`` and seed: AvgImbalance,
throughput and the longest wait (steps) of every configuration, and the paired
relative difference against the reference (the first configuration, by default
today's library default ``greedy/aging:200``) as a mean over seeds with its 95%
interval (:func:`bfio.runs.tables.mean_ci`, Student t).

    python benchmarks/bench_placement_quality.py [--workers 256,1024] [--seeds 42,1,2,3,4] [--per-worker 1500]
        [--configs greedy/aging:200,auto/aging:200,greedy/drain:100,auto/drain:100]

Targets (issue 27): imbalance within 2% and throughput within 0.3% of today's greedy.
"""

import argparse

import numpy as np

from bfio.simulator import simulate
from bfio.runs.tables import mean_ci
from bfio.traces import load_trace
from bfio.workloads.workload import draw_workload

SLOTS = 72
METRICS = ("avg_imbalance", "throughput", "wait_steps_max")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", default="256,1024")
    ap.add_argument("--seeds", default="42,1,2,3,4")
    ap.add_argument("--per-worker", type=int, default=1_500)
    ap.add_argument("--horizon", type=int, default=20)
    ap.add_argument("--configs", default="greedy/aging:200,auto/aging:200,greedy/drain:100,auto/drain:100")
    args = ap.parse_args()
    t = load_trace("burstgpt")
    seeds = [int(s) for s in args.seeds.split(",")]
    configs = [tuple(c.split("/")) for c in args.configs.split(",")]
    ref = configs[0]
    print(f"BurstGPT, N = {args.per_worker:,} G, B = {SLOTS}, H = {args.horizon}, seeds {seeds}; "
          f"reference {ref[0]}/{ref[1]}")
    print("| G | placement/admission | imbalance (mean) | vs reference, mean [95% CI] | throughput (mean) "
          "| vs reference | longest wait (steps, max over seeds) |")
    print("|---|---|---|---|---|---|---|")
    for G in (int(g) for g in args.workers.split(",")):
        rows = {c: {k: [] for k in METRICS} for c in configs}
        for seed in seeds:
            w = draw_workload(t.prefill, t.decode, args.per_worker * G, seed)
            for c in configs:
                m = simulate(w, G, SLOTS, "bfio", seed=seed, show_progress=False,
                             policy_options={"horizon": args.horizon, "placement": c[0], "admission": c[1]}).metrics
                for k in METRICS:
                    rows[c][k].append(m[k])
        for c in configs:
            cells = []
            for k in ("avg_imbalance", "throughput"):
                r, v = np.asarray(rows[ref][k]), np.asarray(rows[c][k])
                mean, lo, hi, n = mean_ci(100 * (v / r - 1))
                cells += [f"{v.mean():.5g}", f"{mean:+.2f}% [{lo:+.2f}%, {hi:+.2f}%]"]
            print(f"| {G} | {c[0]}/{c[1]} | {' | '.join(cells)} | {max(rows[c]['wait_steps_max']):.0f} |", flush=True)


if __name__ == "__main__":
    main()
