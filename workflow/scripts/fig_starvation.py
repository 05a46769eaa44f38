"""Wait against throughput per BF-IO admission rule (rule fig_starvation)."""
import pandas as pd

from bfio.progress import script_log
from bfio.figures import save
from bfio.figures.starvation import plot_starvation

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    save(plot_starvation(pd.read_csv(sm.input[0])), sm.output.pdf, sm.output.png)
