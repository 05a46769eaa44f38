"""Issue 45's measurement of pausing (not a test): DyntraLB's rule (vllm-ascend
PR #12292, :mod:`bfio.sim.pause`) on top of vLLM's DP router and of instant
BF-IO, LongBench-like Poisson runs at a share of the paper model's capacity,
instant dispatch.

    python benchmarks/rank_pause.py [OUT_CSV] [N] [G] [load]

DyntraLB's ``bubble_threshold`` is chosen on the tuning seeds 100-109 (the
highest mean whole-run throughput of ``vllm_dp`` with DyntraLB over
:data:`THRESHOLDS`, the source's other defaults kept), then every row runs on
the reported seeds 42, 1-4 with it. Prints both tables (mean over seeds, and
the per-seed range of the change a pause makes); ``OUT_CSV`` (optional) gets
one line per run. The trace is ``$LONGBENCH`` or ``results/traces/longbench.parquet``.
"""

from __future__ import annotations

import os
import sys
import time

import pandas as pd

from bfio.engine.capacity import trace_capacity
from bfio.simulator import simulate
from bfio.workloads.workload import draw_workload, poisson_arrivals, with_arrivals

TRACE = os.environ.get("LONGBENCH", "results/traces/longbench.parquet")
TUNE_SEEDS, REPORT_SEEDS = range(100, 110), (42, 1, 2, 3, 4)
#: candidate bubble thresholds: KV blocks (>= 1) and one ratio (< 1), the source's default first
THRESHOLDS = (5.0, 50.0, 500.0, 5000.0, 0.2)
ROWS = {"vllm_dp": ("vllm_dp", None), "instant BF-IO": ("bfio", {"horizon": 20})}
KEEP = ("throughput_run", "e2e_s_p99", "e2e_s_p50", "rank_pauses", "paused_rank_steps", "request_pauses",
        "paused_requests", "dyntra_lb_plans")


def run(frame, rate, n, G, B, seed, label, pause_options) -> dict:
    policy, opts = ROWS[label]
    s, o = frame["prefill_tokens"].to_numpy(), frame["decode_tokens"].to_numpy()
    work = with_arrivals(draw_workload(s, o, n, seed, name="longbench"), poisson_arrivals(n, rate, seed))
    t0 = time.process_time()
    res = simulate(work, G, B, policy, seed=seed, entry="arrivals", dispatch="instant", policy_options=opts,
                   rank_pause="none" if pause_options is None else "dyntra_lb", rank_pause_options=pause_options,
                   show_progress=False)
    pause = "none" if pause_options is None else f"dyntra_lb@{pause_options['bubble_threshold']:g}"
    return {"row": label, "pause": pause, "seed": seed, "cpu_s": time.process_time() - t0,
            **{k: res.metrics.get(k, 0) for k in KEEP}}


def main(out: str | None = None, n: int = 4000, G: int = 8, load: float = 0.9, B: int = 72) -> None:
    frame = pd.read_parquet(TRACE)
    rate = load * trace_capacity(frame, G, B).requests_per_s
    tune = pd.DataFrame([run(frame, rate, n, G, B, seed, "vllm_dp", p)
                         for seed in TUNE_SEEDS for p in (None, *({"bubble_threshold": t} for t in THRESHOLDS))])
    by = tune.groupby("pause", sort=False)[["throughput_run", "e2e_s_p99", "request_pauses"]].mean()
    print(f"tuning (vllm_dp, seeds 100-109, N={n}, G={G}, B={B}, {rate:.3g} req/s = {load:g} x capacity):")
    print(by.to_string(float_format=lambda v: f"{v:.4g}"))
    best = max(THRESHOLDS, key=lambda t: by.loc[f"dyntra_lb@{t:g}", "throughput_run"])
    chosen = {"bubble_threshold": best}
    print(f"chosen bubble_threshold = {best:g}\n")
    report = pd.DataFrame([run(frame, rate, n, G, B, seed, label, p)
                           for seed in REPORT_SEEDS for label in ROWS for p in (None, chosen)])
    table = report.groupby(["row", "pause"], sort=False)[list(KEEP) + ["cpu_s"]].mean()
    table["pauses_per_1000_req"] = 1000 * table["rank_pauses"] / n
    table["request_pauses_per_1000_req"] = 1000 * table["request_pauses"] / n
    print(f"reported (seeds {', '.join(map(str, REPORT_SEEDS))}; mean over seeds):")
    print(table.to_string(float_format=lambda v: f"{v:.4g}"))
    for label in ROWS:
        r = report[report["row"] == label].pivot(index="seed", columns="pause")
        base, on = "none", f"dyntra_lb@{best:g}"
        thr = 100 * (r["throughput_run"][on] / r["throughput_run"][base] - 1)
        p99 = 100 * (r["e2e_s_p99"][on] / r["e2e_s_p99"][base] - 1)
        print(f"{label} with DyntraLB vs without, per seed: throughput {thr.mean():+.1f}% "
              f"[{thr.min():+.1f}, {thr.max():+.1f}], p99 e2e {p99.mean():+.1f}% [{p99.min():+.1f}, {p99.max():+.1f}]")
    print(f"CPU: {tune['cpu_s'].sum() + report['cpu_s'].sum():.1f} s in {len(tune) + len(report)} runs")
    if out:
        pd.concat([tune.assign(phase="tune"), report.assign(phase="report")]).to_csv(out, index=False)


if __name__ == "__main__":
    args = sys.argv[1:]
    kinds = (int, int, float)
    main(args[0] if args else None, *(kinds[i](a) for i, a in enumerate(args[1:])))
