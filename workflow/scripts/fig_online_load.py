"""p99 end-to-end latency and throughput against load, per policy (rule fig_online_load)."""
import pandas as pd

from bfio.progress import script_log
from bfio.figures import save
from bfio.figures.online_load import plot_online_load

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    save(plot_online_load(pd.read_csv(sm.input[0])), sm.output.pdf, sm.output.png)
