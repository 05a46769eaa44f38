"""Starvation table and the recommended default admission (rule starvation_table)."""
import pandas as pd

from bfio.progress import script_log
from bfio.results_io import write_json
from bfio.studies.starvation_summary import recommend_admission, starvation_markdown, summarize_starvation
from bfio.tables import write_table

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    runs = pd.concat([pd.read_csv(p) for p in sm.input.runs], ignore_index=True)
    summary = summarize_starvation(runs)
    rec = recommend_admission(summary, sm.params.max_cost_pct, by=sm.params.recommend_by)
    write_table(summary, sm.output.csv, sm.output.md,
                markdown=starvation_markdown(summary, dict(sm.params.settings), rec, sm.params.title))
    write_json(rec, sm.output.recommendation)
    log.info("recommended admission: %s", rec["admission"])
