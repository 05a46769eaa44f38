# Shared set-up of the studies beyond the paper (issue 6, docs/studies.md):
# the registered studies (bfio.studies.registry: the generic ones run by
# workflow/rules/studies.smk), settings by name (validated against 'traces'),
# targets, code fingerprints and input/param functions.

from bfio.studies.registry import by_directory, by_figure, by_table, generic_studies, studies
from bfio.studies.report import check_settings as _check_study_settings

STUDIES = studies()
GENERIC_STUDIES = generic_studies()
STUDY_SETTINGS = {name: s.settings(config) for name, s in GENERIC_STUDIES.items()}

ONLINE = config["online"]
ONLINE_SETTINGS = _check_study_settings(config, "online", ("poisson", "replay"))
ONLINE_KIND = {s["name"]: kind for kind in ("poisson", "replay") for s in ONLINE[kind]}
# Code fingerprints (rerun triggers): simulations depend on the simulator and
# the study's run-building module, tables on bfio.studies.*_summary.


def study_sim_code(study):
    """Rerun trigger of a study's simulations: the simulator and the study's
    modules, without its table and figure code (and any figure module)."""
    return code_fingerprint([*SIMULATION_SOURCES, *study.modules],
                            exclude=["figures", "tables.py", *study.table_modules, *study.figure_modules])


def study_table_code(study):
    return code_fingerprint([*study.table_modules, "studies/aggregate.py", "studies/report.py", "tables.py"])


def figure_code_of(study):
    return code_fingerprint(["figures/style.py", *study.figure_modules])


def study_caption(study):
    """The study's figure caption (a Jinja template of the config), rendered."""
    import jinja2

    return jinja2.Template(study.caption).render(config=config)


def study_trace(wildcards):
    setting = STUDY_SETTINGS[by_directory(wildcards.study).name][wildcards.setting]
    return f"results/traces/{setting['trace']}.parquet"


def study_runs(wildcards):
    study = by_table(wildcards.study)
    return expand(f"results/studies/{study.directory}/runs_{{setting}}.csv", setting=STUDY_SETTINGS[study.name])


# Every output of the generic studies that have settings (rules of studies.smk).
STUDY_TARGETS = []
for _study in GENERIC_STUDIES.values():
    if STUDY_SETTINGS[_study.name]:
        STUDY_TARGETS += expand(f"results/tables/{_study.table}.{{fmt}}", fmt=["csv", "md"])
        STUDY_TARGETS += [f"results/tables/{_study.table}_{e}.json" for e in _study.extra_outputs]
        if _study.figure:
            STUDY_TARGETS += expand(f"figures/{_study.figure}.{{ext}}", ext=FIG_FORMATS)


STUDY_TABLE_CODE = code_fingerprint(
    ["studies/online_summary.py", "studies/routers_summary.py", "studies/aggregate.py", "studies/report.py",
     "tables.py"]
)


ONLINE_TARGETS = []
if ONLINE_SETTINGS:
    ONLINE_TARGETS += expand("results/tables/online.{fmt}", fmt=["csv", "md"])
if ONLINE_SETTINGS and ONLINE["instant"]:
    # production routers (issue 18): instant rows, report intervals, vs online.reference
    ONLINE_TARGETS += expand("results/tables/online_routers.{fmt}", fmt=["csv", "md"])
    ONLINE_TARGETS += expand("figures/online_routers.{ext}", ext=FIG_FORMATS)
if ONLINE["poisson"]:
    ONLINE_TARGETS += expand("figures/online_load.{ext}", ext=FIG_FORMATS)
if ONLINE["replay"]:
    ONLINE_TARGETS += expand("figures/online_replay.{ext}", ext=FIG_FORMATS)


def online_trace(wildcards):
    return f"results/traces/{ONLINE_SETTINGS[wildcards.setting]['trace']}.parquet"


def online_saturation_setting(wildcards):
    """The backlog setting measuring saturation (replay: saturation_requests rows)."""
    s = dict(ONLINE_SETTINGS[wildcards.setting])
    if ONLINE_KIND[wildcards.setting] == "replay":
        s["requests"] = s["saturation_requests"]
    return s


def online_study_params(wildcards):
    keys = ["central", "instant"] + (["loads"] if ONLINE_KIND[wildcards.setting] == "poisson" else [])
    return {**{k: ONLINE[k] for k in keys}, "variants": ONLINE.get("variants", {})}
