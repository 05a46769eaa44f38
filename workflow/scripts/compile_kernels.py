"""Compile one group of numba kernels into numba's cache (rule compile_kernels);
nothing to do when the cache holds the group already (bfio.ground.kernel_cache.group_ready:
a previous compile of the same kernel sources, numba and Python, from this checkout's package
directory: numba files kernels by their source's path)."""
import argparse
from pathlib import Path

from bfio.ground.kernel_cache import group_ready, ready_file
from bfio.ground.progress import script_log

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    group, marker = sm.wildcards.group, Path(sm.output[0])
    if group_ready(group):
        line = f"bfio compile: {group} kernels already in numba's cache ({ready_file(group)})"
        log.info(line)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(line + "\n")
    else:
        from bfio.pipeline.kernels_warmup import run  # local: the simulator and numba load only when something compiles

        run(argparse.Namespace(group=[group], marker=marker))
