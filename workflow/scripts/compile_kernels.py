"""Compile one group of numba kernels into numba's cache (rule compile_kernels)."""
import argparse
from pathlib import Path

from bfio.kernels_warmup import run
from bfio.progress import script_log

with script_log(snakemake.log[0]):  # noqa: F821
    sm = snakemake  # noqa: F821
    run(argparse.Namespace(group=[sm.wildcards.group], marker=Path(sm.output[0])))
