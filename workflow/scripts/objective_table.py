"""Objective study table: choose scores and confirm summary (rule objective_table)."""
import json

import pandas as pd

from bfio.progress import script_log
from bfio.studies.objective_study import objective_markdown, scores, summarize_confirm
from bfio.tables import write_table

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    with open(sm.input.recommendation) as f:
        rec = json.load(f)
    confirm = summarize_confirm(pd.concat([pd.read_csv(p) for p in sm.input.confirm], ignore_index=True))
    md = objective_markdown(scores(pd.read_csv(sm.input.choose)), rec, confirm, sm.params.title)
    write_table(confirm, sm.output.csv, sm.output.md, markdown=md)
