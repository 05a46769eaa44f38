# Shared set-up of the studies beyond the paper (issue 6, docs/studies.md):
# settings by name (validated against 'traces'), targets, code fingerprints and
# input/param functions of workflow/rules/{online,predictor_study,starvation}.smk.

from bfio.studies.report import check_settings as _check_study_settings

ONLINE = config["online"]
ONLINE_SETTINGS = _check_study_settings(config, "online", ("poisson", "replay"))
ONLINE_KIND = {s["name"]: kind for kind in ("poisson", "replay") for s in ONLINE[kind]}
# Code fingerprints (rerun triggers): simulations depend on the simulator and
# the study's run-building module, tables on bfio.studies.*_summary.


def study_sim_code(module):
    return code_fingerprint([*SIMULATION_SOURCES, f"studies/{module}.py"])


STUDY_TABLE_CODE = code_fingerprint(
    ["studies/online_summary.py", "studies/routers_summary.py", "studies/predictor_summary.py",
     "studies/starvation_summary.py", "studies/aggregate.py", "studies/report.py", "tables.py"]
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


PREDICTOR_STUDY = config["predictor_study"]
PREDICTOR_SETTINGS = _check_study_settings(config, "predictor_study")
PREDICTOR_TARGETS = (
    expand("results/tables/predictors.{fmt}", fmt=["csv", "md"])
    + expand("figures/predictor_noise.{ext}", ext=FIG_FORMATS)
    if PREDICTOR_SETTINGS
    else []
)


STARVATION = config["starvation"]
STARVATION_SETTINGS = _check_study_settings(config, "starvation")
STARVATION_TARGETS = (
    expand("results/tables/starvation.{fmt}", fmt=["csv", "md"])
    + ["results/tables/starvation_recommendation.json"]
    + expand("figures/starvation.{ext}", ext=FIG_FORMATS)
    if STARVATION_SETTINGS
    else []
)
