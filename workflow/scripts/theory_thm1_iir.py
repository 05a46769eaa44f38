"""figures/theory/thm1_iir: Theorem 1 IIR vs rate and Lemma 1 gaps."""
import sys
from pathlib import Path

import pandas as pd

from bfio.theory.figures import thm1_iir

sys.stderr = sys.stdout = open(snakemake.log[0], "w")  # noqa: F821
thm1_iir(pd.read_csv(snakemake.input.cells), pd.read_csv(snakemake.input.fits),  # noqa: F821
         Path(snakemake.output.pdf).with_suffix(""))  # noqa: F821
