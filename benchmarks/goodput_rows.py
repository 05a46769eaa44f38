"""Issue 44: the goodput study's bisection for rows the study does not run (not a
test). Runs :func:`bfio.studies.goodput_study.run_goodput` for the given setting of
``config/config.yaml`` (section ``goodput``, or ``--section actions``: issue 45's
actions study, its rows and variants) in the calibrated regime, for the given
rows, without the references (the study has them), to within the section's
``rel_tol`` of the capacity or ``--rel-tol``'s (a finer bracket decides differences
the study's leaves open):

- the study's rows and its lagged rows with option ``completions: streamed`` (a
  router that sees finished requests in the output stream, ``docs/online.md``);
- ``<row>_freemig``: ``<row>`` with BF-IO's queue moves and migrations whose KV
  moves at no cost (``migration: bfio``, ``kv: transfer`` at 1e9 Gb/s, 4 evaluations
  a call, 2 a rank; issue 45's free-KV reference): a router that may re-place
  running requests at will, a reference for what re-placement could add to
  placement.
- ``<row>_freemig64``: the same with 64 evaluations a call, 16 a rank (what a
  larger re-placement budget adds);
- ``<row>_moves``: ``<row>`` with BF-IO's queue moves (``queue_moves: bfio``, issue
  45: queued requests re-bound before their prefill, at no cost).

    python benchmarks/goodput_rows.py SETTING [--seeds 42,1-4] [--rows a,b] [--out CSV]
        [--section goodput|actions] [--rel-tol 0.01] [--central a,b] [--ahead-of a,b]

Prints per row the mean goodput over the seeds (req/s) and per streamed row the
paired change against the same row on reports alone. With ``--ahead-of a,b``, per
BF-IO row the seeds on which it is ahead of every router named (:func:`ahead`). With the study's seeds the
rows the study has reproduce its runs (``results/studies/goodput``). Traces from
``results/traces`` (``snakemake -c 2 results/traces/<trace>.parquet``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

import bfio.studies.goodput_study as goodput_study
from bfio.studies.goodput import GoodputResult
from bfio.studies.declared_rows import declare_config_rows

sys.path.insert(0, str(Path(__file__).resolve().parent))
from instant_gap import seeds_arg  # noqa: E402  ("42,1-29": this directory's benchmark)

#: the lagged rows of the goodput study and the same rows with the stream
STREAMED = {"sglang_total_tokens_r10_streamed": {"policy": "sglang_total_tokens", "report_interval": 10,
                                                 "completions": "streamed"},
            "bfio_h20_instant_ps_r10_streamed": {"policy": "bfio", "horizon": 20, "predictor": "prompt_survival",
                                                 "report_interval": 10, "completions": "streamed"}}
#: the ``_freemig`` rows' actions (module docstring), as a variant declares them
FREE_MIGRATION = {"queue_moves": "bfio", "migration": "bfio",
                  "migration_options": {"kv": "transfer", "transfer_gbps": 1e9, "evaluations": 4, "per_rank": 2}}
#: per row suffix, the actions it adds to the row it names (module docstring)
SUFFIXES = {"_freemig": FREE_MIGRATION, "_moves": {"queue_moves": "bfio"},
            "_freemig64": {**FREE_MIGRATION, "migration_options": {**FREE_MIGRATION["migration_options"],
                                                                   "evaluations": 64, "per_rank": 16}}}
ROWS = ("vllm_dp", "sglang_total_tokens", "sglang_total_tokens_r10", "sglang_total_tokens_r10_streamed",
        "bfio_h20_instant_ps", "bfio_h20_instant_ps_r10", "bfio_h20_instant_ps_r10_streamed")


def ahead(runs: pd.DataFrame, row: str, routers: list[str]) -> pd.Series:
    """Per seed, whether ``row`` is ahead of every router of ``routers`` beyond the
    bisections' brackets (:meth:`bfio.studies.goodput.GoodputResult.ahead_of`)."""
    res = {(r.seed, r.row): GoodputResult.of_probes(r.probes, r.capacity_rps) for r in runs.itertuples()}
    return pd.Series({seed: all(res[seed, row].ahead_of(res[seed, r]) for r in routers)
                      for seed in sorted(runs["seed"].unique())}, name=row)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("setting")
    ap.add_argument("--seeds", default="42,1-4")
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--ahead-of", default="", help="routers each BF-IO row is checked against, seed by seed")
    ap.add_argument("--central", default="", help="rows run with central dispatch (the pool; --rows: instant)")
    ap.add_argument("--config", default="config/config.yaml")
    ap.add_argument("--out", default=None)
    ap.add_argument("--section", default="goodput", choices=("goodput", "actions"))
    ap.add_argument("--rel-tol", type=float, default=None,
                    help="the bisection's bracket as a share of the capacity (default: the section's rel_tol)")
    args = ap.parse_args()
    config = yaml.safe_load(open(args.config))
    declare_config_rows(config)
    variants = {**config[args.section].get("variants", {}), **STREAMED}
    central = [r for r in args.central.split(",") if r]
    for row in args.rows.split(",") + central:  # <row><suffix>: <row> with the suffix's actions
        for suffix, actions in SUFFIXES.items():
            if row.endswith(suffix):
                base = row[: -len(suffix)]
                variants[row] = {**variants.get(base, {"policy": base}), **actions}
    section = {**config[args.section], "central": central, "instant": args.rows.split(","), "variants": variants}
    if args.rel_tol is not None:
        section["rel_tol"] = args.rel_tol
    setting = {**next(s for s in section["settings"] if s["name"] == args.setting), "regime": "calibrated"}
    frame = pd.read_parquet(f"results/traces/{setting['trace']}.parquet")
    seeds = seeds_arg(args.seeds)
    goodput_study.REFERENCE_ROWS = ()  # the routers only: the study bisects the references
    runs = goodput_study.run_goodput(args.setting, setting, section, seeds, int(config["slots"]), frame)
    if args.out:
        runs.to_csv(args.out, index=False)
    by = runs.pivot(index="seed", columns="row", values="goodput_rps")
    print(f"{args.setting} ({args.section}), calibrated regime, seeds {args.seeds}: mean goodput (req/s)")
    print(by.mean().round(2).to_string())
    for row in by.columns:
        if row.endswith("_streamed") and row[: -len("_streamed")] in by:
            d = 100 * (by[row] / by[row[: -len("_streamed")]] - 1)
            print(f"{row} vs reports alone: {d.mean():+.1f}% (per seed {np.round(d.to_numpy(), 1).tolist()})")
    routers = [r for r in args.ahead_of.split(",") if r]
    for row in [r for r in by.columns if r.startswith("bfio")] if routers else []:
        won = ahead(runs, row, routers)
        print(f"{row} ahead of every one of {', '.join(routers)} beyond the brackets on {int(won.sum())} of "
              f"{len(won)} seeds")


if __name__ == "__main__":
    main()
