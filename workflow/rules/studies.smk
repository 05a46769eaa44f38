# The study protocol (issue 28, bfio.studies.registry): every registered
# generic study (built-in or plugin) runs through these rules, with the
# {study} wildcard naming its results directory and {table}/{figure} one of
# its tables or figures. Per setting of the study (config[<study>]'s lists,
# or what the study plans from its section): an optional preparatory stage
# (study_prepare: e.g. the online study's saturation runs), then one
# simulation job (study_simulate: every row x seed; it may read the runs of
# other settings or a product, e.g. the generality study's replays read the
# backlog runs, the objective study's confirm jobs its recommendation); the
# products (study_product: files made from the runs of some settings, e.g.
# every setting's runs in one file, the objective study's recommendation);
# then the tables (and extra JSON files), then the figures, each of one table
# and/or products; plotting never reruns a simulation. The table, extra,
# product and figure jobs get their function as an import path (params.job,
# bfio.studies.jobs), so they import that module alone, not every study's
# (which import the simulator and numba). A new study is a module
# registering a Study plus its config section: nothing here changes.


rule study_prepare:
    input:
        trace=lambda wc: _trace_file(prepared_setting(wc)[2]),
        kernels=kernels_compiled("simulation"),
    output:
        "results/studies/{study}/{prepared}.json",
    params:
        name=lambda wc: prepared_setting(wc)[1],
        setting=lambda wc: prepared_setting(wc)[2],
        section=lambda wc: by_directory(wc.study).section(config),
        seeds=config["seeds"],
        slots=config["slots"],
        defaults=POLICY_DEFAULTS,
        code=lambda wc: study_sim_code(by_directory(wc.study)),
    wildcard_constraints:
        study=_alternatives(GENERIC_STUDIES[n].directory for n in STUDY_PREPARED_FILES),
        prepared=_alternatives(p for files in STUDY_PREPARED_FILES.values() for p in files),
    log:
        "logs/studies/{study}/{prepared}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/study_prepare.py"


rule study_simulate:
    input:
        unpack(study_run_inputs),
        kernels=kernels_compiled("simulation"),
    output:
        "results/studies/{study}/{run}.csv",
    params:
        name=lambda wc: run_setting(wc)[1],
        setting=lambda wc: run_setting(wc)[2],
        section=lambda wc: by_directory(wc.study).section(config),
        seeds=config["seeds"],
        slots=config["slots"],
        defaults=POLICY_DEFAULTS,
        code=lambda wc: study_sim_code(by_directory(wc.study)),
    wildcard_constraints:
        study=_alternatives(GENERIC_STUDIES[n].directory for n, files in STUDY_SINGLE_RUN_FILES.items() if files),
        run=_alternatives(r for files in STUDY_SINGLE_RUN_FILES.values() for r in files),
    log:
        "logs/studies/{study}/{run}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/study_simulate.py"


# With cells_per_job above 1 (the first look), the settings that need no other
# setting's runs, that many a job (bfio.studies.setting_jobs): the same files.
for index, batch in enumerate(STUDY_BATCHES):

    rule:
        name:
            f"study_simulate_batch_{index}"
        input:
            trace=[_trace_file(STUDY_SETTINGS[n][k]) for n, k in batch],
            prepared=[prepared_file(GENERIC_STUDIES[n], k) for n, k in batch
                      if GENERIC_STUDIES[n].prepare is not None],
            kernels=kernels_compiled("simulation"),
        output:
            [f"results/studies/{GENERIC_STUDIES[n].directory}/"
             f"{GENERIC_STUDIES[n].run_stem(k, STUDY_SETTINGS[n][k])}.csv" for n, k in batch],
        params:
            settings=[(GENERIC_STUDIES[n].directory, k, STUDY_SETTINGS[n][k]) for n, k in batch],
            sections=[GENERIC_STUDIES[n].section(config) for n, _ in batch],
            seeds=config["seeds"],
            slots=config["slots"],
            defaults=POLICY_DEFAULTS,
            code=sorted({study_sim_code(GENERIC_STUDIES[n]) for n, _ in batch}),
        log:
            f"logs/studies/batch_{index}.log",
        # the profiles' settings for rule study_simulate (they name rules; these names vary with the config)
        threads: 1
        resources:
            mem_mb=4000,
            runtime=240,
        conda:
            "../../environment.yml"
        script:
            "../scripts/study_simulate.py"


rule study_product:
    input:
        study_product_inputs,
    output:
        "results/studies/{study}/{product}",
    params:
        section=lambda wc: study_section(by_directory(wc.study)),
        code=lambda wc: study_sim_code(by_directory(wc.study)),
        job=lambda wc: product_job(wc.study, wc.product),
    wildcard_constraints:
        study=_alternatives(GENERIC_STUDIES[n].directory for n in STUDY_PRODUCTS),
        product=_alternatives(f for files in STUDY_PRODUCTS.values() for f in files),
    log:
        "logs/studies/{study}/{product}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/study_product.py"


rule study_table:
    input:
        unpack(study_table_inputs),
    output:
        csv=report(
            "results/tables/{table}.csv",
            caption="../report/study.rst",
            category="Tables",
            subcategory="Beyond the paper",
        ),
        md="results/tables/{table}.md",
    params:
        caption=lambda wc: study_table_caption(by_table(wc.table), wc.table),
        settings=lambda wc: STUDY_SETTINGS[by_table(wc.table).name],
        section=lambda wc: study_section(by_table(wc.table)),
        code=lambda wc: study_table_code(by_table(wc.table)),
        job=lambda wc: table_job(wc.table),
    wildcard_constraints:
        table=_alternatives(t.name for s in GENERIC_STUDIES.values() for t in s.tables),
    log:
        "logs/tables/{table}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/study_table.py"


rule study_extra:
    input:
        unpack(study_table_inputs),
    output:
        "results/tables/{table}_{extra}.json",
    params:
        settings=lambda wc: STUDY_SETTINGS[by_table(wc.table).name],
        section=lambda wc: study_section(by_table(wc.table)),
        code=lambda wc: study_table_code(by_table(wc.table)),
        job=lambda wc: extras_job(wc.table),
    wildcard_constraints:
        table=_alternatives(s.table for s in GENERIC_STUDIES.values() if s.extra_outputs),
        extra=_alternatives(e for s in GENERIC_STUDIES.values() for e in s.extra_outputs),
    log:
        "logs/tables/{table}_{extra}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/study_extra.py"


rule study_figure:
    input:
        unpack(study_figure_inputs),
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
        options=lambda wc: by_figure(wc.figure).figure_named(wc.figure).plot_options(study_section(by_figure(wc.figure))),
        caption=lambda wc: study_caption(by_figure(wc.figure).figure_named(wc.figure)),
        code=lambda wc: figure_code_of(by_figure(wc.figure), by_figure(wc.figure).figure_named(wc.figure)),
        # the study's settings by name: a figure whose plot takes ``settings`` titles its panels with them
        settings=lambda wc: STUDY_SETTINGS[by_figure(wc.figure).name],
        job=lambda wc: figure_job(wc.figure),
    wildcard_constraints:
        figure=_alternatives(f.name for s in GENERIC_STUDIES.values() for f in s.figures),
    log:
        "logs/figures/{figure}.log",
    conda:
        "../../environment.yml"
    script:
        "../scripts/study_figure.py"
