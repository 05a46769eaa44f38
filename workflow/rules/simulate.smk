# Simulation: one job per run (trace, N, G, B, policy row, seed). Runs shared
# by several experiments are simulated once. Outputs: summary JSON and per-step
# series (parquet); the load matrix only for the trajectory-figure runs.


rule simulate:
    input:
        trace=run_trace_table,
    output:
        summary="results/runs/{run}/summary.json",
        series="results/runs/{run}/series.parquet",
    params:
        bfio=config["bfio"],
        code=SIM_CODE,
    log:
        "logs/runs/{run}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/simulate.py"


# Same simulation, also recording the (steps, G) gating loads; only for the
# runs listed under figures.trajectories (reference seed).
use rule simulate as simulate_recorded with:
    output:
        summary="results/runs/{run}/summary.json",
        series="results/runs/{run}/series.parquet",
        loads="results/runs/{run}/loads.npy",
    wildcard_constraints:
        run="|".join(re.escape(r) for r in RECORDED_RUNS) if RECORDED_RUNS else "NO_RUN",
    log:
        "logs/runs/{run}.recorded.log",


ruleorder: simulate_recorded > simulate


rule collect_runs:
    input:
        experiment_summaries,
    output:
        "results/tables/runs_{experiment}.csv",
    log:
        "logs/tables/runs_{experiment}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/collect_runs.py"
