"""The generality table: BF-IO vs FCFS per trace, arrival case and G with 95%
intervals (rule generality_table)."""
import json

import pandas as pd

from bfio.progress import script_log
from bfio.studies.generality_report import generality_markdown, generality_table

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    runs = pd.concat([pd.read_csv(p) for p in sm.input.runs], ignore_index=True)
    stats = {}
    for t, p in zip(sm.params.traces, sm.input.stats):
        with open(p) as f:
            stats[t] = json.load(f)
    table = generality_table(runs, stats, sm.params.baseline, list(sm.params.targets))
    runs.to_csv(sm.output.runs, index=False)
    table.to_csv(sm.output.csv, index=False)
    with open(sm.output.md, "w") as f:
        f.write(generality_markdown(table, list(sm.params.targets), sm.params.title, sm.params.seeds))
    log.info("%d runs -> %d table rows", len(runs), len(table))
