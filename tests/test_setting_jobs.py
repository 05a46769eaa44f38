"""Study settings several to a pipeline job (issue 42, bfio.studies.setting_jobs):
which settings are batched, and how a job's files are matched to its settings."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bfio.pipeline.config import validate_config
from bfio.studies.registry import generic_studies
from bfio.studies.jobs import batched_settings
from bfio.studies.setting_jobs import setting_jobs

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


def _config(name):
    return validate_config(yaml.safe_load((REPO / "config" / name).read_text()), SCHEMA)


def _needs(study, name, setting):
    return bool(study.needs is not None and study.needs(name, setting))


@pytest.mark.parametrize("config, per_job", [("smoke.yaml", 2), ("smoke.yaml", 10), ("smoke.yaml", 100),
                                             ("config.yaml", 10)])
def test_every_setting_without_needs_is_batched_once_and_in_order(config, per_job):
    cfg = _config(config)
    studies = generic_studies()
    settings = {n: s.settings(cfg) for n, s in studies.items()}
    jobs = batched_settings(studies, settings, per_job)
    units = [u for job in jobs for u in job]
    assert len(units) == len(set(units))
    assert all(1 <= len(job) <= per_job for job in jobs) and all(len(job) == per_job for job in jobs[:-1])
    order = [(n, k) for n, s in settings.items() for k in s]
    assert units == [u for u in order if u in set(units)]  # registry, then settings order
    free = [(n, k) for n, k in order if not _needs(studies[n], k, settings[n][k])]
    assert set(units) <= set(free)
    # what stays unbatched among the free settings: only a file stem the unbatched rule claims
    needing = [(n, k) for n, k in order if (n, k) not in free]
    claimed = {(studies[n].directory, studies[n].run_stem(k, settings[n][k])) for n, k in needing}
    dirs, stems = {d for d, _ in claimed}, {s for _, s in claimed}
    for n, k in set(free) - set(units):
        assert studies[n].directory in dirs and studies[n].run_stem(k, settings[n][k]) in stems, (n, k)
    assert batched_settings(studies, settings, 1) == []


def test_a_free_setting_whose_file_the_single_rule_claims_keeps_its_job():
    class Toy:
        def __init__(self, directory, needs):
            self.directory, self.needs = directory, needs

        def run_stem(self, name, setting):
            return f"runs_{name}"

    studies = {"a": Toy("a", lambda k, v: ["x"] if k == "y" else []), "b": Toy("b", None)}
    settings = {"a": {"x": {}, "y": {}}, "b": {"y": {}, "z": {}}}
    # a/y needs a/x; b/y is free but its stem runs_y with directory b is not claimed (b has no needing setting)
    assert batched_settings(studies, settings, 10) == [(("a", "x"), ("b", "y"), ("b", "z"))]
    studies["b"] = Toy("a", None)  # same directory: a/runs_y is now the file of both
    assert batched_settings(studies, settings, 10) == [(("a", "x"), ("b", "z"))]


def test_setting_jobs_match_files_to_settings_and_name_a_mismatch():
    cfg = _config("smoke.yaml")
    studies = generic_studies()
    online = studies["online"]  # has a preparatory stage
    predictors = studies["predictor_study"]  # has none
    (o_name, o_set), = list(online.settings(cfg).items())[:1]
    (p_name, p_set), = list(predictors.settings(cfg).items())[:1]
    settings = [(predictors.directory, p_name, p_set), (online.directory, o_name, o_set)]
    jobs = setting_jobs(settings, ["t1", "t2"], ["prep.json"], [])
    assert [(j.directory, j.name, j.trace, j.prepared, j.prior) for j in jobs] == [
        (predictors.directory, p_name, "t1", None, ()), (online.directory, o_name, "t2", "prep.json", ())]
    with pytest.raises(ValueError, match="2 settings was given 1 trace"):
        setting_jobs(settings, ["t1"], ["prep.json"], [])
    with pytest.raises(ValueError, match=r"\(1 with a preparatory stage\) was given 0 prepared"):
        setting_jobs(settings, ["t1", "t2"], [], [])
    with pytest.raises(ValueError, match="was given 1 prepared files and 1 prior"):
        setting_jobs(settings, ["t1", "t2"], ["prep.json"], ["runs.csv"])


def test_a_setting_given_fewer_files_than_it_needs_is_refused_by_name(tmp_path):
    import logging

    from bfio.studies.setting_jobs import SettingJob, simulate_settings

    cfg = _config("smoke.yaml")
    study = generic_studies()["generality"]
    name, setting = next((k, v) for k, v in study.settings(cfg).items() if _needs(study, k, v))
    job = SettingJob(study.directory, name, setting, str(tmp_path / "t.parquet"))
    with pytest.raises(ValueError, match=f"setting {name}: needs .* but was given 0 files"):
        simulate_settings([job], [str(tmp_path / "out.csv")], [{}], [42], 72, {}, logging.getLogger("t"))
    assert not (tmp_path / "out.csv").exists()
