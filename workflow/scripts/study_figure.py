"""A registered study's figure from its table (rule study_figure)."""
import pandas as pd

from bfio.figures import save
from bfio.progress import script_log
from bfio.studies.registry import by_figure

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    save(by_figure(sm.wildcards.figure).draw(pd.read_csv(sm.input[0])), sm.output.pdf, sm.output.png)
