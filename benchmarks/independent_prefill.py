"""Issue 44's measurement of independent ranks with chunked prefill (not a test):
the same Poisson workload on G = 8 ranks under the calibrated step with prefill,
KV memory and vLLM preemption, with the lockstep barrier (MoE-style DP attention)
and without (dense vLLM DP, :class:`bfio.sim.engine.IndependentPrefillEngine`),
for the instant routers vllm_dp, sglang_total_tokens and BF-IO (H = 20, the
studies' oracle-free predictor ``prompt_survival``).

    python benchmarks/independent_prefill.py OUT_DIR [load] [seeds]

The regime is the goodput study's calibrated one (A100 Llama-2-7B step, chunks of
2,048 tokens, 110,000 KV tokens a rank, vLLM preemption); the offered rate is
``load`` (default 0.7, fixed before measuring) times the lockstep regime's capacity
(:func:`bfio.engine.capacity.trace_capacity`), the same for both barriers. Traces:
``$BURSTGPT`` / ``$LONGBENCH_V1`` (default ``results/traces/<name>.parquet``;
LongBench v1's lengths, as the goodput study's calibrated regime, since a v2
prompt exceeds a rank's KV memory). Seeds: 42, 1, 2 (reporting only; nothing is
chosen on them). One JSON line per run is appended to ``OUT_DIR/runs.jsonl`` (a
finished run is skipped when the script runs again); the table (means over the
seeds of the steady p99s, ``bfio.ground.metrics.steady_stats``) is printed at the end.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pandas as pd

from bfio.engine.capacity import trace_capacity
from bfio.engine.prefill import PrefillModel
from bfio.simulator import simulate
from bfio.step_model import StepModel
from bfio.workloads.workload import draw_workload, poisson_arrivals, with_arrivals

TRACES = {"burstgpt": (os.environ.get("BURSTGPT", "results/traces/burstgpt.parquet"), 3000),
          "longbench_v1": (os.environ.get("LONGBENCH_V1", "results/traces/longbench_v1.parquet"), 1000)}
G, B = 8, 72
SEEDS = (42, 1, 2)
ROUTERS = [("vllm_dp", "vllm_dp", None), ("sglang_total_tokens", "sglang_total_tokens", None),
           ("BF-IO instant (prompt_survival)", "bfio", {"horizon": 20, "predictor": "prompt_survival"})]
KEEP = ("ttft_s_p99_steady", "tpot_decode_s_p99_steady", "e2e_s_p99_steady", "throughput_run", "makespan_s",
        "preemptions")
PREFILL = PrefillModel(chunk_tokens=2048, kv_tokens=110000, preemption="vllm")


def main(out: str, load: float = 0.7, seeds: int = len(SEEDS)) -> None:
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    log = out_dir / "runs.jsonl"
    done = {(r["trace"], r["router"], r["barrier"], r["seed"]) for r in map(json.loads, log.read_text().splitlines())
            } if log.exists() else set()
    lockstep = StepModel("calibrated", gpu="a100", model="Llama-2-7b-hf")
    for trace, (path, n) in TRACES.items():
        frame = pd.read_parquet(path)
        rate = load * trace_capacity(frame, G, B, coefficients=lockstep.coefficients(),
                                     prefill_model=PREFILL).requests_per_s
        s, o = frame["prefill_tokens"].to_numpy(), frame["decode_tokens"].to_numpy()
        for seed in SEEDS[:seeds]:
            work = with_arrivals(draw_workload(s, o, n, seed, name=trace), poisson_arrivals(n, rate, seed))
            for label, policy, opts in ROUTERS:
                for barrier in ("lockstep", "independent"):
                    if (trace, label, barrier, seed) in done:
                        continue
                    t0 = time.perf_counter()
                    res = simulate(work, G, B, policy, seed=seed, entry="arrivals", dispatch="instant",
                                   policy_options=opts, show_progress=False, prefill=PREFILL,
                                   step_model=StepModel("calibrated", gpu="a100", model="Llama-2-7b-hf",
                                                        barrier=barrier))
                    row = {"trace": trace, "router": label, "barrier": barrier, "seed": seed, "rate": rate, "n": n,
                           "wall_s": time.perf_counter() - t0, **{k: res.metrics.get(k, 0) for k in KEEP}}
                    with log.open("a") as f:
                        f.write(json.dumps(row) + "\n")
                    print(json.dumps(row), flush=True)
    runs = pd.DataFrame(map(json.loads, log.read_text().splitlines()))
    table = runs.groupby(["trace", "barrier", "router"], sort=False)[list(KEEP) + ["rate", "wall_s"]].mean()
    print(table.to_string(float_format=lambda v: f"{v:.4g}"))


if __name__ == "__main__":
    kinds = (float, int)
    main(sys.argv[1], *(kinds[i](a) for i, a in enumerate(sys.argv[2:])))
