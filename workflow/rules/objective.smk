# Study (issue 11): BF-IO's objective, the offset discount and the new-request
# model (docs/bfio.md, "Objective study"; bfio.studies.objective_study).
# choose: one job per trace (grid at one G), then the recommendation;
# confirm: the recommended setting and paper-literal, one job per trace and G.
# Outputs: results/studies/objective/, results/tables/objective.*,
# figures/objective_study.*

OBJ = config["objective_study"]
OBJ_CHOOSE = OBJ["choose"]
OBJ_CONFIRM = OBJ["confirm"]
OBJ_CONFIRM_JOBS = [(t, int(g)) for t in OBJ_CONFIRM["traces"] for g in OBJ_CONFIRM["workers"]]
OBJECTIVE_TARGETS = (
    expand("results/tables/objective.{fmt}", fmt=["csv", "md"])
    + expand("figures/objective_study.{ext}", ext=FIG_FORMATS)
    + expand("figures/discount_reach.{ext}", ext=FIG_FORMATS)
    if OBJ_CHOOSE["traces"]
    else []
)


rule objective_choose:
    input:
        trace="results/traces/{trace}.parquet",
    output:
        "results/studies/objective/choose_{trace}.csv",
    params:
        choose=OBJ_CHOOSE,
        slots=config["slots"],
        bfio=config["bfio"],
        code=study_sim_code(STUDIES["objective_study"]),
    wildcard_constraints:
        trace="|".join(OBJ_CHOOSE["traces"]) or "NO_TRACE",
    log:
        "logs/studies/objective/choose_{trace}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/objective_choose.py"


rule objective_recommend:
    input:
        expand("results/studies/objective/choose_{trace}.csv", trace=OBJ_CHOOSE["traces"]),
    output:
        runs="results/studies/objective/choose.csv",
        recommendation="results/studies/objective/recommendation.json",
    params:
        max_throughput_cost_pct=OBJ_CHOOSE["max_throughput_cost_pct"],
        code=study_sim_code(STUDIES["objective_study"]),
    log:
        "logs/studies/objective/recommend.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/objective_recommend.py"


rule objective_confirm:
    input:
        trace="results/traces/{trace}.parquet",
        recommendation="results/studies/objective/recommendation.json",
    output:
        "results/studies/objective/confirm_{trace}_g{workers}.csv",
    params:
        confirm=OBJ_CONFIRM,
        seeds=config["seeds"],
        slots=config["slots"],
        bfio=config["bfio"],
        code=study_sim_code(STUDIES["objective_study"]),
    wildcard_constraints:
        trace="|".join(OBJ_CONFIRM["traces"]) or "NO_TRACE",
        workers=r"\d+",
    log:
        "logs/studies/objective/confirm_{trace}_g{workers}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/objective_confirm.py"


rule objective_table:
    input:
        choose="results/studies/objective/choose.csv",
        recommendation="results/studies/objective/recommendation.json",
        confirm=[f"results/studies/objective/confirm_{t}_g{g}.csv" for t, g in OBJ_CONFIRM_JOBS],
    output:
        csv="results/tables/objective.csv",
        md="results/tables/objective.md",
    params:
        title=OBJ["description"],
        code=STUDY_TABLE_CODE,
    log:
        "logs/tables/objective.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/objective_table.py"


rule fig_objective_study:
    input:
        choose="results/studies/objective/choose.csv",
        table="results/tables/objective.csv",
    output:
        pdf="figures/objective_study.pdf",
        png=report(
            "figures/objective_study.png",
            caption="../report/objective_study.rst",
            category="Figures",
            subcategory="Beyond the paper",
            labels={"figure": "BF-IO objective: discount and new-request model"},
        ),
    params:
        code=figure_code("objective_study"),
    log:
        "logs/figures/objective_study.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/fig_objective_study.py"


# How far ahead should BF-IO look: the choose grid's longest window against the
# discount's reach (bfio.figures.discount_reach; docs/bfio.md). A figure only:
# it reads the grid's runs and never reruns a simulation.
rule fig_discount_reach:
    input:
        choose="results/studies/objective/choose.csv",
    output:
        pdf="figures/discount_reach.pdf",
        png=report(
            "figures/discount_reach.png",
            caption="../report/discount_reach.rst",
            category="Figures",
            subcategory="Beyond the paper",
            labels={"figure": "BF-IO: how far ahead to look"},
        ),
    params:
        code=figure_code("discount_reach"),
    log:
        "logs/figures/discount_reach.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/fig_discount_reach.py"
