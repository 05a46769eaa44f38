"""Production routers table (issue 18): every instant-dispatch row of the online
study by report interval, p99 e2e mean [95% CI] and its paired ratio to the
reference row (rule online_routers_table)."""
import pandas as pd

from bfio.progress import script_log
from bfio.studies.routers_summary import routers_markdown, summarize_routers
from bfio.tables import write_table

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    runs = pd.concat([pd.read_csv(p) for p in sm.input.runs], ignore_index=True)
    summary = summarize_routers(runs, sm.params.reference)
    write_table(summary, sm.output.csv, sm.output.md, markdown=routers_markdown(summary, dict(sm.params.settings)))
