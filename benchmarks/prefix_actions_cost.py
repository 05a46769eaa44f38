"""Issue 45's simulation cost of BF-IO's actions in the prefix-cache regime (not a
test): instant BF-IO (its prefix-cache term, ``H`` = 20) with its migrations
(``migration: bfio``; ``kv`` ``recompute``, ``transfer`` or ``choose``) and with its
queue moves and ``choose`` migrations together (``prefix_actions.py``'s
``bfio_actions`` row) against the same run without actions, on the prefix study's
regime and settings (``config/config.yaml`` ``prefix_study``, as
``benchmarks/kv_choice_prefix.py`` runs them: the paper's step with chunked
prefill of 2,048 tokens at 1e-4 s a token, 480,000 KV tokens a rank with their
prefix caches, G = 8, B = 72). The migration rule's form is
``prefix_actions.py``'s reported one (``cost_weight`` 4, one evaluation a call, one
a rank); nothing is chosen here.

    python benchmarks/prefix_actions_cost.py [--settings NAME ...] [--seeds 42 1 2] [--repeats 3] [--out CSV]

Per setting, seed and row: the least process time of ``--repeats`` runs (the rows
interleaved within each repeat, after one warm-up run of each), the ratio with
actions over without (issue 45's target: at most 2x; over the seeds, the ratio of
the summed times and the per-seed range), the throughput, the p99 TTFT and the
actions per 1,000 requests. Settings default to ``mooncake_x1``. Traces by their
registry names under ``$BFIO_DATA_DIR``.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
import pandas as pd
import yaml

from bfio.runs.runner import run_batch
from bfio.studies.prefix_study import prefix_runs
from kv_choice_prefix import CONFIG, Setting

SEEDS = (42, 1, 2)
FORM = {"cost_weight": 4.0, "evaluations": 1, "per_rank": 1}
#: per row: (queue moves, migration KV way or None)
ROWS = {"none": ("none", None), "recompute": ("none", "recompute"), "transfer": ("none", "transfer"),
        "choose": ("none", "choose"), "moves + choose": ("bfio", "choose")}
COUNTS = ("migrations", "migration_recomputes", "migration_transfers", "migration_free", "queue_move_count")


def run(s: Setting, seed: int, row: str) -> tuple[float, pd.Series]:
    """One run of ``row`` on setting ``s`` and ``seed``: its process time and record."""
    moves, kv = ROWS[row]
    spec = replace(prefix_runs(s.setting, s.section, [seed], s.slots)[0], queue_moves=moves)
    if kv is not None:
        spec = replace(spec, migration="bfio", migration_options=tuple(sorted({"kv": kv, **FORM}.items())))
    generated = s.setting.get("workload", "trace") != "trace"
    t0 = time.process_time()
    rec = run_batch([spec], {s.setting["trace"]: s.frame}, workload_of=s.workload_of if generated else None).iloc[0]
    return time.process_time() - t0, rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--settings", nargs="*", default=["mooncake_x1"])
    ap.add_argument("--seeds", nargs="*", type=int, default=list(SEEDS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    config = yaml.safe_load(CONFIG.read_text())
    rows = []
    for name in args.settings:
        s = Setting(name, config)
        for row in ROWS:  # warm-up: kernels loaded, workloads generated
            run(s, args.seeds[0], row)
        for seed in args.seeds:
            best, recs = {row: np.inf for row in ROWS}, {}
            for _ in range(args.repeats):
                for row in ROWS:
                    cpu, recs[row] = run(s, seed, row)
                    best[row] = min(best[row], cpu)
            for row, rec in recs.items():
                n = float(rec["requests_run"])
                rows.append({"setting": name, "seed": seed, "row": row, "cpu_s": best[row],
                             "throughput": float(rec["throughput_run"]), "ttft_p99_s": float(rec["ttft_s_p99"]),
                             **{c: 1000.0 * float(0.0 if pd.isna(rec.get(c)) else rec.get(c, 0.0)) / n
                                for c in COUNTS}})
            print(f"{name} seed {seed}: " + ", ".join(f"{r} {best[r]:.3f} s" for r in ROWS), flush=True)
    t = pd.DataFrame(rows)
    if args.out:
        t.to_csv(args.out, index=False)
    print(f"\nleast CPU of {args.repeats} runs; actions per 1,000 requests; mean over seeds {tuple(args.seeds)}")
    with pd.option_context("display.width", 200):
        print(t.groupby(["setting", "row"], sort=False).mean(numeric_only=True).drop(columns="seed").to_string(
            float_format=lambda v: f"{v:.6g}"))
    p = t.pivot(index=["setting", "seed"], columns="row", values="cpu_s")
    for name in args.settings:
        for row in list(ROWS)[1:]:
            r = p[row].loc[name] / p["none"].loc[name]
            total = p[row].loc[name].sum() / p["none"].loc[name].sum()
            print(f"{name}: CPU with {row} / without: {total:.2f}x (per seed {r.min():.2f}..{r.max():.2f})")


if __name__ == "__main__":
    main()
