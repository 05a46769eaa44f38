"""Online study table: mean [95% CI] per setting, load, dispatch and row (rule online_table)."""
import pandas as pd

from bfio.progress import script_log
from bfio.studies.online_summary import online_markdown, summarize_online
from bfio.tables import write_table

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    runs = pd.concat([pd.read_csv(p) for p in sm.input.runs], ignore_index=True)
    summary = summarize_online(runs)
    write_table(summary, sm.output.csv, sm.output.md,
                markdown=online_markdown(summary, dict(sm.params.settings), sm.params.title))
