# bfio pipeline: regenerates every experimental table and figure of the paper.
#   snakemake -c 2                                  # paper scale (config/config.yaml)
#   snakemake -c 2 --configfile config/smoke.yaml   # small, for CI
#   snakemake -c 2 <targets> --configfile my.yaml    # my.yaml sets run_name: outputs in runs/<run_name>/
#   snakemake --report report.html                  # HTML report with captions
# See docs/pipeline.md.
import os
from pathlib import Path

from snakemake.utils import min_version

# Figure scripts only save files: the non-interactive backend for every job
# (bfio.figures does not set a backend, so notebooks plot inline).
os.environ.setdefault("MPLBACKEND", "Agg")

# Every job is a new Python process that imports bfio. Where PYTHONDONTWRITEBYTECODE
# is set, no process writes the package's bytecode, so each job compiled every bfio
# module it imports from source (0.2-0.4 s CPU a job): write it once, here (checks
# only timestamps when up to date; a read-only install, which pip compiled, is left as is).
import compileall

import bfio

compileall.compile_dir(Path(bfio.__file__).parent, quiet=2)

min_version("9.0")


configfile: "config/config.yaml"


# A named run (README "Bring your own trace"): a --configfile that sets
# run_name replaces config/config.yaml instead of extending it, and the run
# works in runs/<run_name>/ so the default run's outputs are never touched.
from bfio.pipeline.config import named_run

NAMED_RUN_DIR = named_run(config, workflow.config_settings.overwrite_config)
if NAMED_RUN_DIR:

    workdir: NAMED_RUN_DIR


include: "workflow/rules/common.smk"
include: "workflow/rules/kernels.smk"
include: "workflow/rules/traces.smk"
include: "workflow/rules/simulate.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/figures.smk"
# Studies beyond the paper (issue 6, docs/studies.md): the generic study
# rules run every registered study (bfio.studies.registry: each module of
# bfio.studies that registers one, then the plugins).
include: "workflow/rules/studies_common.smk"
include: "workflow/rules/studies.smk"


# The theory checks live in their own rule file (another component); the
# pipeline runs with or without it.
if Path(workflow.basedir, "workflow/rules/theory.smk").exists():

    include: "workflow/rules/theory.smk"


report: "workflow/report/workflow.rst"


# The job rate limiter's timers (profiles/default: max-jobs-per-timespan) are
# threads Python waits for at exit: cancelled as soon as the run ends, however it
# ends (common.smk), or it would end up to a timespan after its last job.
onsuccess:
    cancel_rate_limit_timers()


onerror:
    cancel_rate_limit_timers()


rule all:
    default_target: True
    input:
        all_targets(),
        globals().get("THEORY_TARGETS", []),
        STUDY_TARGETS,
