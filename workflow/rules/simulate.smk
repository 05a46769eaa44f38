# Simulation: one job per cell (trace, N, G, B, policy row) runs every seed of
# it (config key seeds; an experiment's extra_seeds in a second job) in one
# process. Runs shared by several experiments are simulated once. Outputs per
# run: summary JSON and per-step series (parquet); the load matrix only for the
# trajectory-figure runs (reference seed). With cells_per_job above 1 (the
# first look's small cells), rules simulate_cells_<i> run that many cells a job
# instead (bfio.runs.experiments.simulation_jobs), each job's start paid once.

if CELLS_PER_JOB == 1:

    rule simulate:
        input:
            trace=lambda wc: [cell_trace_table(wc.cell)],
            kernels=kernels_compiled("simulation"),
        output:
            summary=cell_outputs("summary.json"),
            series=cell_outputs("series.parquet"),
        params:
            defaults=POLICY_DEFAULTS,
            code=SIM_CODE,
            cells=lambda wc: [(wc.cell, SEEDS, None)],
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
            cells=lambda wc: [(wc.cell, SEEDS, RECORDED_SEED)],
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
                cells=lambda wc: [(wc.cell, EXTRA_SEEDS, None)],
            log:
                "logs/runs/{cell}.extra_seeds.log",

else:
    for index, job in enumerate(SIMULATION_JOBS):

        rule:
            name:
                f"simulate_cells_{index}"
            input:
                trace=[cell_trace_table(u.cell) for u in job],
                kernels=kernels_compiled("simulation"),
            output:
                summary=[f"results/runs/{run}/summary.json" for u in job for run in u.runs()],
                series=[f"results/runs/{run}/series.parquet" for u in job for run in u.runs()],
                loads=[f"results/runs/{u.run(u.recorded_seed)}/loads.npy" for u in job if u.recorded_seed is not None],
            params:
                defaults=POLICY_DEFAULTS,
                code=SIM_CODE,
                cells=[(u.cell, list(u.seeds), u.recorded_seed) for u in job],
            log:
                f"logs/runs/cells_{index}.log",
            # the profiles' settings for rule simulate (they name rules; these names vary with the config)
            threads: 1
            resources:
                mem_mb=4000,
                runtime=300,
            conda:
                "../../environment.yml"
            script:
                "../scripts/simulate.py"


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
