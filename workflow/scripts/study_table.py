"""A registered study's table: every setting's runs summarized (rule study_table)."""
import pandas as pd

from bfio.progress import script_log
from bfio.studies.registry import by_table
from bfio.studies.report import read_product
from bfio.tables import write_table

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    study = by_table(sm.wildcards.table)
    spec = study.table_named(sm.wildcards.table)
    runs = pd.concat([pd.read_csv(p) for p in sm.input.runs], ignore_index=True)
    extra = {"inputs": list(sm.input.inputs)} if study.table_inputs is not None else {}
    extra.update({kw: read_product(p) for (kw, _), p in zip(spec.products, getattr(sm.input, "products", []))})
    table, markdown = spec.tabulate(runs, dict(sm.params.section), dict(sm.params.settings), **extra)
    write_table(table, sm.output.csv, sm.output.md, markdown=markdown)
