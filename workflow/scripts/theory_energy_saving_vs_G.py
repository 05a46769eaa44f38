"""figures/theory/energy_saving_vs_G: measured saving and Theorem 4's bound vs G (Corollary 1)."""
import sys
from pathlib import Path

import pandas as pd

from bfio.theory.figures import energy_vs_G

sys.stderr = sys.stdout = open(snakemake.log[0], "w")  # noqa: F821
energy_vs_G(pd.read_csv(snakemake.input.esav), pd.read_csv(snakemake.input.corollary),  # noqa: F821
            snakemake.params.series, Path(snakemake.output.pdf).with_suffix(""))  # noqa: F821
