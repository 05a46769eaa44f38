"""BF-IO benchmark (issue 11): every BF-IO row of Tables 1 and 2 under the
default objective and ``paper-literal`` beside the paper's print, with the
routing-call p50/p99 and whole-run wall time of each; the first routing call of
a fresh process; the fast solver's gap table on random discounted instances
with lifetimes and on captured routing calls.

    python benchmarks/bench_bfio.py [--skip-gap] [--skip-rows] [--objectives default,paper-literal]

Targets (issue 11): routing p99 <= 5 ms at G = 256, H = 40 (Table 1) and <= 1 ms
at G = 16, H = 20 (Table 2), warm; first call in a fresh process <= 0.5 s;
whole Table-1 run at H = 100 <= 5 s; fast-solver median gap <= 1%.
"""

import argparse
import subprocess
import sys
import time

import numpy as np

from bfio.runs.paper import PAPER_BFIO_OPTIONS, TABLE_SETTINGS, at_least_as_good, round_like
from bfio.lookahead.run_keys import row_key
from bfio.simulator import simulate
from bfio.solvers.random_instances import random_instance
from bfio.studies.agreement import capture_instances, gap_summary, gap_table
from bfio.traces import load_trace
from bfio.workloads.workload import Workload, draw_workload

FRESH = """
import time
t0 = time.perf_counter()
import numpy as np
from bfio.simulator import simulate
from bfio.workloads.workload import Workload
t1 = time.perf_counter()
w = Workload(prefill=np.arange(100, 108), decode=np.arange(1, 9))
r = simulate(w, 2, 2, "bfio", policy_options={"horizon": 20, "admission": "free", **OPTIONS})
t2 = time.perf_counter()
print(f"{t1 - t0:.3f} {t2 - t1:.3f} {r.metrics['solver_s_max']:.3f}")
"""


def table_rows(objectives):
    for table, st in TABLE_SETTINGS.items():
        t = load_trace(st["trace"])
        w = draw_workload(t.prefill, t.decode, st["requests"], st["seed"])
        for objective in objectives:
            simulate(Workload(w.prefill[:2000], w.decode[:2000]), st["workers"], st["slots"], "bfio",  # warm numba cache for this variant
                     policy_options={**PAPER_BFIO_OPTIONS, "horizon": 20, "objective": objective})
            for H in st["horizons"]:
                r = simulate(w, st["workers"], st["slots"], "bfio", seed=st["seed"],
                             policy_options={**PAPER_BFIO_OPTIONS, "horizon": H, "objective": objective})
                m = r.metrics
                cells = []
                for metric, printed in st["values"][row_key("bfio", H)].items():
                    scale = st["units"][metric][0]
                    ok = at_least_as_good(m[metric], printed, scale, metric)
                    cells.append(f"{metric} {round_like(m[metric], printed, scale)} ({printed})"
                                 f"{'' if ok else ' WORSE'}")
                print(f"{table} H={H:3d} {objective:13s}: " + "; ".join(cells) +
                      f" | wall {r.wall_s:.2f} s, call p50 {m['solver_s_p50'] * 1e3:.2f} ms,"
                      f" p99 {m['solver_s_p99'] * 1e3:.2f} ms, max {m['solver_s_max'] * 1e3:.1f} ms", flush=True)


#: The fresh-process check runs with each of these option sets (the default; the production
#: configuration of docs/bfio.md "Production scale": the heap's kernels and the drain rule load too).
FRESH_OPTIONS = ({}, {"placement": "heap"}, {"placement": "heap", "admission": "drain:1"})


def fresh_process(repeats=3):
    for options in FRESH_OPTIONS:
        for _ in range(repeats):
            code = f"OPTIONS = {options!r}\n" + FRESH
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
            imp, sim, call = out.split()
            print(f"fresh process {options or 'defaults'}: imports {imp} s, 8-request BF-IO simulate {sim} s, "
                  f"slowest routing call {call} s")


def gaps():
    rng = np.random.default_rng(20261123)
    rand = [random_instance(rng, discount="random", lifetimes="random") for _ in range(200)]
    t = gap_table(rand, solvers=("highs",)).assign(trace="random")
    print(gap_summary(t).to_string(index=False))
    caps = []
    for trace in ("longbench", "burstgpt", "azure_conv"):
        for H in (0, 20, 40):
            caps += capture_instances(trace, 8, 8, 2000, H, every=25, limit=15)
    real = gap_table(caps, solvers=("highs",), time_limit_s=30)
    print(gap_summary(real).to_string(index=False))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-gap", action="store_true")
    ap.add_argument("--skip-rows", action="store_true")
    ap.add_argument("--objectives", default="default,paper-literal")
    args = ap.parse_args()
    t0 = time.perf_counter()
    fresh_process()
    if not args.skip_rows:
        table_rows(tuple(args.objectives.split(",")))
    if not args.skip_gap:
        gaps()
    print(f"total {time.perf_counter() - t0:.1f} s")
