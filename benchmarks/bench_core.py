"""Simulator speed on the paper's workloads (issue: simulation core).

Targets on one core, excluding numba compilation (warmed up first, and cached):
Table-1 FCFS <= 0.15 s, Table-1 jsq_tokens <= 0.3 s, Table-2 FCFS <= 0.6 s.
Online case (docs/online.md): BurstGPT N=100,000, G=64, B=72, Poisson arrivals
at 1,500 req/s, instant dispatch with vllm_dp <= 2 s.

    python benchmarks/bench_core.py [--repeat 5]
"""

import argparse
import time

from bfio.runs.paper import TABLE_SETTINGS
from bfio.simulator import simulate
from bfio.traces import load_trace
from bfio.workloads.workload import Workload, draw_workload, poisson_arrivals, with_arrivals

TARGETS = [("table1", "fcfs", 0.15), ("table1", "jsq_tokens", 0.3), ("table2", "fcfs", 0.6),
           ("table2", "jsq_tokens", None)]
#: (label, trace, N, G, B, Poisson rate req/s, dispatch, policy, target s)
ONLINE = [("poisson+instant vllm_dp G=64", "burstgpt", 100_000, 64, 72, 1500.0, "instant", "vllm_dp", 2.0)]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    import numpy as np
    simulate(Workload(np.array([3, 4]), np.array([2, 1])), 2, 2, "jsq_tokens")  # compile / load cache
    simulate(Workload(np.array([3, 4]), np.array([2, 1]), np.array([0.0, 1.0])), 2, 2, "vllm_dp",
             entry="arrivals", dispatch="instant")
    print(f"{'run':32s} {'steps':>6s} {'best s':>8s} {'median s':>9s} {'target s':>9s}")
    for table, policy, target in TARGETS:
        cfg = TABLE_SETTINGS[table]
        t = load_trace(cfg["trace"])
        w = draw_workload(t.prefill, t.decode, cfg["requests"], cfg["seed"])
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            r = simulate(w, cfg["workers"], cfg["slots"], policy, show_progress=False)
            times.append(time.perf_counter() - t0)
        tgt = f"{target:.2f}" if target else "-"
        print(f"{table + ' ' + policy:32s} {r.steps:6d} {min(times):8.3f} {float(np.median(times)):9.3f} {tgt:>9s}")
    for label, trace, n, G, B, rate, dispatch, policy, target in ONLINE:
        t = load_trace(trace)
        w = with_arrivals(draw_workload(t.prefill, t.decode, n, 42), poisson_arrivals(n, rate, 42))
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            r = simulate(w, G, B, policy, entry="arrivals", dispatch=dispatch, show_progress=False)
            times.append(time.perf_counter() - t0)
        print(f"{label:32s} {r.steps:6d} {min(times):8.3f} {float(np.median(times)):9.3f} {target:9.2f}")


if __name__ == "__main__":
    main()
