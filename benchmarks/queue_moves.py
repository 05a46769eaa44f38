"""Issue 45's measurement of queue moves with instant dispatch (not a test):
LongBench-like Poisson runs at a share of the model's capacity, central BF-IO
against instant routers with and without moves.

    python benchmarks/queue_moves.py OUT_DIR [seeds] [load] [N] [regime]

``regime``: ``paper`` (the paper's step loop on ``results/traces/longbench.parquet``)
or ``calibrated`` (the goodput study's: A100 Llama-2-7B step, chunked prefill of
2,048 tokens, 110,000 KV tokens a rank, vLLM preemption, on LongBench v1 lengths,
``$LONGBENCH_V1`` or ``results/traces/longbench_v1.parquet``).

One JSON line per run is appended to ``OUT_DIR/runs.jsonl`` (a finished run is
skipped when the script is run again); the table is printed at the end.
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

TRACES = {"paper": os.environ.get("LONGBENCH", "results/traces/longbench.parquet"),
          "calibrated": os.environ.get("LONGBENCH_V1", "results/traces/longbench_v1.parquet")}
G, B = 16, 72
BFIO = {"horizon": 20}
ROWS = [  # label, policy, dispatch, queue_moves, options
    ("central BF-IO", "bfio", "central", "none", BFIO),
    ("instant BF-IO", "bfio", "instant", "none", BFIO),
    ("instant BF-IO + bfio moves", "bfio", "instant", "bfio", BFIO),
    ("instant BF-IO + sglang_balancer", "bfio", "instant", "sglang_balancer", BFIO),
    ("sglang_total_tokens", "sglang_total_tokens", "instant", "none", None),
    ("sglang_total_tokens + sglang_balancer", "sglang_total_tokens", "instant", "sglang_balancer", None),
]
KEEP = ("e2e_s_p50", "e2e_s_p99", "throughput_run", "queue_wait_s_p99", "ttft_s_p99", "tpot_s_p99",
        "queue_move_count", "queue_moved_requests", "preemptions", "avg_imbalance_run")


def main(out: str, seeds: int = 3, load: float = 0.9, n: int = 4000, regime: str = "paper") -> None:
    step = StepModel(step_model="calibrated", gpu="a100", model="Llama-2-7b-hf") if regime == "calibrated" else None
    prefill = PrefillModel(chunk_tokens=2048, kv_tokens=110000, preemption="vllm") if regime == "calibrated" else None
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    log = out_dir / "runs.jsonl"
    done = {(r["label"], r["seed"]) for r in map(json.loads, log.read_text().splitlines())} if log.exists() else set()
    frame = pd.read_parquet(TRACES[regime])
    rate = load * trace_capacity(frame, G, B, coefficients=None if step is None else step.coefficients(),
                                 prefill_model=prefill).requests_per_s
    s, o = frame["prefill_tokens"].to_numpy(), frame["decode_tokens"].to_numpy()
    for seed in range(seeds):
        work = with_arrivals(draw_workload(s, o, n, seed, name="longbench"), poisson_arrivals(n, rate, seed))
        for label, policy, dispatch, moves, opts in ROWS:
            if (label, seed) in done:
                continue
            t0 = time.perf_counter()
            res = simulate(work, G, B, policy, seed=seed, entry="arrivals", dispatch=dispatch, queue_moves=moves,
                           policy_options=opts, show_progress=False, prefill=prefill, step_model=step)
            row = {"label": label, "seed": seed, "rate": rate, "n": n, "wall_s": time.perf_counter() - t0,
                   **{k: res.metrics.get(k, 0) for k in KEEP}}
            with log.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)
    runs = pd.DataFrame(map(json.loads, log.read_text().splitlines()))
    table = runs.groupby("label", sort=False)[list(KEEP) + ["wall_s"]].mean()
    table["moves_per_1000"] = 1000 * table["queue_move_count"] / n
    print(table.to_string(float_format=lambda v: f"{v:.4g}"))


if __name__ == "__main__":
    kinds = (int, float, int, str)
    main(sys.argv[1], *(kinds[i](a) for i, a in enumerate(sys.argv[2:])))
