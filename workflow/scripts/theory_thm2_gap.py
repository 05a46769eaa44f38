"""figures/theory/thm2_gap: Theorem 2 BF-IO average gap against s_max/p."""
import sys
from pathlib import Path

import pandas as pd

from bfio.theory.figures import gap_figure

sys.stderr = sys.stdout = open(snakemake.log[0], "w")  # noqa: F821
gap_figure(pd.read_csv(snakemake.input.cells), "dist", "Theorem 2: BF-IO long-run average gap",  # noqa: F821
           Path(snakemake.output.pdf).with_suffix(""))  # noqa: F821
