"""figures/theory/thm3_iir: Theorem 3 IIR vs the theorem's rate."""
import sys
from pathlib import Path

import pandas as pd

from bfio.theory.figures import slot_iir

sys.stderr = sys.stdout = open(snakemake.log[0], "w")  # noqa: F821
slot_iir(pd.read_csv(snakemake.input.cells), pd.read_csv(snakemake.input.fits), "drift", "Theorem 3",  # noqa: F821
         Path(snakemake.output.pdf).with_suffix(""))  # noqa: F821
