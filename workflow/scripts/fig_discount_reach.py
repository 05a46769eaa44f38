"""How far ahead should BF-IO look (rule fig_discount_reach)."""
import pandas as pd

from bfio.progress import script_log
from bfio.figures import save
from bfio.figures.discount_reach import plot_discount_reach

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    save(plot_discount_reach(pd.read_csv(sm.input.choose)), sm.output.pdf, sm.output.png)
