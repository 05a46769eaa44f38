# Tables (CSV + Markdown under results/tables/): per-experiment summaries
# (reference seed, mean and 95% CI), the paper's Table 1 / Table 2 compared
# cell by cell, energy reduction over G, the plateau over the horizon sweep's H,
# the geometric fit of decode lengths
# and (when the theory module provides it) Theorem 4's energy decomposition.


rule experiment_summary:
    input:
        "results/tables/runs_{experiment}.csv",
    output:
        csv="results/tables/{experiment}_summary.csv",
        md="results/tables/{experiment}_summary.md",
    params:
        code=TABLE_CODE,
        ref_seed=reference_seed(config),
        title=lambda wc: config["experiments"][wc.experiment]["description"] or wc.experiment,
    log:
        "logs/tables/{experiment}_summary.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/experiment_summary.py"


rule paper_table:
    input:
        paper_table_experiment,
    output:
        csv=report(
            "results/tables/{table}.csv",
            caption="../report/paper_table.rst",
            category="Tables",
        ),
        md="results/tables/{table}.md",
    params:
        code=TABLE_CODE,
        ref_seed=reference_seed(config),
        expected=paper_table_expected,
    wildcard_constraints:
        table="table1|table2",
    log:
        "logs/tables/{table}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/paper_table.py"


rule worker_sweep_energy:
    input:
        f"results/tables/runs_{GSWEEP}.csv",
    output:
        csv="results/tables/worker_sweep_energy.csv",
        md="results/tables/worker_sweep_energy.md",
    params:
        code=TABLE_CODE,
        baseline=FIG["worker_sweep_baseline"],
        target=FIG["worker_sweep_target"],
        ref_seed=reference_seed(config),
    log:
        "logs/tables/worker_sweep_energy.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/worker_sweep_energy.py"


rule horizon_plateau:
    input:
        f"results/tables/runs_{HSWEEP}.csv",
    output:
        csv="results/tables/horizon_plateau.csv",
        md="results/tables/horizon_plateau.md",
    params:
        code=code_fingerprint(["pipeline/plateau.py"]),
        ref_seed=reference_seed(config),
        title=lambda wc: config["experiments"][HSWEEP]["description"] or HSWEEP,
    log:
        "logs/tables/horizon_plateau.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/horizon_plateau.py"


rule decode_geometric_fit:
    input:
        expand("results/traces/{trace}.parquet", trace=config["traces"]),
    output:
        csv="results/tables/decode_geometric_fit.csv",
        md="results/tables/decode_geometric_fit.md",
    params:
        code=figure_code("decode_geometric"),
        traces=config["traces"],
    log:
        "logs/tables/decode_geometric_fit.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/decode_geometric_fit.py"


rule energy_decomposition:
    input:
        expand("results/tables/runs_{experiment}.csv", experiment=EXPERIMENTS),
    output:
        csv="results/tables/energy_decomposition.csv",
        md="results/tables/energy_decomposition.md",
    log:
        "logs/tables/energy_decomposition.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/energy_decomposition.py"
