"""A registered study's figure from one of its tables and/or products (rule study_figure)."""
import pandas as pd

from bfio.figures import save
from bfio.progress import script_log
from bfio.studies.registry import by_figure
from bfio.studies.report import read_product

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    figure = by_figure(sm.wildcards.figure).figure_named(sm.wildcards.figure)
    table = pd.read_csv(getattr(sm.input, "table", sm.input)[0]) if figure.table is not None else None
    products = {kw: read_product(p) for (kw, _), p in zip(figure.products, getattr(sm.input, "products", []))}
    save(figure.draw(table, dict(sm.params.options), products), sm.output.pdf, sm.output.png)
