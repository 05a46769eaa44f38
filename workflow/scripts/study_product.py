"""A product of a registered study: a file made from the runs of some of its
settings, e.g. every setting's runs in one file (rule study_product). The make
function comes as an import path (params.job, bfio.studies.jobs.product_job)."""
import pandas as pd

from bfio.ground.progress import script_log
from bfio.studies.declared_rows import declare_config_rows
from bfio.ground.results_io import write_json
from bfio.studies.registry import Product, load_function

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    declare_config_rows(sm.config)  # rows named by label: looked up, not parsed (issue 43)
    make = dict(sm.params.job)["make"]
    product = Product(sm.wildcards.product, make=None if make is None else load_function(make))
    runs = pd.concat([pd.read_csv(p) for p in sm.input], ignore_index=True)
    out = product.build(runs, dict(sm.params.section))
    if product.file.endswith(".csv"):
        out.to_csv(sm.output[0], index=False)
    else:
        write_json(out, sm.output[0])
    log.info("%s from %d runs of %d settings", product.file, len(runs), len(sm.input))
