"""figures/theory/thm2_snapshot: FCFS per-slot snapshot mean and variance vs formula."""
import sys
from pathlib import Path

import pandas as pd

from bfio.theory.figures import thm2_snapshot

sys.stderr = sys.stdout = open(snakemake.log[0], "w")  # noqa: F821
thm2_snapshot(pd.read_csv(snakemake.input.cells), Path(snakemake.output.pdf).with_suffix(""))  # noqa: F821
