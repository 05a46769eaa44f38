# Monte Carlo checks of the paper's Section 5 guarantees (issue 5).
# config["theory"] is validated against workflow/schemas/theory.schema.yaml;
# profile "full" (default) or "smoke" selects the grid, resolved in
# bfio.theory.config.resolve. Outputs: results/theory/*.csv, summary.md,
# figures/theory/*.{pdf,png}, logs under logs/theory/.

from snakemake.utils import validate as _theory_validate

from bfio.theory.config import resolve as _theory_resolve
from bfio.theory.figure_names import FIGURES as THEORY_FIGURES

THEORY_RAW = dict(config.get("theory") or {})
_theory_validate(THEORY_RAW, workflow.source_path("../schemas/theory.schema.yaml"), set_default=True)
THEORY = _theory_resolve(THEORY_RAW)
if THEORY.get("data_dir") is None and config.get("data_dir"):
    THEORY["data_dir"] = config["data_dir"]
# Trace-based laws on a machine without the traces in data_dir: read from
# download_dir, fetched first by rule download_trace (common.smk, theory_trace_dir).
THEORY["data_dir"], THEORY_TRACE_FILES = theory_trace_dir(THEORY)

THEORY_THM = {"thm2": "geometric", "thm3": "drift"}
THEORY_FIGS = list(THEORY_FIGURES)

THEORY_TARGETS = (
    [f"results/theory/{t}_{kind}.csv" for t in ("thm1", "thm2", "thm3") for kind in ("cells", "fits")]
    + [f"results/theory/{t}_gap_trends.csv" for t in ("thm2", "thm3")]
    + ["results/theory/energy_decomposition.csv", "results/theory/energy_saving.csv",
       "results/theory/corollary.csv", "results/theory/summary.csv", "results/theory/summary.md"]
    + [f"figures/theory/{f}.{ext}" for f in THEORY_FIGS for ext in ("pdf", "png")]
)


rule theory_thm1:
    input:
        THEORY_TRACE_FILES,
    output:
        cells="results/theory/thm1_cells.csv",
        fits="results/theory/thm1_fits.csv",
        edec="results/theory/energy_decomposition_thm1.csv",
        esav="results/theory/energy_saving_thm1.csv",
        timing="results/theory/timing_thm1.json",
    params:
        cfg=THEORY,
    log:
        "logs/theory/thm1.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/theory_thm1.py"


rule theory_slot:
    input:
        THEORY_TRACE_FILES,
        kernels=kernels_compiled("theory"),
    output:
        cells="results/theory/{thm}_cells.csv",
        fits="results/theory/{thm}_fits.csv",
        gaps="results/theory/{thm}_gap_trends.csv",
        edec="results/theory/energy_decomposition_{thm}.csv",
        esav="results/theory/energy_saving_{thm}.csv",
        timing="results/theory/timing_{thm}.json",
    wildcard_constraints:
        thm="thm2|thm3",
    params:
        cfg=THEORY,
        section=lambda wc: THEORY_THM[wc.thm],
    log:
        "logs/theory/{thm}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/theory_slot.py"


rule theory_energy:
    input:
        edec=expand("results/theory/energy_decomposition_{t}.csv", t=["thm1", "thm2", "thm3"]),
        esav=expand("results/theory/energy_saving_{t}.csv", t=["thm1", "thm2", "thm3"]),
    output:
        edec="results/theory/energy_decomposition.csv",
        esav="results/theory/energy_saving.csv",
        corollary="results/theory/corollary.csv",
    params:
        cfg=THEORY,
    log:
        "logs/theory/energy.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/theory_energy.py"


rule theory_summary:
    input:
        cells=expand("results/theory/{t}_cells.csv", t=["thm1", "thm2", "thm3"]),
        fits=expand("results/theory/{t}_fits.csv", t=["thm1", "thm2", "thm3"]),
        gaps=expand("results/theory/{t}_gap_trends.csv", t=["thm2", "thm3"]),
        edec="results/theory/energy_decomposition.csv",
        esav="results/theory/energy_saving.csv",
        corollary="results/theory/corollary.csv",
        timing=expand("results/theory/timing_{t}.json", t=["thm1", "thm2", "thm3"]),
    output:
        csv="results/theory/summary.csv",
        md="results/theory/summary.md",
    params:
        cfg=THEORY,
    log:
        "logs/theory/summary.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/theory_summary.py"


# The plotting code of the theory figures: a change reruns the figures alone.
THEORY_FIGURE_CODE = code_fingerprint(["figures/style.py", "theory/figures.py"])


# Every theory figure in one job (issue 42): they share their code and read the
# checks' tables only, so one process draws the seven (a job's start, about a
# second of imports, paid once instead of seven times).
rule theory_figures:
    input:
        thm1_cells="results/theory/thm1_cells.csv",
        thm1_fits="results/theory/thm1_fits.csv",
        thm2_cells="results/theory/thm2_cells.csv",
        thm2_fits="results/theory/thm2_fits.csv",
        thm3_cells="results/theory/thm3_cells.csv",
        thm3_fits="results/theory/thm3_fits.csv",
        esav="results/theory/energy_saving.csv",
        corollary="results/theory/corollary.csv",
    output:
        expand("figures/theory/{fig}.{ext}", fig=THEORY_FIGS, ext=("pdf", "png")),
    params:
        code=THEORY_FIGURE_CODE,
        series=THEORY["energy"]["series"],
    log:
        "logs/theory/figures.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/theory_figures.py"
