# bfio pipeline: regenerates every experimental table and figure of the paper.
#   snakemake -c 2                                  # paper scale (config/config.yaml)
#   snakemake -c 2 --configfile config/smoke.yaml   # small, for CI
#   snakemake --report report.html                  # HTML report with captions
# See docs/pipeline.md.
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/traces.smk"
include: "workflow/rules/simulate.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/figures.smk"
# The same comparison on every trace, backlog and trace replay (docs/generality.md).
include: "workflow/rules/generality.smk"


# The theory checks live in their own rule file (another component); the
# pipeline runs with or without it.
if Path(workflow.basedir, "workflow/rules/theory.smk").exists():

    include: "workflow/rules/theory.smk"


report: "workflow/report/workflow.rst"


rule all:
    default_target: True
    input:
        all_targets(),
        globals().get("THEORY_TARGETS", []),
        GENERALITY_TARGETS,
