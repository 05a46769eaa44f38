"""A registered study's table: every setting's runs summarized (rule study_table).
The tabulate function comes as an import path (params.job, bfio.studies.jobs.table_job),
so this job imports its summary module alone."""
import pandas as pd

from bfio.ground.progress import script_log
from bfio.studies.declared_rows import declare_config_rows
from bfio.studies.registry import load_function
from bfio.studies.report import read_product
from bfio.runs.tables import write_table

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    declare_config_rows(sm.config)  # rows named by label: looked up, not parsed (issue 43)
    job = dict(sm.params.job)
    runs = pd.concat([pd.read_csv(p) for p in sm.input.runs], ignore_index=True)
    extra = {"inputs": list(sm.input.inputs)} if job["inputs"] else {}
    extra.update({kw: read_product(p) for kw, p in zip(job["products"], sm.input.products)})
    table, markdown = load_function(job["tabulate"])(runs, dict(sm.params.section), dict(sm.params.settings), **extra)
    write_table(table, sm.output.csv, sm.output.md, markdown=markdown)
