"""A study setting's simulation job, one setting or several a job (issue 42).

Rule ``study_simulate`` runs one setting of a registered study a job (every row
x seed of it, :meth:`bfio.studies.registry.Study.run_setting`). A job's start
(a Python process, its imports, numba's start and cache loads: about a second)
costs more than a first look's small setting, so with the config key
``cells_per_job`` above 1 the settings that read nothing of other settings
(:func:`bfio.studies.jobs.batched_settings`) run that many to a job instead (rules
``study_simulate_batch_<i>``): the same runs, the same files, each job's start
paid once. The settings that read other settings' runs or a product
(:attr:`~bfio.studies.registry.Study.needs`) keep a job each. Which settings
share a job is :func:`bfio.studies.jobs.batched_settings` (the workflow reads it
without importing the simulator); this module runs a job's settings.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from bfio.runs.experiments import read_trace_table
from bfio.runs.runner import run_batch
from bfio.studies.registry import by_directory
from bfio.studies.report import read_product, setting_slots


@dataclass(frozen=True)
class SettingJob:
    """One setting a job simulates: its study's results directory, its name, the
    setting, and the paths it reads (``trace``: the trace table; ``prepared``: the
    preparatory stage's JSON or ``None``; ``prior``: what it needs, in
    :attr:`Study.needs` order)."""

    directory: str
    name: str
    setting: dict
    trace: str
    prepared: str | None = None
    prior: tuple[str, ...] = ()


def setting_jobs(settings: list, traces: list[str], prepared: list[str], prior: list[str]) -> list[SettingJob]:
    """The :class:`SettingJob` of each ``(directory, setting name, setting)`` of a job's
    ``settings``: ``traces`` one per setting; ``prepared`` one per setting whose study
    has a preparatory stage, in order; ``prior`` the files the job's one setting
    with :attr:`Study.needs` reads (a job of several settings has none)."""
    if len(traces) != len(settings):
        raise ValueError(f"a study simulation job of {len(settings)} settings was given {len(traces)} trace tables")
    staged = [by_directory(d).prepare is not None for d, _, _ in settings]
    if len(prepared) != sum(staged) or (prior and len(settings) != 1):
        raise ValueError(f"a study simulation job of {len(settings)} settings ({sum(staged)} with a preparatory "
                         f"stage) was given {len(prepared)} prepared files and {len(prior)} prior files")
    ready = iter(prepared)
    return [SettingJob(d, name, dict(setting), trace, next(ready) if stage else None, tuple(prior))
            for (d, name, setting), trace, stage in zip(settings, traces, staged)]


def simulate_settings(jobs: list[SettingJob], outputs: list[str], sections: list[dict], seeds, slots: int,
                      defaults: dict, log: logging.Logger) -> None:
    """Simulate each setting of ``jobs`` (:meth:`Study.run_setting`, its ``prior`` and
    ``prepared`` files read) and write its runs table to the output in the same
    place; ``sections``: each setting's study section (:meth:`Study.section`);
    ``slots``: the top-level ``slots`` (a setting may set its own)."""
    if not len(jobs) == len(outputs) == len(sections):
        raise ValueError(f"a study simulation job of {len(jobs)} settings was given {len(outputs)} outputs "
                         f"and {len(sections)} sections")
    defaults = {k: dict(v) for k, v in defaults.items()}
    for job, output, section in zip(jobs, outputs, sections):
        study = by_directory(job.directory)
        setting = dict(job.setting)
        extra = {}
        if study.needs is not None:  # the runs (or products) this setting reads, by setting name (or product file)
            needs = list(study.needs(job.name, setting))
            if len(needs) != len(job.prior):
                raise ValueError(f"study {study.name}, setting {job.name}: needs {needs} but was given "
                                 f"{len(job.prior)} files ({', '.join(job.prior) or 'none'})")
            extra["prior"] = {n: read_product(p) for n, p in zip(needs, job.prior)}
        if study.prepare is not None:  # the preparatory stage's result
            with open(job.prepared) as f:
                extra["prepared"] = json.load(f)
        runs = study.run_setting(run_batch, job.name, setting, dict(section), list(seeds),
                                 setting_slots(setting, {"slots": slots}), read_trace_table(job.trace),
                                 defaults, log, **extra)
        runs.to_csv(output, index=False)
        log.info("%s, %s: %d runs, %.1f s of simulation", study.name, job.name, len(runs), runs["sim_wall_s"].sum())
