"""End to end: the smoke workflow (config/smoke.yaml) in a fresh working
directory, its outputs, the report, lint, and the missing-trace message."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from bfio.pipeline.config import validate_config
from bfio.runs.experiments import (all_runs, experiment_rows, experiment_seeds, extra_seeds,
                                   simulation_jobs, trajectory_runs)
from bfio.runs.paper import TABLE_SETTINGS

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
SMOKE = REPO / "config" / "smoke.yaml"
#: where the smoke run writes, under its working directory (a named run, config key run_name)
SMOKE_RUN = Path("runs") / yaml.safe_load(SMOKE.read_text())["run_name"]


def snakemake(workdir, *args, check=True, timeout=600, env=None):
    # run from workdir as a user would (no --directory, which would override a named run's directory)
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
           "--workflow-profile", str(REPO / "profiles" / "default"), *args]
    env = {**os.environ, "CI": "1", **(env or {})}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=workdir)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


@pytest.fixture(scope="module")
def smoke_config(data_dir):
    with open(SMOKE) as f:
        cfg = yaml.safe_load(f)
    cfg["data_dir"] = str(data_dir)
    return validate_config(cfg, SCHEMA)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory, data_dir, smoke_config):
    work = tmp_path_factory.mktemp("smoke")
    base = ["--configfile", str(SMOKE), "--config", f"data_dir={data_dir}"]
    snakemake(work, "-c", "2", *base)
    snakemake(work, *base, "--report", str(work / "report.html"))
    return work, base


def test_smoke_tables_exist_and_are_well_formed(smoke, smoke_config):
    work, _ = smoke
    tables = work / SMOKE_RUN / "results" / "tables"
    for exp in smoke_config["experiments"]:
        for ext in ("csv", "md"):
            assert (tables / f"{exp}_summary.{ext}").stat().st_size > 0
        summary = pd.read_csv(tables / f"{exp}_summary.csv")
        exp_cfg = smoke_config["experiments"][exp]
        assert set(summary["row"]) == set(experiment_rows(exp_cfg))
        assert len(summary) == len(experiment_rows(exp_cfg)) * len(exp_cfg["workers"])
        assert (summary["n_seeds"] == len(experiment_seeds(smoke_config, exp))).all()
        for m in ("avg_imbalance", "throughput", "tpot", "energy_j", "avg_imbalance_pre", "energy_j_pre"):
            assert np.isfinite(summary[m]).all() and (summary[m] >= 0).all()
            assert (summary[f"{m}_ci_lo"] <= summary[f"{m}_mean"] + 1e-9).all()
            assert (summary[f"{m}_mean"] <= summary[f"{m}_ci_hi"] + 1e-9).all()
    for table in ("table1", "table2"):
        comp = pd.read_csv(tables / f"{table}.csv")
        printed = TABLE_SETTINGS[table]["values"]
        for row in printed:
            assert row in set(comp["row"]), row
        assert {"paper", "ours", "rel_diff", "mean", "ci_lo", "ci_hi", "verdict", "expected", "ok", "convention",
                "kind", "effective_horizon", "same_program_as"} <= set(comp)
        ran = comp[comp["ran"] & comp["paper_printed"].notna()]
        assert len(ran) > 0 and np.isfinite(ran["rel_diff"]).all()
        assert set(comp["metric"]) >= {"avg_imbalance_pre", "energy_j_pre"}
        md = (tables / f"{table}.md").read_text()
        assert "Pre-step convention" in md and "paper convention" in md
        assert "do not use the paper's setting" in md  # smoke scale is labelled as such
    energy = pd.read_csv(tables / "worker_sweep_energy.csv")
    assert set(energy["workers"]) == set(smoke_config["experiments"]["worker_sweep"]["workers"])
    assert np.isfinite(energy["reduction_pct"]).all()
    hs = smoke_config["experiments"]["horizon_sweep"]
    plateau = pd.read_csv(tables / "horizon_plateau.csv")
    assert set(plateau["horizon"]) == set(hs["horizons"]) | set(hs["literal_horizons"])
    assert (plateau["n_seeds"] == len(experiment_seeds(smoke_config, "horizon_sweep"))).all()
    assert f"## default, G = {hs['workers'][0]}" in (tables / "horizon_plateau.md").read_text()
    fit = pd.read_csv(tables / "decode_geometric_fit.csv")
    assert list(fit["trace"]) == smoke_config["traces"]
    assert ((fit["p"] > 0) & (fit["p"] < 1) & (fit["ks"] >= 0) & (fit["ks"] <= 1)).all()
    traces = pd.read_csv(tables / "traces.csv")
    assert len(traces) == len(smoke_config["traces"])


def test_smoke_traces_canonical(smoke, smoke_config):
    work, _ = smoke
    for name in smoke_config["traces"]:
        frame = pd.read_parquet(work / SMOKE_RUN / "results" / "traces" / f"{name}.parquet")
        assert {"prefill_tokens", "decode_tokens"} <= set(frame.columns)
        assert (frame["prefill_tokens"] >= 1).all() and (frame["decode_tokens"] >= 1).all()
        stats = json.loads((work / SMOKE_RUN / "results" / "traces" / f"{name}.stats.json").read_text())
        assert stats["rows"] == len(frame) and len(stats["sha256"]) == 64
    azure = pd.read_parquet(work / SMOKE_RUN / "results" / "traces" / "azure_code.parquet")
    assert "arrival_s" in azure.columns


def test_smoke_runs_and_load_matrices(smoke, smoke_config):
    work, _ = smoke
    runs = all_runs(smoke_config)
    recorded = {r.path for rs in trajectory_runs(smoke_config).values() for r in rs}
    assert smoke_config["cells_per_job"] > 1  # the first look batches its small cells
    job_of = {run: i for i, job in enumerate(simulation_jobs(smoke_config)) for u in job for run in u.runs()}
    for run in runs:
        d = work / SMOKE_RUN / "results" / "runs" / run.path
        summary = json.loads((d / "summary.json").read_text())
        assert summary["run"] == run.path and summary["workers"] == run.workers
        assert summary["seed"] == run.seed and summary["requests"] == run.requests
        series = pd.read_parquet(d / "series.parquet")
        assert len(series) == summary["steps"]
        assert {"clock", "dt", "imbalance_post", "imbalance_pre", "power_mean_post"} <= set(series.columns)
        # load matrices only for the trajectory-figure runs
        assert (d / "loads.npy").exists() == (run.path in recorded), run.path
        if run.path in recorded:
            loads = np.load(d / "loads.npy")
            assert loads.shape == (summary["steps"], run.workers)
        # one log per simulation job (config key cells_per_job cells a job), naming each of its runs
        log = work / SMOKE_RUN / "logs" / "runs" / f"cells_{job_of[run.path]}.log"
        assert f"{run.path}: avg_imbalance" in log.read_text(), log


def test_smoke_figures(smoke, smoke_config):
    work, _ = smoke
    figs = work / SMOKE_RUN / "figures"
    names = [f"distributions_{t}" for t in smoke_config["figures"]["distributions"]]
    names += ["decode_geometric", "horizon_sweep", "worker_sweep", "energy_vs_workers"]
    names += [f"load_trajectories_{e}" for e in smoke_config["figures"]["trajectories"]]
    names += [f"power_timeseries_{e}" for e in smoke_config["figures"]["power"]]
    for name in names:
        pdf, png = figs / f"{name}.pdf", figs / f"{name}.png"
        assert pdf.read_bytes()[:5] == b"%PDF-", name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert png.stat().st_size > 10_000, name
    caption = (work / SMOKE_RUN / "results" / "report" / "decode_geometric_caption.rst").read_text()
    for t in smoke_config["traces"]:
        assert t in caption
    assert "KS distance" in caption


def test_smoke_report_has_every_figure_with_caption(smoke):
    work, _ = smoke
    html = (work / "report.html").read_text(errors="replace")
    assert len(html) > 100_000
    for needle in ("load_trajectories_table1.png", "horizon_sweep.png", "energy_vs_workers.png",
                   "decode_geometric.png", "Kolmogorov-Smirnov", "Per-worker token load"):
        assert needle in html, needle


def test_smoke_is_complete_and_figures_do_not_rerun_simulations(smoke):
    work, base = smoke
    dry = snakemake(work, "-n", *base)
    assert "Nothing to be done" in dry.stdout + dry.stderr
    forced = snakemake(work, "-n", *base, "-R", "fig_power_timeseries", "fig_horizon_sweep",
                       "fig_load_trajectories")
    out = forced.stdout + forced.stderr
    assert "fig_power_timeseries" in out
    assert "rule simulate" not in out and "simulate_recorded" not in out


def _dry_run_jobs(workdir, data_dir, *config):
    """A fresh directory's dry run of the first look: (rule, body) per job."""
    out = snakemake(workdir, "-n", "--configfile", str(SMOKE), "--config", f"data_dir={data_dir}", *config).stdout
    return re.findall(r"^rule (\w+):\n(.*?)(?:\n\n|\Z)", out, flags=re.M | re.S)


def _job_outputs(body, name):
    (outputs,) = re.findall(r"^\s*output: (.*)$", body, flags=re.M)
    return re.findall(rf"results/runs/(\S+)/seed(\d+)/{re.escape(name)}", outputs)


def test_one_simulation_job_per_cell_runs_every_seed(tmp_path, data_dir, smoke_config):
    """Issue 14: with ``cells_per_job: 1`` (the default) the simulations are batched
    by cell (a run without its seed): a fresh directory's dry run schedules exactly
    one simulate job per distinct cell, and each job's outputs are the summaries of
    every configured seed."""
    jobs = [(r, b) for r, b in _dry_run_jobs(tmp_path, data_dir, "cells_per_job=1")
            if r in ("simulate", "simulate_recorded")]
    cells = {r.cell for r in all_runs(smoke_config)}
    assert len(jobs) == len(cells) > 0
    seen = set()
    for _, body in jobs:
        summaries = _job_outputs(body, "summary.json")
        assert sorted(int(s) for _, s in summaries) == sorted(int(s) for s in smoke_config["seeds"])
        (cell,) = {c for c, _ in summaries}
        seen.add(cell)
    assert seen == cells


def test_batched_simulation_jobs_run_every_run_once(tmp_path, data_dir, smoke_config):
    """Issue 42: the first look runs ``cells_per_job`` cells a job (each job's
    start paid once): its dry run's simulation jobs hold at most that many cells,
    name every configured run's summary and series exactly once, and the load
    matrices of exactly the trajectory runs."""
    per_job = smoke_config["cells_per_job"]
    scheduled = [(r, b) for r, b in _dry_run_jobs(tmp_path, data_dir) if r.startswith("simulate")]
    assert scheduled and all(r.startswith("simulate_cells_") for r, _ in scheduled)
    jobs = [b for _, b in scheduled]
    expected = sorted(r.path for r in all_runs(smoke_config))
    for name in ("summary.json", "series.parquet"):
        ran = sorted(f"{c}/seed{s}" for body in jobs for c, s in _job_outputs(body, name))
        assert ran == expected, name
    loads = sorted(f"{c}/seed{s}" for body in jobs for c, s in _job_outputs(body, "loads.npy"))
    assert loads == sorted({r.path for rs in trajectory_runs(smoke_config).values() for r in rs})
    cells = len({r.cell for r in all_runs(smoke_config)})
    cells += len({r.cell for r in all_runs(smoke_config) if r.seed in extra_seeds(smoke_config)})
    assert len(jobs) == -(-cells // per_job) < cells
    assert all(len({c for c, _ in _job_outputs(body, "summary.json")}) <= per_job for body in jobs)


def test_batched_study_jobs_run_every_setting_once(tmp_path, data_dir, smoke_config):
    """Issue 42: with cells_per_job above 1 the study settings that read no other
    setting run that many a job (rules study_simulate_batch_<i>); the settings
    with needs keep a study_simulate job each; every setting's runs file has
    exactly one job."""
    from bfio.studies.registry import generic_studies

    studies = generic_studies()
    expected, needing = [], []
    for study in studies.values():
        for name, setting in study.settings(smoke_config).items():
            path = f"results/studies/{study.directory}/{study.run_stem(name, setting)}.csv"
            expected.append(path)
            if study.needs is not None and study.needs(name, setting):
                needing.append(path)
    outputs, batch_jobs = {}, 0
    for rule, body in _dry_run_jobs(tmp_path, data_dir):
        if rule.startswith("study_simulate"):
            (line,) = re.findall(r"^\s*output: (.*)$", body, flags=re.M)
            outputs.setdefault(rule.rstrip("0123456789"), []).extend(p.strip() for p in line.split(","))
            batch_jobs += rule.startswith("study_simulate_batch_")
    assert sorted(outputs["study_simulate"] + outputs["study_simulate_batch_"]) == sorted(expected)
    assert sorted(outputs["study_simulate"]) == sorted(needing)
    assert batch_jobs == -(-(len(expected) - len(needing)) // smoke_config["cells_per_job"]) > 0


def test_kernels_compile_in_one_job_per_group_before_every_job_that_runs_them(tmp_path, data_dir):
    """Issue 42: rule compile_kernels runs once per group of kernels, and every
    simulation job (and the slot-model theory job) takes its group's marker as
    input, so no two jobs compile the same kernels at once."""
    out = snakemake(tmp_path, "-n", "--configfile", str(SMOKE), "--config", f"data_dir={data_dir}").stdout
    jobs = re.findall(r"^rule (\w+):\n(.*?)(?:\n\n|\Z)", out, flags=re.M | re.S)
    compiles = [body for rule, body in jobs if rule == "compile_kernels"]
    assert sorted(re.search(r"output: (\S+)", b).group(1) for b in compiles) == [
        "logs/kernels/simulation.compiled", "logs/kernels/theory.compiled"]
    waits = {"simulate": "simulation", "simulate_recorded": "simulation", "simulate_extra_seeds": "simulation",
             "simulate_cells": "simulation", "study_prepare": "simulation", "study_simulate": "simulation",
             "study_simulate_batch": "simulation", "theory_slot": "theory"}
    seen = set()
    for rule, body in jobs:
        rule = re.sub(r"^(simulate_cells|study_simulate_batch)_\d+$", r"\1", rule)  # the first look's batched jobs
        if rule in waits:
            seen.add(rule)
            (inputs,) = re.findall(r"^\s*input: (.*)$", body, flags=re.M)
            assert f"logs/kernels/{waits[rule]}.compiled" in inputs, (rule, inputs)
    assert {"simulate_cells", "study_simulate", "study_simulate_batch", "theory_slot"} <= seen


def test_changed_helper_reruns_the_figures_that_import_it(smoke, tmp_path):
    """Issue 14: a figure module's helper changes (``bfio.figures.style``, whose
    registry, intervals and titles every figure reads since issue 42) in a copy of
    the package put first on the path: the dry run schedules the figures, and no
    simulation, study stage or table."""
    import shutil

    import bfio

    work, base = smoke
    pkg = tmp_path / "src" / "bfio"
    shutil.copytree(Path(bfio.__file__).parent, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    helper = pkg / "figures" / "style.py"
    helper.write_text(helper.read_text() + "\n# changed helper\n")
    out = snakemake(work, "-n", *base, env={"PYTHONPATH": str(tmp_path / "src")})
    text = out.stdout + out.stderr
    for rule in ("fig_horizon_sweep", "fig_worker_sweep", "fig_distributions", "fig_power_timeseries",
                 "study_figure", "theory_figures"):
        assert f"rule {rule}" in text, (rule, text[-3000:])
    assert "figures/online_load.png" in text, text[-3000:]  # a study figure importing the helper
    for rule in ("simulate", "study_simulate", "study_prepare", "study_table", "paper_table", "theory_slot"):
        assert f"rule {rule}:" not in text and f"rule {rule}\n" not in text, (rule, text[-3000:])
    assert "rule simulate_cells_" not in text and "rule study_simulate_batch_" not in text, text[-3000:]


def test_lint_passes():
    """``snakemake --lint`` reports nothing for the pipeline's own rule files.

    Lints of workflow/rules/theory.smk (another component) are listed in the
    failure message of the theory tests' owner, not here."""
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--lint", "-s", str(REPO / "Snakefile"),
                           "--configfile", str(SMOKE)], capture_output=True, text=True, cwd=REPO, timeout=300)
    out = proc.stdout + proc.stderr
    lints = [line for line in out.splitlines() if line.startswith("Lints for")]
    ours = [line for line in lints if "theory.smk" not in line]
    assert not ours, out
    if not lints:
        assert proc.returncode == 0 and "Congratulations" in out, out


def test_missing_trace_names_file_and_both_remedies(tmp_path):
    """A target that needs the derived trace (no public source) on a machine
    without it: the message names the file and what to do. (``download:
    false`` from a clone without data: tests/test_pipeline_download.py.)"""
    proc = snakemake(tmp_path, "-n", "results/traces/longbench_v1.parquet", "--configfile", str(SMOKE), "--config",
                     f"data_dir={tmp_path / 'nodata'}", check=False)
    assert proc.returncode != 0
    err = proc.stdout + proc.stderr
    assert "Trace 'longbench_v1' is missing" in err
    assert "longbench/longbench_v1_llama2-7b-chat-4k_lengths.csv" in err
    assert "data_dir" in err and "no public download source" in err


def test_download_rule_used_when_enabled(tmp_path, data_dir):
    """download: true reads every public trace from download_dir (fetched
    there), even one present in data_dir; auto reads data_dir when the file is
    there and fetches only the rest."""
    relpath = "paper-traces/longbench_data_8000.json"
    proc = snakemake(tmp_path, "-n", "--configfile", str(SMOKE), "--config", f"data_dir={data_dir}",
                     "download=True", "traces=[longbench,burstgpt]", check=False)
    out = proc.stdout + proc.stderr
    assert "rule download_trace" in out, out[-3000:]
    assert f"resources/traces/{relpath}" in out
    nodata = tmp_path / "partial"
    (nodata / "paper-traces").mkdir(parents=True)
    (nodata / "paper-traces" / "burst_data_8000.json").symlink_to(data_dir / "paper-traces" / "burst_data_8000.json")
    proc = snakemake(tmp_path, "-n", "--configfile", str(SMOKE), "--config", f"data_dir={nodata}",
                     "traces=[longbench,burstgpt]", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    # a named run makes download_dir absolute against the directory snakemake starts in
    assert f"output: {tmp_path}/resources/traces/{relpath}" in out
    assert f"output: {tmp_path}/resources/traces/paper-traces/burst_data_8000.json" not in out
    assert f"input: {nodata}/paper-traces/burst_data_8000.json" in out


def test_bad_config_stops_with_key(tmp_path):
    proc = snakemake(tmp_path, "-n", "--configfile", str(SMOKE), "--config", "slots=0", check=False)
    assert proc.returncode != 0
    assert "config key 'slots'" in proc.stdout + proc.stderr


def test_smoke_studies_beyond_the_paper(smoke, smoke_config):
    """Online (Poisson + instant dispatch, trace replay), predictor and
    starvation studies: tables with finite values, recommendation, figures."""
    work, _ = smoke
    tables = work / SMOKE_RUN / "results" / "tables"
    seeds = len(smoke_config["seeds"])
    online = pd.read_csv(tables / "online.csv")
    assert {"poisson", "trace"} <= set(online["arrival_mode"])
    assert {"central", "instant"} <= set(online["dispatch"])
    assert set(online["row"]) == set(smoke_config["online"]["central"]) | set(smoke_config["online"]["instant"])
    for m in ("queue_wait_s_p99", "tpot_s_p50", "e2e_s_p50", "e2e_s_p99", "throughput_run", "avg_imbalance_run",
              "energy_j_run"):
        assert np.isfinite(online[f"{m}_mean"]).all() and (online[f"{m}_mean"] >= 0).all(), m
    assert (online["n_seeds"] == seeds).all() and (online["load"] > 0).all()
    routers = pd.read_csv(tables / "online_routers.csv")  # issue 18: instant rows vs online.reference
    assert set(routers.loc[routers["role"] == "instant", "row"]) == set(smoke_config["online"]["instant"])
    assert set(routers.loc[routers["role"] == "reference", "row"]) == {smoke_config["online"]["reference"]}
    assert {0, 10} <= set(routers["report_interval"])
    assert np.isfinite(routers["vs_reference_mean"]).all() and (routers["vs_reference_mean"] > 0).all()
    pred = pd.read_csv(tables / "predictors.csv")
    assert "noisy" in set(pred["predictor"])
    assert set(smoke_config["predictor_study"]["predictors"]) <= set(pred["predictor"])
    assert np.isfinite(pred[["avg_imbalance_mean", "throughput_mean", "imbalance_vs_oracle_pct_mean"]]).all().all()
    starv = pd.read_csv(tables / "starvation.csv")
    assert any(a.startswith("aging:") for a in starv["admission"])
    assert np.isfinite(starv[["wait_steps_p99_mean", "wait_s_max_mean", "throughput_mean"]]).all().all()
    rec = json.loads((tables / "starvation_recommendation.json").read_text())
    assert rec["admission"] in smoke_config["starvation"]["admissions"]
    for name in ("online", "predictors", "starvation"):
        assert "scaled from the paper setting" in (tables / f"{name}.md").read_text()
    for name in ("online_load", "online_replay", "online_routers", "predictor_noise", "starvation"):
        assert (work / SMOKE_RUN / "figures" / f"{name}.pdf").read_bytes()[:5] == b"%PDF-", name
        assert (work / SMOKE_RUN / "figures" / f"{name}.png").stat().st_size > 10_000, name


def test_smoke_study_figures_and_tables_do_not_rerun_simulations(smoke):
    work, base = smoke
    forced = snakemake(work, "-n", *base, "-R", "study_figure", "study_table", "study_extra")
    out = forced.stdout + forced.stderr
    assert "study_figure" in out and "study_table" in out
    for path in ("figures/online_load.png", "results/tables/online_routers.csv", "results/tables/online.csv",
                 "results/tables/objective.csv", "figures/objective_study.png"):
        assert path in out, path
    for rule in ("study_prepare", "study_simulate", "rule simulate"):
        assert rule not in out, rule


def test_smoke_generality_table_and_figure(smoke, smoke_config):
    """The generality study: one row per (trace, case, G) with finite effects
    and 95% intervals around them; replay cases only for traces with times."""
    from bfio.pipeline.config import trace_specs

    work, _ = smoke
    gen = smoke_config["generality"]
    table = pd.read_csv(work / SMOKE_RUN / "results" / "tables" / "generality.csv")
    assert set(table["trace"]) == set(gen["traces"])
    assert set(table["workers"]) == set(gen["workers"])
    specs = trace_specs(smoke_config)
    n_replay = len(gen["replay"]["time_scales"]) + len(gen["replay"]["loads"])
    for trace in gen["traces"]:
        cases = set(table.loc[table["trace"] == trace, "case"])
        assert "backlog" in cases
        assert len(cases) == 1 + (n_replay if specs[trace].arrival_col else 0), (trace, cases)
    assert len(table) == len(table.drop_duplicates(["trace", "case", "workers"]))
    assert (table["n_seeds"] == len(smoke_config["seeds"])).all()
    for t in gen["targets"]:
        for prefix in ("imb_ratio", "thr_gain_pct", "energy_saving_pct"):
            col = f"{prefix}_{t}"
            m, lo, hi = table[col], table[f"{col}_lo"], table[f"{col}_hi"]
            assert np.isfinite(m).all() and np.isfinite(lo).all() and np.isfinite(hi).all(), col
            assert ((lo <= m + 1e-9) & (m <= hi + 1e-9)).all(), col
        assert (table[f"imb_ratio_{t}"] > 0).all()
    assert (table["mean_prompt"] > 0).all() and (table["mean_decode"] > 0).all()
    replay = table[table["case"] != "backlog"]
    assert np.isfinite(replay["offered_load"]).all() and (replay["offered_load"] > 0).all()
    md = (work / SMOKE_RUN / "results" / "tables" / "generality.md").read_text()
    assert md.count("\n|") >= len(table) + 1 and "[" in md
    runs = pd.read_csv(work / SMOKE_RUN / "results" / "studies" / "generality" / "runs.csv")
    assert set(runs["row"]) == set(gen["rows"])
    for ext, magic in (("pdf", b"%PDF-"), ("png", b"\x89PNG\r\n\x1a\n")):
        assert (work / SMOKE_RUN / "figures" / f"generality.{ext}").read_bytes()[:len(magic)] == magic


def test_smoke_generality_table_and_figure_do_not_rerun_simulations(smoke):
    work, base = smoke
    forced = snakemake(work, "-n", *base, "-R", "study_table", "study_figure",
                       "results/studies/generality/runs.csv")
    out = forced.stdout + forced.stderr
    for path in ("results/tables/generality.csv", "figures/generality.png", "results/studies/generality/runs.csv"):
        assert path in out, path
    assert "study_simulate" not in out


def test_first_look_never_touches_the_paper_outputs(smoke):
    """Issue 31 item 1: the README's first look (config/smoke.yaml) is a named run;
    everything it writes is under runs/<run_name>/ (results, figures, logs), so a
    paper-scale results/ and figures/ beside it stay as they were."""
    work, _ = smoke
    assert {p.name for p in work.iterdir()} <= {"runs", "report.html", ".snakemake", "resources"}
    assert (work / SMOKE_RUN / "results" / "tables" / "table1.csv").is_file()
    assert (work / SMOKE_RUN / "figures").is_dir()


def test_every_figure_of_the_smoke_run_has_readable_text(smoke):
    """Issue 31 item 4: bfio.figures.save logs overlapping text (tick labels, axis
    labels, legends, titles, a label over another panel), and (issue 42) a panel
    with more than 8 series; no figure may."""
    work, _ = smoke
    logs = sorted((work / SMOKE_RUN / "logs").rglob("*.log"))
    assert any("figures" in str(p) for p in logs)
    bad = [f"{p.name}: {line.strip()[:300]}" for p in logs for line in p.read_text(errors="replace").splitlines()
           if "overlapping text" in line or "series in a panel" in line]
    assert not bad, "\n".join(bad)
