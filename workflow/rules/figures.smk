# Figures (PDF + PNG under figures/), one rule and one script each. Plotting
# rules only read simulation outputs and tables, so editing a figure never
# reruns a simulation.


rule fig_distributions:
    input:
        "results/traces/{trace}.parquet",
    output:
        pdf="figures/distributions_{trace}.pdf",
        png=report(
            "figures/distributions_{trace}.png",
            caption="../report/distributions.rst",
            category="Figures",
            subcategory="Traces",
            labels={"figure": "length distributions", "trace": "{trace}"},
        ),
    params:
        code=figure_code("distributions"),
    log:
        "logs/figures/distributions_{trace}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/fig_distributions.py"


rule fig_decode_geometric:
    input:
        traces=expand("results/traces/{trace}.parquet", trace=config["traces"]),
        fit="results/tables/decode_geometric_fit.csv",
        caption_template=workflow.source_path("../report/decode_geometric.rst"),
    output:
        pdf="figures/decode_geometric.pdf",
        # The caption quotes the fitted p and goodness of fit per trace, so it
        # is written by the figure script (from the template in workflow/report).
        caption="results/report/decode_geometric_caption.rst",
        png=report(
            "figures/decode_geometric.png",
            caption=str(Path.cwd() / "results/report/decode_geometric_caption.rst"),
            category="Figures",
            subcategory="Traces",
            labels={"figure": "decode lengths vs geometric fit"},
        ),
    params:
        code=figure_code("decode_geometric"),
        traces=config["traces"],
    log:
        "logs/figures/decode_geometric.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/fig_decode_geometric.py"


rule fig_load_trajectories:
    input:
        loads=lambda wc: expand("results/runs/{run}/loads.npy", run=runs_of(wc.experiment)),
        series=lambda wc: expand("results/runs/{run}/series.parquet", run=runs_of(wc.experiment)),
    output:
        pdf="figures/load_trajectories_{experiment}.pdf",
        png=report(
            "figures/load_trajectories_{experiment}.png",
            caption="../report/load_trajectories.rst",
            category="Figures",
            subcategory="Simulations",
            labels={"figure": "load trajectories", "experiment": "{experiment}"},
        ),
    params:
        code=figure_code("load_trajectories"),
        rows=lambda wc: FIG["trajectories"][wc.experiment],
        sample_workers=FIG["sample_workers"],
        sample_seed=FIG["sample_seed"],
        title=lambda wc: config["experiments"][wc.experiment]["description"],
        # the setting the title names: trace, G, N, B and the seed drawn
        setting=lambda wc: figure_setting(TRAJECTORY_RUNS[wc.experiment][0]),
    log:
        "logs/figures/load_trajectories_{experiment}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/fig_load_trajectories.py"


rule fig_power_timeseries:
    input:
        series=lambda wc: expand(
            "results/runs/{run}/series.parquet", run=runs_of(wc.experiment, "power")
        ),
        summaries=lambda wc: expand(
            "results/runs/{run}/summary.json", run=runs_of(wc.experiment, "power")
        ),
    output:
        pdf="figures/power_timeseries_{experiment}.pdf",
        png=report(
            "figures/power_timeseries_{experiment}.png",
            caption="../report/power_timeseries.rst",
            category="Figures",
            subcategory="Simulations",
            labels={"figure": "mean power over time", "experiment": "{experiment}"},
        ),
    params:
        code=figure_code("power_timeseries"),
        rows=lambda wc: FIG["power"][wc.experiment],
        title=lambda wc: config["experiments"][wc.experiment]["description"],
        # the setting the title names: trace, G, N, B and the seed drawn
        setting=lambda wc: figure_setting(POWER_RUNS[wc.experiment][0]),
    log:
        "logs/figures/power_timeseries_{experiment}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/fig_power_timeseries.py"


rule fig_horizon_sweep:
    input:
        f"results/tables/{HSWEEP}_summary.csv",
    output:
        pdf="figures/horizon_sweep.pdf",
        png=report(
            "figures/horizon_sweep.png",
            caption="../report/horizon_sweep.rst",
            category="Figures",
            subcategory="Sweeps",
            labels={"figure": "effect of lookahead H"},
        ),
    params:
        code=figure_code("horizon_sweep"),
    log:
        "logs/figures/horizon_sweep.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/fig_horizon_sweep.py"


rule fig_worker_sweep:
    input:
        f"results/tables/{GSWEEP}_summary.csv",
    output:
        pdf="figures/worker_sweep.pdf",
        png=report(
            "figures/worker_sweep.png",
            caption="../report/worker_sweep.rst",
            category="Figures",
            subcategory="Sweeps",
            labels={"figure": "imbalance and throughput vs G"},
        ),
    params:
        code=figure_code("worker_sweep"),
        rows=[FIG["worker_sweep_baseline"], FIG["worker_sweep_target"]],
    log:
        "logs/figures/worker_sweep.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/fig_worker_sweep.py"


rule fig_energy_vs_workers:
    input:
        "results/tables/worker_sweep_energy.csv",
    output:
        pdf="figures/energy_vs_workers.pdf",
        png=report(
            "figures/energy_vs_workers.png",
            caption="../report/energy_vs_workers.rst",
            category="Figures",
            subcategory="Sweeps",
            labels={"figure": "energy vs G"},
        ),
    params:
        code=figure_code("energy_vs_workers"),
        # the energy table carries no setting: the title names it from the config
        setting=figure_setting(GSWEEP),
    log:
        "logs/figures/energy_vs_workers.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/fig_energy_vs_workers.py"
