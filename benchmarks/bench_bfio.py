"""BF-IO benchmark: routing-call p50/p99 at G=256, B=72, H=40 (Table 1's
workload), whole Table-1 run times at H=40 and H=100, every BF-IO row of
Tables 1 and 2 beside the paper's, and the fast solver's gap table.

    python benchmarks/bench_bfio.py [--skip-gap] [--new-requests persist,predicted]

Every row is run once per ``new_requests`` mode given (default: both).
"""

import argparse
import time

import numpy as np

from bfio.paper import PAPER_BFIO_OPTIONS, TABLE_SETTINGS, at_least_as_good, round_like
from bfio.simulator import simulate
from bfio.solvers.agreement import capture_instances, gap_summary, gap_table, random_instance
from bfio.traces import load_trace
from bfio.workload import draw_workload


def table_rows(modes=("persist", "predicted")):
    for table, st in TABLE_SETTINGS.items():
        t = load_trace(st["trace"])
        w = draw_workload(t.prefill, t.decode, st["requests"], st["seed"])
        simulate(w, st["workers"], st["slots"], "bfio", policy_options={"horizon": 0})  # warm numba cache
        for mode, H in [(m, H) for m in modes for H in st["horizons"]]:
            r = simulate(w, st["workers"], st["slots"], "bfio", seed=st["seed"],
                         policy_options={**PAPER_BFIO_OPTIONS, "horizon": H, "new_requests": mode})
            m = r.metrics
            cells = []
            for metric, printed in st["values"][f"bfio_h{H}"].items():
                scale = st["units"][metric][0]
                ok = at_least_as_good(m[metric], printed, scale, metric)
                cells.append(f"{metric} {round_like(m[metric], printed, scale)} (paper {printed}){'' if ok else ' WORSE'}")
            print(f"{table} H={H:3d} {mode}: " + "; ".join(cells) +
                  f" | wall {r.wall_s:.2f} s, call p50 {m['solver_s_p50'] * 1e3:.2f} ms, p99 {m['solver_s_p99'] * 1e3:.2f} ms,"
                  f" wait steps p50/p99/max {m['wait_steps_p50']:.0f}/{m['wait_steps_p99']:.0f}/{m['wait_steps_max']:.0f}",
                  flush=True)


def gaps():
    rng = np.random.default_rng(20261122)
    rand = gap_table([random_instance(rng) for _ in range(200)]).assign(trace="random")
    print(gap_summary(rand).to_string(index=False))
    caps = []
    for trace in ("longbench", "burstgpt"):
        for H in (0, 20):
            caps += capture_instances(trace, 8, 8, 2000, H, every=25, limit=20)
    real = gap_table(caps, time_limit_s=30)
    print(gap_summary(real).to_string(index=False))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-gap", action="store_true")
    ap.add_argument("--new-requests", default="persist,predicted")
    args = ap.parse_args()
    t0 = time.perf_counter()
    table_rows(tuple(args.new_requests.split(",")))
    if not args.skip_gap:
        gaps()
    print(f"total {time.perf_counter() - t0:.1f} s")
