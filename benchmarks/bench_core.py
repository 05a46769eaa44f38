"""Simulator speed on the paper's workloads (issue: simulation core).

Targets on one core, excluding numba compilation (warmed up first, and cached):
Table-1 FCFS <= 0.15 s, Table-1 jsq_tokens <= 0.3 s, Table-2 FCFS <= 0.6 s.

    python benchmarks/bench_core.py [--repeat 5]
"""

import argparse
import time

from bfio.paper import TABLE_SETTINGS
from bfio.simulator import simulate
from bfio.traces import load_trace
from bfio.workload import Workload, draw_workload

TARGETS = [("table1", "fcfs", 0.15), ("table1", "jsq_tokens", 0.3), ("table2", "fcfs", 0.6),
           ("table2", "jsq_tokens", None)]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    import numpy as np
    simulate(Workload(np.array([3, 4]), np.array([2, 1])), 2, 2, "jsq_tokens")  # compile / load cache
    print(f"{'run':24s} {'steps':>6s} {'best s':>8s} {'median s':>9s} {'target s':>9s}")
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
        print(f"{table + ' ' + policy:24s} {r.steps:6d} {min(times):8.3f} {float(np.median(times)):9.3f} {tgt:>9s}")


if __name__ == "__main__":
    main()
