"""Issue 45's measurement of migration (not a test): ROLL PR #134's interruption
and migration (:mod:`bfio.sim.migration`) on top of vLLM's DP router, SGLang's
``total_tokens``, ROLL's own router (fewest in-flight requests: ``jsq_requests``)
and instant BF-IO, LongBench-like Poisson runs at a share of the capacity,
instant dispatch, in two step models:

- ``transfer``: the paper's step (as ``benchmarks/rank_pause.py``), a migrated
  request's KV sent over a 400 Gb/s link at Llama-2-7B's 512 KiB a token, the
  barrier waiting for it (:mod:`bfio.sim.transfer`);
- ``recompute``: the step with chunked prefill (:class:`bfio.engine.prefill.PrefillModel`'s
  defaults), a migrated request's prompt and output so far prefilled again, as
  ROLL does; the rate is the same share of that step's capacity.

    python benchmarks/migration.py [OUT_CSV] [N] [G] [load]

ROLL's ``threshold`` is chosen per step model on the tuning seeds 100-109 (the
highest mean whole-run throughput over the four routers with ROLL, among
:data:`THRESHOLDS`; its 3 s freeze kept), then every row runs on the reported
seeds 42, 1-4 with it and with the PR's own value (:data:`PR_THRESHOLD`). Prints the tables (mean over seeds, and the per-seed
range of the change ROLL makes); ``OUT_CSV`` (optional) gets one line per run.
The trace is ``$LONGBENCH`` or ``results/traces/longbench.parquet``.
"""

from __future__ import annotations

import os
import sys
import time

import pandas as pd

from bfio.engine.capacity import trace_capacity
from bfio.engine.prefill import PrefillModel
from bfio.sim.migration import ROLL_DEFAULTS
from bfio.simulator import simulate
from bfio.workloads.workload import draw_workload, poisson_arrivals, with_arrivals

TRACE = os.environ.get("LONGBENCH", "results/traces/longbench.parquet")
TUNE_SEEDS, REPORT_SEEDS = range(100, 110), (42, 1, 2, 3, 4)
#: candidate thresholds (in-flight requests): the PR head's demo value 1, its default 10
THRESHOLDS = (1, 10, 40)
#: the PR's ``rebalance_threshold`` (every commit but the last, a demo's 1)
PR_THRESHOLD = ROLL_DEFAULTS["threshold"]
ROWS = {"vllm_dp": ("vllm_dp", None), "sglang_total_tokens": ("sglang_total_tokens", None),
        "ROLL's router (jsq_requests)": ("jsq_requests", None), "instant BF-IO": ("bfio", {"horizon": 20})}
MODES = {"transfer": None, "recompute": PrefillModel()}
KEEP = ("throughput_run", "e2e_s_p99", "e2e_s_p50", "migrations", "migration_queue_moves",
        "migration_interruptions", "migration_recomputed_tokens", "migration_transfer_s", "migration_transfer_wait_s")


def run(frame, rate, n, G, B, seed, label, mode, threshold) -> dict:
    policy, opts = ROWS[label]
    s, o = frame["prefill_tokens"].to_numpy(), frame["decode_tokens"].to_numpy()
    work = with_arrivals(draw_workload(s, o, n, seed, name="longbench"), poisson_arrivals(n, rate, seed))
    on = threshold is not None
    t0 = time.process_time()
    res = simulate(work, G, B, policy, seed=seed, entry="arrivals", dispatch="instant", policy_options=opts,
                   prefill=MODES[mode], migration="roll" if on else "none",
                   migration_options={"kv": mode, "threshold": threshold} if on else None, show_progress=False)
    return {"row": label, "mode": mode, "migration": f"roll@{threshold}" if on else "none", "seed": seed,
            "cpu_s": time.process_time() - t0, **{k: res.metrics.get(k, 0) for k in KEEP}}


def main(out: str | None = None, n: int = 1000, G: int = 8, load: float = 0.9, B: int = 72) -> None:
    frame = pd.read_parquet(TRACE)
    runs = []
    for mode, prefill in MODES.items():
        rate = load * trace_capacity(frame, G, B, prefill_model=prefill).requests_per_s
        tune = pd.DataFrame([run(frame, rate, n, G, B, seed, label, mode, t) for seed in TUNE_SEEDS
                             for label in ROWS for t in (None, *THRESHOLDS)])
        by = tune.groupby("migration", sort=False)[["throughput_run", "e2e_s_p99", "migrations"]].mean()
        print(f"{mode}: tuning (seeds 100-109, mean over the four routers; N={n}, G={G}, B={B}, {rate:.3g} req/s = "
              f"{load:g} x capacity):")
        print(by.to_string(float_format=lambda v: f"{v:.4g}"))
        best = max(THRESHOLDS, key=lambda t: by.loc[f"roll@{t}", "throughput_run"])
        print(f"{mode}: chosen threshold = {best}\n")
        shown = (None, *sorted({best, PR_THRESHOLD}))
        report = pd.DataFrame([run(frame, rate, n, G, B, seed, label, mode, t)
                               for seed in REPORT_SEEDS for label in ROWS for t in shown])
        table = report.groupby(["row", "migration"], sort=False)[list(KEEP) + ["cpu_s"]].mean()
        table["migrations_per_1000_req"] = 1000 * table["migrations"] / n
        print(f"{mode}: reported (seeds {', '.join(map(str, REPORT_SEEDS))}; mean over seeds):")
        print(table.drop(columns=[c for c in KEEP if not table[c].any()]).to_string(
            float_format=lambda v: f"{v:.4g}"))
        for label in ROWS:
            r = report[report["row"] == label].pivot(index="seed", columns="migration")
            for t in shown[1:]:
                thr = 100 * (r["throughput_run"][f"roll@{t}"] / r["throughput_run"]["none"] - 1)
                p99 = 100 * (r["e2e_s_p99"][f"roll@{t}"] / r["e2e_s_p99"]["none"] - 1)
                print(f"{mode}: {label} with ROLL (threshold {t}) vs without, per seed: throughput "
                      f"{thr.mean():+.1f}% [{thr.min():+.1f}, {thr.max():+.1f}], p99 e2e {p99.mean():+.1f}% "
                      f"[{p99.min():+.1f}, {p99.max():+.1f}]")
        print()
        runs += [tune.assign(phase="tune"), report.assign(phase="report")]
    every = pd.concat(runs)
    print(f"CPU: {every['cpu_s'].sum():.1f} s in {len(every)} runs")
    if out:
        every.to_csv(out, index=False)


if __name__ == "__main__":
    args = sys.argv[1:]
    kinds = (int, int, float)
    main(args[0] if args else None, *(kinds[i](a) for i, a in enumerate(args[1:])))
