# Simulation: one job per cell (trace, N, G, B, policy row) runs every seed of
# it (config key seeds; an experiment's extra_seeds in a second job) in one
# process. Runs shared by several experiments are simulated once. Outputs per
# run: summary JSON and per-step series (parquet); the load matrix only for the
# trajectory-figure runs (reference seed).


rule simulate:
    input:
        trace=cell_trace_table,
        kernels=kernels_compiled("simulation"),
    output:
        summary=cell_outputs("summary.json"),
        series=cell_outputs("series.parquet"),
    params:
        defaults=POLICY_DEFAULTS,
        code=SIM_CODE,
        seeds=SEEDS,
        recorded_seed=None,
    log:
        "logs/runs/{cell}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/simulate.py"


# Same simulations, also recording the (steps, G) gating loads of the
# reference seed; only for the cells listed under figures.trajectories.
use rule simulate as simulate_recorded with:
    output:
        summary=cell_outputs("summary.json"),
        series=cell_outputs("series.parquet"),
        loads=cell_outputs("loads.npy", [RECORDED_SEED]),
    params:
        defaults=POLICY_DEFAULTS,
        code=SIM_CODE,
        seeds=SEEDS,
        recorded_seed=RECORDED_SEED,
    wildcard_constraints:
        cell="|".join(re.escape(c) for c in RECORDED_CELLS) if RECORDED_CELLS else "NO_CELL",
    log:
        "logs/runs/{cell}.recorded.log",


ruleorder: simulate_recorded > simulate


# The seeds some experiments add (experiments.<name>.extra_seeds), one job per cell
# that needs them; no loads recorded (trajectories use the reference seed).
if EXTRA_SEEDS:

    use rule simulate as simulate_extra_seeds with:
        output:
            summary=cell_outputs("summary.json", EXTRA_SEEDS),
            series=cell_outputs("series.parquet", EXTRA_SEEDS),
        params:
            defaults=POLICY_DEFAULTS,
            code=SIM_CODE,
            seeds=EXTRA_SEEDS,
            recorded_seed=None,
        log:
            "logs/runs/{cell}.extra_seeds.log",


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
