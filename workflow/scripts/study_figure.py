"""A registered study's figure from one of its tables and/or products (rule study_figure).
The plot function comes as an import path (params.job, bfio.studies.jobs.figure_job),
so this job imports its figure module alone."""
import inspect

import pandas as pd

from bfio.figures import save
from bfio.ground.progress import script_log
from bfio.studies.declared_rows import declare_config_rows
from bfio.studies.registry import draw, load_function
from bfio.studies.report import read_product

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    declare_config_rows(sm.config)  # rows named by label: looked up, not parsed (issue 43)
    job = dict(sm.params.job)
    table = pd.read_csv(sm.input.table[0]) if job["table"] else None
    products = {kw: read_product(p) for kw, p in zip(job["products"], sm.input.products)}
    options = dict(sm.params.options)
    plot = load_function(job["plot"])
    if "settings" in inspect.signature(plot).parameters:  # titles in words from the study's settings
        options.setdefault("settings", dict(sm.params.settings))
    save(draw(plot, table, options, products), sm.output.pdf, sm.output.png)
