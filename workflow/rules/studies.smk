# The study protocol (issue 28, bfio.studies.registry): every registered
# generic study (built-in or plugin) runs through these rules, with the
# {study} wildcard naming its results directory, table or figure. One
# simulation job per setting of config[<study>] (every row x seed), then the
# table (and its extra JSON files), then the figure; plotting never reruns a
# simulation. A new study is a module registering a Study plus its config
# section: nothing here changes.


rule study_simulate:
    input:
        trace=study_trace,
    output:
        "results/studies/{study}/runs_{setting}.csv",
    params:
        setting=lambda wc: STUDY_SETTINGS[by_directory(wc.study).name][wc.setting],
        section=lambda wc: by_directory(wc.study).section(config),
        seeds=config["seeds"],
        slots=config["slots"],
        defaults=POLICY_DEFAULTS,
        code=lambda wc: study_sim_code(by_directory(wc.study)),
    wildcard_constraints:
        study="|".join(s.directory for s in GENERIC_STUDIES.values()) or "NO_STUDY",
        setting="[A-Za-z0-9_.-]+",
    log:
        "logs/studies/{study}/runs_{setting}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/study_simulate.py"


rule study_table:
    input:
        runs=study_runs,
    output:
        csv="results/tables/{study}.csv",
        md="results/tables/{study}.md",
    params:
        settings=lambda wc: STUDY_SETTINGS[by_table(wc.study).name],
        section=lambda wc: config[by_table(wc.study).name],
        code=lambda wc: study_table_code(by_table(wc.study)),
    wildcard_constraints:
        study="|".join(s.table for s in GENERIC_STUDIES.values()) or "NO_STUDY",
    log:
        "logs/tables/{study}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/study_table.py"


rule study_extra:
    input:
        runs=study_runs,
    output:
        "results/tables/{study}_{extra}.json",
    params:
        settings=lambda wc: STUDY_SETTINGS[by_table(wc.study).name],
        section=lambda wc: config[by_table(wc.study).name],
        code=lambda wc: study_table_code(by_table(wc.study)),
    wildcard_constraints:
        study="|".join(s.table for s in GENERIC_STUDIES.values() if s.extra_outputs) or "NO_STUDY",
        extra="|".join(sorted({e for s in GENERIC_STUDIES.values() for e in s.extra_outputs})) or "NO_EXTRA",
    log:
        "logs/tables/{study}_{extra}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/study_extra.py"


rule study_figure:
    input:
        lambda wc: f"results/tables/{by_figure(wc.figure).table}.csv",
    output:
        pdf="figures/{figure}.pdf",
        png=report(
            "figures/{figure}.png",
            caption="../report/study.rst",
            category="Figures",
            subcategory="Beyond the paper",
            labels={"figure": "{figure}"},
        ),
    params:
        caption=lambda wc: study_caption(by_figure(wc.figure)),
        code=lambda wc: figure_code_of(by_figure(wc.figure)),
    wildcard_constraints:
        figure="|".join(s.figure for s in GENERIC_STUDIES.values() if s.figure) or "NO_FIGURE",
    log:
        "logs/figures/{figure}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/study_figure.py"
