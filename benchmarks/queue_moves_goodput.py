"""Issue 45's goodput with queue moves (not a test): the goodput study's LongBench v1
setting in its calibrated regime (config/config.yaml, section ``goodput``), 5 seeds,
each its own bisection, for instant BF-IO (``prompt_survival``) with and without
BF-IO's queue moves and SGLang ``total_tokens`` with PR #37401's balancer.

    python benchmarks/queue_moves_goodput.py OUT_CSV

Reads ``results/traces/longbench_v1.parquet`` (the pipeline's prepared trace).
"""
import sys
from dataclasses import replace

import pandas as pd
import yaml

from bfio.runs.experiments import read_trace_table
from bfio.studies.goodput import goodput
from bfio.runs.run import ArrivalSpec, RunSpec, policy_defaults
from bfio.runs.runner import run_batch
from bfio.studies.goodput_study import regime_capacity, regimes, setting_slo
from bfio.runs.tables import mean_ci

cfg = yaml.safe_load(open("config/config.yaml"))
sec = cfg["goodput"]
setting = next(s for s in sec["settings"] if s["name"] == "longbench_v1_g16")
regime = regimes(sec)["calibrated"]
frame = read_trace_table("results/traces/longbench_v1.parquet")
slots = 72
cap = regime_capacity(frame, setting["workers"], slots, regime)
slo = setting_slo(setting, sec)
variants = {**sec["variants"]}
defaults = policy_defaults(cfg)
rows = [("bfio_h20_instant_ps", "bfio"), ("sglang_total_tokens", "sglang_balancer"), ("bfio_h20_instant_ps", "none")]
out = []
for row, moves in rows:
    for seed in [42, 1, 2, 3, 4]:
        def run_at(rate, row=row, seed=seed, moves=moves):
            run = replace(RunSpec.make(setting["trace"], setting["requests"], setting["workers"], slots, row, seed,
                                       arrival=ArrivalSpec("poisson", rate=float(rate)), dispatch="instant",
                                       variants=variants, defaults=defaults),
                          prefill=regime["prefill"], step_model=regime["step_model"], queue_moves=moves)
            return run_batch([run], {setting["trace"]: frame}, show_progress=False).to_dict("records")
        res = goodput(run_at, cap.requests_per_s, slo, rel_tol=sec.get("rel_tol", 0.02))
        out.append({"row": row, "queue_moves": moves, "seed": seed, "goodput_rps": res.goodput_rps,
                    "capacity_rps": res.capacity_rps})
        print(out[-1], flush=True)
table = pd.DataFrame(out)
table.to_csv(sys.argv[1], index=False)
for (row, moves), grp in table.groupby(["row", "queue_moves"], sort=False):
    m, lo, hi, n = mean_ci(grp["goodput_rps"])
    print(f"{row} queue_moves={moves}: {m:.3g} req/s [{lo:.3g}, {hi:.3g}] (n = {n})")
