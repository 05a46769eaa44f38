"""Issue 45's simulation cost of every action in one run (not a test): instant BF-IO
with queue moves (``bfio``), DyntraLB's pauses (``dyntra_lb`` at the
``bubble_threshold`` ``benchmarks/rank_pause.py`` chose, 500 blocks) and BF-IO's
migrations (``bfio``, ``kv: transfer``; at 400 Gb/s with the options
``benchmarks/bfio_actions.py`` chose for it, and over NVLink with that setting's
four evaluations a call) against the same run without actions; Poisson runs at
0.9 of the paper model's capacity, the paper's step, instant dispatch, G = 16,
B = 72, 4,000 requests, on BurstGPT and LongBench, seeds 42, 1, 2 (no option is
chosen here: the rows are the earlier benchmarks' choices).

    python benchmarks/actions_cost.py [OUT_CSV]

Per trace and row: the least process time of 3 runs per seed, the ratio with
actions over without (issue 45's target: at most 2x), the throughput, the p99
end-to-end latency and the actions per 1,000 requests. The traces are
``$BURSTGPT`` / ``$LONGBENCH`` or ``results/traces/{burstgpt,longbench}.parquet``.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
import pandas as pd

from bfio.engine.capacity import trace_capacity
from bfio.simulator import simulate
from bfio.workloads.workload import draw_workload, poisson_arrivals, with_arrivals

TRACES = {"burstgpt": os.environ.get("BURSTGPT", "results/traces/burstgpt.parquet"),
          "longbench": os.environ.get("LONGBENCH", "results/traces/longbench.parquet")}
SEEDS = (42, 1, 2)
G, B, N, LOAD, REPEATS = 16, 72, 4000, 0.9, 3
BFIO = {"horizon": 20}
ALL = {"queue_moves": "bfio", "rank_pause": "dyntra_lb", "rank_pause_options": {"bubble_threshold": 500.0}}
ROWS = {"none": {},
        "every action, 400 Gb/s": {**ALL, "migration": "bfio",
                                   "migration_options": {"kv": "transfer", "cost_weight": 16.0}},
        "every action, NVLink": {**ALL, "migration": "bfio",
                                 "migration_options": {"kv": "transfer", "transfer_gbps": 3600.0, "cost_weight": 4.0,
                                                       "evaluations": 4, "per_rank": 2}}}
COUNTS = ("queue_move_count", "request_pauses", "rank_pauses", "migrations")


def run(work, seed, kw) -> tuple[float, dict]:
    """The least process time of :data:`REPEATS` runs, and the last run's metrics."""
    best = np.inf
    for _ in range(REPEATS):
        t0 = time.process_time()
        res = simulate(work, G, B, "bfio", seed=seed, entry="arrivals", dispatch="instant", policy_options=BFIO,
                       show_progress=False, **kw)
        best = min(best, time.process_time() - t0)
    return best, res.metrics


def main(out: str | None = None) -> None:
    rows = []
    for trace, path in TRACES.items():
        frame = pd.read_parquet(path)
        s, o = frame["prefill_tokens"].to_numpy(), frame["decode_tokens"].to_numpy()
        rate = LOAD * trace_capacity(frame, G, B).requests_per_s
        for seed in SEEDS:
            work = with_arrivals(draw_workload(s, o, N, seed, name=trace), poisson_arrivals(N, rate, seed))
            for label, kw in ROWS.items():
                cpu, m = run(work, seed, kw)
                rows.append({"trace": trace, "seed": seed, "row": label, "cpu_s": cpu,
                             "throughput": m["throughput_run"], "e2e_p99_s": m["e2e_s_p99"],
                             **{c: 1000.0 * m.get(c, 0) / N for c in COUNTS}})
                print(f"{trace} seed {seed} {label}: {cpu:.3f} s", flush=True)
    t = pd.DataFrame(rows)
    print(f"\nG = {G}, B = {B}, {N} requests at {LOAD} x capacity, instant BF-IO (H = 20), paper step; "
          f"least CPU of {REPEATS} runs; actions per 1,000 requests; mean over seeds {SEEDS}")
    print(t.groupby(["trace", "row"], sort=False).mean(numeric_only=True).drop(columns="seed").to_string(
        float_format=lambda v: f"{v:.4g}"))
    p = t.pivot(index=["trace", "seed"], columns="row", values="cpu_s")
    for label in list(ROWS)[1:]:
        r = p[label] / p["none"]
        for trace in TRACES:
            x = r.loc[trace]
            total = p[label].loc[trace].sum() / p["none"].loc[trace].sum()
            print(f"{trace}: CPU with {label} / without: {total:.2f}x (per seed {x.min():.2f}..{x.max():.2f})")
    if out:
        t.to_csv(out, index=False)


if __name__ == "__main__":
    main(*sys.argv[1:2])
