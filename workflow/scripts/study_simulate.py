"""Every row x seed of one setting of a registered study (rule study_simulate), or of
several settings (rules study_simulate_batch_<i>, config key cells_per_job)."""
from bfio.ground.progress import script_log
from bfio.studies.setting_jobs import setting_jobs, simulate_settings

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    settings = sm.params.get("settings")
    if settings is None:  # rule study_simulate: the one setting of its wildcards
        settings, sections = [(sm.wildcards.study, sm.params.name, sm.params.setting)], [sm.params.section]
    else:
        sections = sm.params.sections
    jobs = setting_jobs(list(settings), list(sm.input.trace), list(sm.input.get("prepared", [])),
                        list(sm.input.get("prior", [])))
    simulate_settings(jobs, list(sm.output), [dict(s) for s in sections], sm.params.seeds, sm.params.slots,
                      sm.params.defaults, log)
