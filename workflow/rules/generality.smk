# Study (issue 6): the paper's comparison on every trace (docs/generality.md).
# One simulation job per (trace, G, arrival job): "backlog" runs every policy
# row x seed with N = k G B drawn requests; "replay" (traces with arrival
# times) runs every replay case x row x seed on the trace's own timestamps,
# reading the backlog job's FCFS throughput as the saturation rate. The table
# and the figure only read those CSVs (never rerun a simulation).
# Outputs: results/studies/generality/, results/tables/generality.*,
# figures/generality.*

GEN = config["generality"]
GEN_TRACES = list(GEN["traces"])
GEN_WORKERS = [int(g) for g in GEN["workers"]]
GEN_REPLAY = bool(GEN["replay"]["time_scales"] or GEN["replay"]["loads"])
GEN_REPLAY_TRACES = [t for t in GEN_TRACES if GEN_REPLAY and TRACE_SPECS[t].arrival_col]
GEN_JOBS = expand(
    "results/studies/generality/{trace}/g{workers}_backlog.csv", trace=GEN_TRACES, workers=GEN_WORKERS
) + expand(
    "results/studies/generality/{trace}/g{workers}_replay.csv", trace=GEN_REPLAY_TRACES, workers=GEN_WORKERS
)
GEN_SIM_CODE = code_fingerprint([*SIMULATION_SOURCES, "studies/generality.py"])
GEN_TABLE_CODE = code_fingerprint(["studies/aggregate.py", "studies/generality_report.py", "tables.py"])
# what a simulation job depends on (the table's targets are not among them)
GEN_SIM_PARAMS = {k: GEN[k] for k in ("rows", "requests_per_slot", "baseline", "replay")}

GENERALITY_TARGETS = []
if GEN_TRACES:
    GENERALITY_TARGETS += expand("results/tables/generality.{fmt}", fmt=["csv", "md"])
    GENERALITY_TARGETS += expand("figures/generality.{ext}", ext=FIG_FORMATS)


rule generality_simulate:
    input:
        trace="results/traces/{trace}.parquet",
        # replay jobs read the backlog job's FCFS throughput (saturation rate)
        backlog=lambda wc: (
            f"results/studies/generality/{wc.trace}/g{wc.workers}_backlog.csv"
            if wc.arrival == "replay"
            else []
        ),
    output:
        "results/studies/generality/{trace}/g{workers}_{arrival}.csv",
    params:
        study=GEN_SIM_PARAMS,
        seeds=config["seeds"],
        slots=GEN.get("slots") or config["slots"],
        bfio=config["bfio"],
        code=GEN_SIM_CODE,
    wildcard_constraints:
        workers=r"\d+",
        arrival="backlog|replay",
    log:
        "logs/studies/generality/{trace}_g{workers}_{arrival}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/generality_simulate.py"


rule generality_table:
    input:
        runs=GEN_JOBS,
        stats=expand("results/traces/{trace}.stats.json", trace=GEN_TRACES),
    output:
        csv=report(
            "results/tables/generality.csv",
            caption="../report/generality_table.rst",
            category="Tables",
            subcategory="Beyond the paper",
        ),
        md="results/tables/generality.md",
        runs="results/studies/generality/runs.csv",
    params:
        traces=GEN_TRACES,
        baseline=GEN["baseline"],
        targets=GEN["targets"],
        title=GEN["description"],
        seeds=config["seeds"],
        code=GEN_TABLE_CODE,
    log:
        "logs/tables/generality.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/generality_table.py"


rule fig_generality:
    input:
        "results/tables/generality.csv",
    output:
        pdf="figures/generality.pdf",
        png=report(
            "figures/generality.png",
            caption="../report/generality.rst",
            category="Figures",
            subcategory="Beyond the paper",
            labels={"figure": "generality across traces"},
        ),
    params:
        targets=GEN["targets"],
        code=figure_code("generality"),
    log:
        "logs/figures/generality.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/fig_generality.py"
