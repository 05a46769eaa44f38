"""Prefill/decode length distributions of one trace (rule fig_distributions)."""
import pandas as pd

from bfio.ground.progress import script_log
from bfio.figures import save
from bfio.figures.distributions import plot_distributions

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    fig = plot_distributions(pd.read_parquet(sm.input[0]), sm.wildcards.trace)
    save(fig, sm.output.pdf, sm.output.png)
