# Study (issue 6): starvation and fairness of BF-IO's admission rules
# (docs/studies.md). One simulation job per setting of config["starvation"]
# (every horizon x admission x seed, bfio.studies.starvation), then the table
# (with the recommended default admission) and the figure. Outputs:
# results/studies/starvation/, results/tables/starvation.*, figures/starvation.*


rule starvation_simulate:
    input:
        trace=lambda wc: f"results/traces/{STARVATION_SETTINGS[wc.setting]['trace']}.parquet",
    output:
        "results/studies/starvation/runs_{setting}.csv",
    params:
        setting=lambda wc: STARVATION_SETTINGS[wc.setting],
        study={k: STARVATION[k] for k in ("admissions", "references")},
        seeds=config["seeds"],
        slots=config["slots"],
        bfio=config["bfio"],
        code=study_sim_code("starvation"),
    wildcard_constraints:
        setting="|".join(STARVATION_SETTINGS) or "NO_SETTING",
    log:
        "logs/studies/starvation/runs_{setting}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/starvation_simulate.py"


rule starvation_table:
    input:
        runs=expand("results/studies/starvation/runs_{setting}.csv", setting=STARVATION_SETTINGS),
    output:
        csv="results/tables/starvation.csv",
        md="results/tables/starvation.md",
        recommendation="results/tables/starvation_recommendation.json",
    params:
        settings=STARVATION_SETTINGS,
        max_cost_pct=STARVATION["max_throughput_cost_pct"],
        recommend_by=STARVATION["recommend_by"],
        title=STARVATION["description"],
        code=STUDY_TABLE_CODE,
    log:
        "logs/tables/starvation.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/starvation_table.py"


rule fig_starvation:
    input:
        "results/tables/starvation.csv",
    output:
        pdf="figures/starvation.pdf",
        png=report(
            "figures/starvation.png",
            caption="../report/starvation.rst",
            category="Figures",
            subcategory="Beyond the paper",
            labels={"figure": "starvation: wait vs throughput"},
        ),
    params:
        code=figure_code("starvation"),
    log:
        "logs/figures/starvation.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/fig_starvation.py"
