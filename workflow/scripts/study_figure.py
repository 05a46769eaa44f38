"""A registered study's figure from one of its tables and/or products (rule study_figure)."""
import importlib
import inspect

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
    options = dict(sm.params.options)
    plot = figure.plot
    if isinstance(plot, str):
        module, _, name = plot.partition(":")
        plot = getattr(importlib.import_module(module), name)
    if "settings" in inspect.signature(plot).parameters:  # titles in words from the study's settings
        options.setdefault("settings", dict(sm.params.settings))
    save(figure.draw(table, options, products), sm.output.pdf, sm.output.png)
