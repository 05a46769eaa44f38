"""Predictor study table: mean [95% CI] per setting and row, paired effects (rule predictor_table)."""
import pandas as pd

from bfio.progress import script_log
from bfio.studies.predictor_summary import predictor_markdown, summarize_predictors
from bfio.tables import write_table

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    runs = pd.concat([pd.read_csv(p) for p in sm.input.runs], ignore_index=True)
    summary = summarize_predictors(runs, sm.params.oracle_row)
    write_table(summary, sm.output.csv, sm.output.md,
                markdown=predictor_markdown(summary, dict(sm.params.settings), sm.params.title))
