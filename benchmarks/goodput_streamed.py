"""Issue 44: the goodput study's lagged rows with option ``completions: streamed``
(a router that sees finished requests in the output stream, ``docs/online.md``), not
a test. Runs the goodput study's bisection (:func:`bfio.studies.goodput_study.run_goodput`)
for the given setting of ``config/config.yaml`` (section ``goodput``) in the
calibrated regime, for the study's lagged rows and the same rows with the stream,
without the references (the study has them):

    python benchmarks/goodput_streamed.py SETTING [--seeds 42,1,2,3,4] [--rows a,b] [--out CSV]

Prints per row the mean goodput over the seeds (req/s) and per streamed row the
paired change against the same row on reports alone. With the study's seeds the
rows the study has reproduce its runs (``results/studies/goodput``). Traces from
``results/traces`` (``snakemake -c 2 results/traces/<trace>.parquet``).
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import yaml

import bfio.studies.goodput_study as goodput_study
from bfio.studies.declared_rows import declare_config_rows

#: the lagged rows of the goodput study and the same rows with the stream
STREAMED = {"sglang_total_tokens_r10_streamed": {"policy": "sglang_total_tokens", "report_interval": 10,
                                                 "completions": "streamed"},
            "bfio_h20_instant_ps_r10_streamed": {"policy": "bfio", "horizon": 20, "predictor": "prompt_survival",
                                                 "report_interval": 10, "completions": "streamed"}}
ROWS = ("vllm_dp", "sglang_total_tokens", "sglang_total_tokens_r10", "sglang_total_tokens_r10_streamed",
        "bfio_h20_instant_ps", "bfio_h20_instant_ps_r10", "bfio_h20_instant_ps_r10_streamed")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("setting")
    ap.add_argument("--seeds", default="42,1,2,3,4")
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--config", default="config/config.yaml")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    config = yaml.safe_load(open(args.config))
    declare_config_rows(config)
    section = {**config["goodput"], "central": [], "instant": args.rows.split(","),
               "variants": {**config["goodput"].get("variants", {}), **STREAMED}}
    setting = {**next(s for s in section["settings"] if s["name"] == args.setting), "regime": "calibrated"}
    frame = pd.read_parquet(f"results/traces/{setting['trace']}.parquet")
    seeds = [int(x) for x in args.seeds.split(",")]
    goodput_study.REFERENCE_ROWS = ()  # the routers only: the study bisects the references
    runs = goodput_study.run_goodput(args.setting, setting, section, seeds, int(config["slots"]), frame)
    if args.out:
        runs.to_csv(args.out, index=False)
    by = runs.pivot(index="seed", columns="row", values="goodput_rps")
    print(f"{args.setting}, calibrated regime, seeds {args.seeds}: mean goodput (req/s)")
    print(by.mean().round(2).to_string())
    for row in by.columns:
        if row.endswith("_streamed") and row[: -len("_streamed")] in by:
            d = 100 * (by[row] / by[row[: -len("_streamed")]] - 1)
            print(f"{row} vs reports alone: {d.mean():+.1f}% (per seed {np.round(d.to_numpy(), 1).tolist()})")


if __name__ == "__main__":
    main()
