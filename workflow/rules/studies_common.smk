# Shared set-up of the studies beyond the paper (issue 6, docs/studies.md):
# the registered studies (bfio.studies.registry: the generic ones run by
# workflow/rules/studies.smk), settings by name (validated against 'traces'),
# their files, targets, code fingerprints and input/param functions.

import re

from bfio.studies.registry import by_directory, by_figure, by_table, generic_studies, studies
from bfio.studies.jobs import batched_settings, extras_job, figure_job, product_job, table_job

STUDIES = studies()
GENERIC_STUDIES = generic_studies()
STUDY_SETTINGS = {name: s.settings(config) for name, s in GENERIC_STUDIES.items()}
# results/studies/<directory>/<run>.csv of every setting: <run> -> setting name, per study
STUDY_RUN_FILES = {name: {s.run_stem(k, v): k for k, v in STUDY_SETTINGS[name].items()}
                   for name, s in GENERIC_STUDIES.items()}
# Settings run several to a job (config key cells_per_job above 1: rules
# study_simulate_batch_<i>), as (study name, setting name); the others, and every
# setting with cells_per_job 1, run one to a job (rule study_simulate).
STUDY_BATCHES = batched_settings(GENERIC_STUDIES, STUDY_SETTINGS, CELLS_PER_JOB)
_BATCHED = {unit for batch in STUDY_BATCHES for unit in batch}
STUDY_SINGLE_RUN_FILES = {name: {stem: k for stem, k in files.items() if (name, k) not in _BATCHED}
                          for name, files in STUDY_RUN_FILES.items()}
# results/studies/<directory>/<product> of every study with products (stages after the simulations)
STUDY_PRODUCTS = {name: [p.file for p in s.products] for name, s in GENERIC_STUDIES.items() if s.products}
# results/studies/<directory>/<prepared>.json of every setting of a study with a preparatory stage
STUDY_PREPARED_FILES = {name: {s.prepared_stem(k): k for k in STUDY_SETTINGS[name]}
                        for name, s in GENERIC_STUDIES.items() if s.prepare is not None}


def _alternatives(names):
    """A wildcard constraint matching exactly ``names`` (or nothing)."""
    return "|".join(re.escape(n) for n in sorted(set(names), key=len, reverse=True)) or "NO_MATCH"


# Code fingerprints (rerun triggers): simulations depend on the simulator and
# the study's run-building module, tables on its table modules, figures on its
# figure modules.


def study_sim_code(study):
    """Rerun trigger of a study's simulations: the simulator and the study's
    modules, without its table and figure code (and any figure module); a module
    that declares runs and tabulates both (one-module study) stays a trigger."""
    return code_fingerprint([*SIMULATION_SOURCES, *study.modules],
                            exclude=["figures", "runs/tables.py", *study.table_only_modules(), *study.figure_modules])


def study_table_code(study):
    return code_fingerprint([*study.table_modules, "studies/aggregate.py", "studies/report.py", "runs/tables.py"])


def figure_code_of(study, figure=None):
    """Rerun trigger of a study's figure: its figure modules (the study's, unless the figure names its own)."""
    modules = (figure.modules if figure is not None and figure.modules else study.figure_modules)
    return code_fingerprint(["figures/style.py", *modules])


def study_caption(figure):
    """A study figure's caption (a Jinja template of the config), rendered."""
    import jinja2

    return jinja2.Template(figure.caption).render(config=config)


def study_table_caption(study, name):
    """A study table's report caption (its own, or the study's description)."""
    caption = study.table_named(name).caption
    return study_caption(study.table_named(name)) if caption else f"Study beyond the paper: {study.description}."


def study_section(study):
    """The study's whole config section (what its tables and figures read)."""
    return config.get(study.name) or {}


def run_setting(wildcards):
    """(study, setting name, setting) of results/studies/{study}/{run}.csv."""
    study = by_directory(wildcards.study)
    name = STUDY_RUN_FILES[study.name][wildcards.run]
    return study, name, STUDY_SETTINGS[study.name][name]


def prepared_setting(wildcards):
    """(study, setting name, setting) of results/studies/{study}/{prepared}.json."""
    study = by_directory(wildcards.study)
    name = STUDY_PREPARED_FILES[study.name][wildcards.prepared]
    return study, name, STUDY_SETTINGS[study.name][name]


def _trace_file(setting):
    return f"results/traces/{setting['trace']}.parquet"


def prepared_file(study, name):
    """The preparatory stage's file of a study's setting."""
    return f"results/studies/{study.directory}/{study.prepared_stem(name)}.json"


def product_file(study, file):
    return f"results/studies/{study.directory}/{file}"


def needed_file(study, name):
    """The file of what a setting needs (Study.needs): a product of the study, or another setting's runs."""
    if name in {p.file for p in study.products}:
        return product_file(study, name)
    return f"results/studies/{study.directory}/{study.run_stem(name, STUDY_SETTINGS[study.name][name])}.csv"


def study_run_inputs(wildcards):
    """A setting's simulation reads its trace, its preparatory stage's file and
    the runs (or products) it needs (Study.needs)."""
    study, name, setting = run_setting(wildcards)
    out = {"trace": [_trace_file(setting)]}
    if study.prepare is not None:
        out["prepared"] = [prepared_file(study, name)]
    if study.needs is not None:
        out["prior"] = [needed_file(study, n) for n in study.needs(name, setting)]
    return out


def study_run_files(study, selects=None):
    """The runs files of ``study``'s settings (those ``selects(name, setting)``
    picks; default all), in settings order."""
    return [f"results/studies/{study.directory}/{study.run_stem(k, v)}.csv"
            for k, v in STUDY_SETTINGS[study.name].items() if selects is None or selects(k, v)]


def study_table_inputs(wildcards):
    study = by_table(wildcards.table)
    table = study.table_named(wildcards.table)
    return {"runs": study_run_files(study, table.settings),
            "inputs": list(study.table_inputs(config)) if study.table_inputs is not None else [],
            "products": [product_file(study, f) for _, f in table.products]}


def study_product_inputs(wildcards):
    study = by_directory(wildcards.study)
    return study_run_files(study, study.product_named(wildcards.product).selects)


def study_figure_inputs(wildcards):
    study = by_figure(wildcards.figure)
    figure = study.figure_named(wildcards.figure)
    return {"table": [f"results/tables/{figure.table}.csv"] if figure.table is not None else [],
            "products": [product_file(study, f) for _, f in figure.products]}


# Every output of the generic studies that have settings (rules of studies.smk).
STUDY_TARGETS = []
for _study in GENERIC_STUDIES.values():
    if not STUDY_SETTINGS[_study.name]:
        continue
    _section = study_section(_study)
    for _table in _study.tables:
        if _table.wanted(_section):
            STUDY_TARGETS += expand(f"results/tables/{_table.name}.{{fmt}}", fmt=["csv", "md"])
    STUDY_TARGETS += [f"results/tables/{_study.table}_{e}.json" for e in _study.extra_outputs]
    for _figure in _study.figures:
        if _figure.wanted(_section):
            STUDY_TARGETS += expand(f"figures/{_figure.name}.{{ext}}", ext=FIG_FORMATS)
    STUDY_TARGETS += [product_file(_study, p.file) for p in _study.products]
