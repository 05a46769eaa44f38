"""A registered study's table: every setting's runs summarized (rule study_table)."""
import pandas as pd

from bfio.progress import script_log
from bfio.studies.registry import by_table
from bfio.tables import write_table

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    runs = pd.concat([pd.read_csv(p) for p in sm.input.runs], ignore_index=True)
    table, markdown = by_table(sm.wildcards.study).tabulate(runs, dict(sm.params.section), dict(sm.params.settings))
    write_table(table, sm.output.csv, sm.output.md, markdown=markdown)
