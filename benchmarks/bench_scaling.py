"""BF-IO routing cost as the cluster grows (issue 16).

BurstGPT drawn as in the paper's Table 2 (``N = 6,250 G`` requests, ``B = 72``,
seed 42, oracle predictor), FCFS against BF-IO with the library defaults at
``H = 20``, for each ``G``: whole-run wall time (warm: numba compiled and a
small run done first; FCFS the faster of two runs), the ratio BF-IO / FCFS, BF-IO's routing call (mean,
p50, p99) and the mean decode step of the BF-IO run, with the call's share of
a step.

    python benchmarks/bench_scaling.py [--workers 16,64,256,1024] [--horizon 20] [--per-worker 6250]
                                        [--shard-workers N]

``--per-worker`` shortens the runs (the steady state is reached after a few
hundred steps; the per-call figures are then still the steady state's).

Targets (issue 16): routing call (mean) <= 10% of the mean decode step at
every G; whole-run ratio <= 4x at G = 256 and <= 6x at G = 1024.
"""

import argparse
import time

from bfio.simulator import simulate
from bfio.traces import load_trace
from bfio.workload import Workload, draw_workload

SLOTS = 72
PER_WORKER = 6_250  # Table 2: 100,000 requests on 16 workers
SEED = 42


def run(w, workers, policy, options):
    t0 = time.perf_counter()
    r = simulate(w, workers, SLOTS, policy, seed=SEED, policy_options=options, show_progress=False)
    return r, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", default="16,64,256,1024")
    ap.add_argument("--horizon", type=int, default=20)
    ap.add_argument("--per-worker", type=int, default=PER_WORKER)
    ap.add_argument("--shard-workers", type=int, default=None, help="BF-IO shard_workers (default: the library's)")
    args = ap.parse_args()
    t = load_trace("burstgpt")
    bfio = {"horizon": args.horizon}
    if args.shard_workers is not None:
        bfio["shard_workers"] = args.shard_workers
    warm = Workload(t.prefill[:4000], t.decode[:4000])
    simulate(warm, 16, SLOTS, "fcfs", show_progress=False)
    simulate(warm, 16, SLOTS, "bfio", policy_options=bfio, show_progress=False)
    print(f"BurstGPT, N = {args.per_worker:,} G, B = {SLOTS}, seed {SEED}, BF-IO options {bfio}")
    print("| G | FCFS | BF-IO H=%d | ratio | call mean | call p50 | call p99 | step mean | call / step "
          "| BF-IO imbalance | BF-IO throughput |" % args.horizon)
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for G in (int(g) for g in args.workers.split(",")):
        w = draw_workload(t.prefill, t.decode, args.per_worker * G, SEED)
        # FCFS twice, the faster counts: the first large run of a process pays for
        # its fresh memory (1.3-1.7x slower at G = 1024), which would flatter the ratio
        fcfs_s = min(run(w, G, "fcfs", {})[1] for _ in range(2))
        r, bfio_s = run(w, G, "bfio", bfio)
        m = r.metrics
        call = m["solver_s_total"] / m["solver_calls"]
        step = float(r.series["dt"].mean())
        print(f"| {G} | {fcfs_s:.2f} s | {bfio_s:.2f} s | {bfio_s / fcfs_s:.1f}x | {call * 1e3:.2f} ms | "
              f"{m['solver_s_p50'] * 1e3:.2f} ms | {m['solver_s_p99'] * 1e3:.2f} ms | {step * 1e3:.1f} ms | "
              f"{call / step:.1%} | {m['avg_imbalance']:.4g} | {m['throughput']:.5g} |", flush=True)


if __name__ == "__main__":
    main()
