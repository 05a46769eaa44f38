# Study (issue 6): online arrivals vs production routers (docs/studies.md).
# One simulation job per setting of config["online"]: backlog runs measuring
# the saturation throughput (requests/s), then every load x row x seed
# (bfio.studies.online); then the tables and figures (which never rerun a
# simulation). Outputs: results/studies/online/, results/tables/online.*,
# results/tables/online_routers.* (issue 18: the instant-dispatch routers and
# their report intervals vs online.reference), figures/online_*.


rule online_simulate:
    input:
        trace=online_trace,
    output:
        saturation="results/studies/online/saturation_{setting}.json",
        runs="results/studies/online/runs_{setting}.csv",
    params:
        setting=lambda wc: ONLINE_SETTINGS[wc.setting],
        saturation_setting=online_saturation_setting,
        saturation_row=ONLINE["saturation_row"],
        kind=lambda wc: ONLINE_KIND[wc.setting],
        study=online_study_params,
        seeds=config["seeds"],
        slots=config["slots"],
        bfio=config["bfio"],
        code=study_sim_code(STUDIES["online"]),
    wildcard_constraints:
        setting="|".join(ONLINE_SETTINGS) or "NO_SETTING",
    log:
        "logs/studies/online/runs_{setting}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/online_simulate.py"


rule online_table:
    input:
        runs=expand("results/studies/online/runs_{setting}.csv", setting=ONLINE_SETTINGS),
    output:
        csv="results/tables/online.csv",
        md="results/tables/online.md",
    params:
        settings=ONLINE_SETTINGS,
        title=ONLINE["description"],
        code=STUDY_TABLE_CODE,
    log:
        "logs/tables/online.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/online_table.py"


rule online_routers_table:
    input:
        runs=expand("results/studies/online/runs_{setting}.csv", setting=ONLINE_SETTINGS),
    output:
        csv="results/tables/online_routers.csv",
        md="results/tables/online_routers.md",
    params:
        settings=ONLINE_SETTINGS,
        reference=ONLINE["reference"],
        code=STUDY_TABLE_CODE,
    log:
        "logs/tables/online_routers.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/online_routers_table.py"


rule fig_online_routers:
    input:
        "results/tables/online_routers.csv",
    output:
        pdf="figures/online_routers.pdf",
        png=report(
            "figures/online_routers.png",
            caption="../report/online_routers.rst",
            category="Figures",
            subcategory="Beyond the paper",
            labels={"figure": "online: production routers and load-report intervals"},
        ),
    params:
        load=ONLINE["figure_load"],
        code=figure_code("online_routers"),
    log:
        "logs/figures/online_routers.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/fig_online_routers.py"


rule fig_online_load:
    input:
        "results/tables/online.csv",
    output:
        pdf="figures/online_load.pdf",
        png=report(
            "figures/online_load.png",
            caption="../report/online_load.rst",
            category="Figures",
            subcategory="Beyond the paper",
            labels={"figure": "online: latency and throughput vs load"},
        ),
    params:
        code=figure_code("online_load"),
    log:
        "logs/figures/online_load.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/fig_online_load.py"


rule fig_online_replay:
    input:
        "results/tables/online.csv",
    output:
        pdf="figures/online_replay.pdf",
        png=report(
            "figures/online_replay.png",
            caption="../report/online_replay.rst",
            category="Figures",
            subcategory="Beyond the paper",
            labels={"figure": "online: trace replay latency"},
        ),
    params:
        code=figure_code("online_replay"),
    log:
        "logs/figures/online_replay.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/fig_online_replay.py"
