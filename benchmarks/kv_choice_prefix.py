"""Issue 45's measurement of ``kv: choose`` where prefix caches make a recompute cheap
(not a test): instant BF-IO with its own migrations (``migration = bfio``,
:mod:`bfio.sim.migration`) whose KV is ``recompute``d through the prefill model
(less the destination's cached prefix), ``transfer``red over a 400 Gb/s link, or
either, ``choose``n per migration by the cheaper cost (:mod:`bfio.sim.migration_kv`),
beside instant BF-IO without migrations, on the prefix study's settings and regime
(``config/config.yaml`` ``prefix_study``, :mod:`bfio.studies.prefix_study`: its runs,
workloads and prefill model with per-rank prefix caches; the paper's step with
chunked prefill of 2,048 tokens at 1e-4 s a token, 480,000 KV tokens a rank; BF-IO
``H`` = 20 with its prefix-cache term): the shared Mooncake trace at its own rate,
GRPO groups of 8, closed-loop multi-turn sessions.

    python benchmarks/kv_choice_prefix.py [OUT_CSV] [SETTING ...]

As :mod:`kv_choice` (``benchmarks/kv_choice.py``): per setting and KV way the rule's
``cost_weight`` and evaluations (its ``GRID``) are chosen on the tuning seeds
100-109 (the highest mean throughput), then every row runs on the reported seeds
42, 1-4; per comparison the paired per-seed change (%) with its 95% t-interval.
Migrations per 1,000 requests by kind: recomputed, transferred, free (the request
held no KV). Settings default to ``mooncake_x1 grpo_n8 sessions_closed``. Traces
by their registry names under ``$BFIO_DATA_DIR``.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd
import yaml

from bfio.runs.runner import run_batch
from bfio.studies.prefix_study import generated_requests, prefix_runs
from bfio.traces import load_trace
from kv_choice import GRID, REPORT_SEEDS, TUNE_SEEDS, paired

CONFIG = Path(__file__).resolve().parents[1] / "config" / "config.yaml"
SETTINGS = ("mooncake_x1", "grpo_n8", "sessions_closed")
KV = ("recompute", "transfer", "choose")
KEEP = {"throughput_run": "tok/s", "ttft_s_p99": "p99 TTFT s", "tpot_decode_s_p99": "p99 TPOT s",
        "e2e_s_p99": "p99 e2e s", "migrations": "migr", "migration_recomputes": "recomp",
        "migration_transfers": "transf", "migration_free": "free", "migration_recomputed_tokens": "recomputed tok",
        "migration_transfer_tokens": "transferred tok", "cache_hit_rate": "hit rate"}
PER_1K = ("migrations", "migration_recomputes", "migration_transfers", "migration_free")


class Setting:
    """One prefix-study setting's runs of instant BF-IO with a KV way and a rule's form."""

    def __init__(self, name: str, config: dict):
        section = {**config["prefix_study"], "routers": ["bfio"]}
        self.setting = next(s for s in section["settings"] if s["name"] == name)
        self.section, self.slots = section, int(config["slots"])
        self.frame = load_trace(self.setting["trace"]).to_frame()
        self._generated: dict = {}

    def workload_of(self, run):
        if run.seed not in self._generated:
            self._generated[run.seed] = generated_requests(self.setting, self.frame, run.seed).workload
        return self._generated[run.seed]

    def run(self, seed: int, kv: str, form: dict) -> dict:
        spec = prefix_runs(self.setting, self.section, [seed], self.slots)[0]
        if kv != "none":
            spec = replace(spec, migration="bfio", migration_options=tuple(sorted({"kv": kv, **form}.items())))
        generated = self.setting.get("workload", "trace") != "trace"
        t0 = time.process_time()
        rec = run_batch([spec], {self.setting["trace"]: self.frame},
                        workload_of=self.workload_of if generated else None).iloc[0]
        out = {"setting": self.setting["name"], "kv": kv, "form": str(form), "seed": seed,
               "cpu_s": time.process_time() - t0, "requests": float(rec["requests_run"])}
        for k in KEEP:
            v = rec.get(k)
            out[k] = 0.0 if v is None or pd.isna(v) else float(v)
        return out


def report(setting: str, rows: pd.DataFrame) -> None:
    table = rows.groupby("kv", sort=False)[list(KEEP) + ["cpu_s"]].mean()
    per = rows.groupby("kv", sort=False)[list(PER_1K)].sum().div(rows.groupby("kv", sort=False)["requests"].sum(),
                                                                 axis=0) * 1000.0
    table[list(PER_1K)] = per
    print(f"{setting}: reported (seeds {', '.join(map(str, REPORT_SEEDS))}; mean over seeds; migrations per 1,000 "
          "requests)")
    print(table.rename(columns=KEEP).to_string(float_format=lambda v: f"{v:.5g}"))
    for a, b in (("choose", "transfer"), ("choose", "recompute"), ("transfer", "recompute"), ("recompute", "none"),
                 ("transfer", "none"), ("choose", "none")):
        print(f"{setting}: {a} vs {b}: " + ", ".join(
            f"{KEEP[col]} {paired(rows, a, b, col)}" for col in ("throughput_run", "ttft_s_p99", "tpot_decode_s_p99",
                                                                 "e2e_s_p99")))
    print(flush=True)


def main(out: str | None = None, *names: str) -> None:
    config = yaml.safe_load(CONFIG.read_text())
    rows = []
    for name in names or SETTINGS:
        s = Setting(name, config)
        chosen = {"none": {}}
        for kv in KV:
            tune = pd.DataFrame([s.run(seed, kv, form) for form in GRID for seed in TUNE_SEEDS])
            by = tune.groupby("form", sort=False)[["throughput_run", "migrations"]].mean()
            print(f"{name} {kv}: tuning (seeds 100-109)")
            print(by.to_string(float_format=lambda v: f"{v:.5g}"), flush=True)
            chosen[kv] = max(GRID, key=lambda f: by.loc[str(f), "throughput_run"])
            print(f"{name} {kv}: chosen {chosen[kv]}\n", flush=True)
            rows += tune.assign(phase="tune").to_dict("records")
        rep = pd.DataFrame([s.run(seed, kv, chosen[kv]) for kv in ("none", *KV) for seed in REPORT_SEEDS])
        rows += rep.assign(phase="report").to_dict("records")
        report(name, rep)
        if out:
            pd.DataFrame(rows).to_csv(out, index=False)
    every = pd.DataFrame(rows)
    print(f"CPU: {every['cpu_s'].sum():.1f} s in {len(every)} runs")


if __name__ == "__main__":
    main(*sys.argv[1:])
