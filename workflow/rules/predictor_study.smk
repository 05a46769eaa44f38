# Study (issue 6): BF-IO with noisy and oracle-free predictors
# (docs/studies.md). One simulation job per setting of
# config["predictor_study"] (every row x seed, bfio.studies.predictor_study),
# then the table and the figure. Outputs: results/studies/predictors/,
# results/tables/predictors.*, figures/predictor_noise.*


rule predictor_simulate:
    input:
        trace=lambda wc: f"results/traces/{PREDICTOR_SETTINGS[wc.setting]['trace']}.parquet",
    output:
        "results/studies/predictors/runs_{setting}.csv",
    params:
        setting=lambda wc: PREDICTOR_SETTINGS[wc.setting],
        study={k: v for k, v in PREDICTOR_STUDY.items() if k not in ("settings", "description")},
        seeds=config["seeds"],
        slots=config["slots"],
        bfio=config["bfio"],
        code=study_sim_code("predictor_study"),
    wildcard_constraints:
        setting="|".join(PREDICTOR_SETTINGS) or "NO_SETTING",
    log:
        "logs/studies/predictors/runs_{setting}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/predictor_simulate.py"


rule predictor_table:
    input:
        runs=expand("results/studies/predictors/runs_{setting}.csv", setting=PREDICTOR_SETTINGS),
    output:
        csv="results/tables/predictors.csv",
        md="results/tables/predictors.md",
    params:
        settings=PREDICTOR_SETTINGS,
        oracle_row=f"bfio_h{PREDICTOR_STUDY['horizon']}",
        title=PREDICTOR_STUDY["description"],
        code=STUDY_TABLE_CODE,
    log:
        "logs/tables/predictors.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/predictor_table.py"


rule fig_predictor_noise:
    input:
        "results/tables/predictors.csv",
    output:
        pdf="figures/predictor_noise.pdf",
        png=report(
            "figures/predictor_noise.png",
            caption="../report/predictor_noise.rst",
            category="Figures",
            subcategory="Beyond the paper",
            labels={"figure": "BF-IO vs predictor noise"},
        ),
    params:
        code=figure_code("predictor_noise"),
    log:
        "logs/figures/predictor_noise.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/fig_predictor_noise.py"
