"""Reference-seed value and mean [95% CI] per row and G (rule experiment_summary)."""
import pandas as pd

from bfio.ground.progress import script_log
from bfio.runs.tables import summarize, summary_markdown, write_table

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    summary = summarize(pd.read_csv(sm.input[0]), sm.params.ref_seed)
    write_table(summary, sm.output.csv, sm.output.md,
                markdown=summary_markdown(summary, sm.params.title, sm.params.ref_seed))
