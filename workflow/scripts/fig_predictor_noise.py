"""Imbalance and throughput of BF-IO against predictor noise (rule fig_predictor_noise)."""
import pandas as pd

from bfio.progress import script_log
from bfio.figures import save
from bfio.figures.predictor_noise import plot_predictor_noise

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    save(plot_predictor_noise(pd.read_csv(sm.input[0])), sm.output.pdf, sm.output.png)
