"""Config schema (defaults, errors naming the key), run expansion and trace helpers."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import yaml

from bfio.ground.errors import ChecksumError, ConfigError
from bfio.runs.run import RunSpec, row_spec_of
from bfio.lookahead.run_keys import RowSpec
from bfio.pipeline.config import validate_config
from bfio.runs.experiments import (
    all_runs,
    declared_runs,
    experiment_rows,
    experiment_runs,
    experiment_seeds,
    extra_seeds,
    prepare_trace,
    reference_seed,
    run_cells,
    run_one,
    simulation_jobs,
    trajectory_runs,
)
from bfio.traces.sources import (
    download_mode,
    known_trace_path,
    missing_trace_message,
    missing_traces_message,
    skip_unavailable_traces,
    unavailable_traces,
    used_traces,
)
from bfio.traces.registry import KNOWN_TRACES

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


def load(name):
    with open(REPO / "config" / name) as f:
        return yaml.safe_load(f)


@pytest.mark.parametrize("name", ["config.yaml", "smoke.yaml"])
def test_shipped_configs_validate(name):
    cfg = validate_config(load(name), SCHEMA)
    assert cfg["seeds"][0] == 42
    assert cfg["data_dir"] == "../shared/data"
    assert {"table1", "table2", "horizon_sweep", "worker_sweep"} <= set(cfg["experiments"])


def test_paper_config_matches_paper_settings():
    cfg = validate_config(load("config.yaml"), SCHEMA)
    t1, t2 = cfg["experiments"]["table1"], cfg["experiments"]["table2"]
    assert (t1["trace"], t1["requests"], t1["workers"], t1["horizons"]) == ("longbench", 80000, [256],
                                                                             [0, 20, 40, 60, 80, 100])
    assert (t2["trace"], t2["requests"], t2["workers"], t2["horizons"]) == ("burstgpt", 100000, [16], [0, 20])
    assert t1["baselines"] == t2["baselines"] == ["fcfs", "jsq_tokens"]
    assert cfg["slots"] == 72 and len(cfg["seeds"]) == 5
    assert cfg["experiments"]["worker_sweep"]["workers"] == list(range(16, 225, 16))
    assert cfg["traces"] == ["longbench", "burstgpt", "arxiv", "azure_code", "azure_conv", "vidur_arxiv",
                             "sarathi_sharegpt", "sharegpt_10k", "longbench_v1", "mooncake"]


def test_defaults_are_filled():
    cfg = validate_config({"experiments": {"x": {"trace": "longbench", "requests": 10, "workers": [2],
                                                 "baselines": ["fcfs"]}}}, SCHEMA)
    assert cfg["seeds"] == [42, 1, 2, 3, 4]
    assert cfg["slots"] == 72 and cfg["download"] == "auto" and cfg["download_dir"] == "resources/traces"
    assert (cfg["download_url_base"], cfg["download_attempts"]) == (None, 3)
    assert cfg["download_timeout_s"] > 0 and cfg["download_backoff_s"] >= 0
    assert cfg["experiments"]["x"]["horizons"] == [] and cfg["experiments"]["x"]["paper_table"] is None
    # one default per option (issue 28): the policy's own, never filled in by the schema
    assert cfg["bfio"] == {} and cfg["policy_options"] == {}
    assert cfg["figures"]["sample_workers"] == 16
    assert cfg["theory"] == {}


def test_policy_sections_are_the_option_declarations():
    """The schema's bfio and policy_options sections are derived from the policies'
    Option declarations: every option, no default of their own, closed."""
    from bfio.pipeline.config import _registry_enums
    from bfio.policies import policy_class, registered

    props = _registry_enums(yaml.safe_load(SCHEMA.read_text()))["properties"]
    bfio = props["bfio"]["properties"]
    assert list(bfio) == [o.name for o in policy_class("bfio").options]
    assert not any("default" in p for p in bfio.values())
    others = props["policy_options"]["properties"]
    assert set(others) == {n for n in registered() if n != "bfio" and policy_class(n).options}
    assert set(others["vllm_token_lb"]["properties"]) == {"report_interval", "completions", "running_tokens"}
    with pytest.raises(ConfigError, match=r"policy_options\.vllm_token_lb\.running_tokens"):
        validate_config({"policy_options": {"vllm_token_lb": {"running_tokens": "all"}}}, SCHEMA)
    with pytest.raises(ConfigError, match=r"policy_options\.fcfs"):
        validate_config({"policy_options": {"fcfs": {"x": 1}}}, SCHEMA)


@pytest.mark.parametrize("mutate, key", [
    (lambda c: c.update(seeds=[42, "x"]), "seeds.1"),
    (lambda c: c.update(slots=0), "slots"),
    (lambda c: c["experiments"]["table1"].update(requests=-5), "experiments.table1.requests"),
    (lambda c: c["experiments"]["table1"].update(trace="nope"), "experiments.table1.trace"),
    (lambda c: c["experiments"]["table2"].pop("workers"), "experiments.table2.workers"),
    (lambda c: c.update(typo_key=1), "typo_key"),
    (lambda c: c["experiments"]["table1"].update(horizons=[-1]), "experiments.table1.horizons.0"),
    (lambda c: c["figures"]["trajectories"].update(table1=["bfio_h7"]), "figures.trajectories.table1"),
    (lambda c: c["figures"].update(worker_sweep_target="bfio_h99"), "figures.worker_sweep_target"),
    (lambda c: c.update(traces=["longbench"]), "experiments.table2.trace"),
    (lambda c: c["objective_study"]["confirm"].update(traces=["longbench", "nope"]),
     "objective_study.confirm.traces.1"),
    (lambda c: c["experiments"]["table1"].update(baselines=[], horizons=[], literal_horizons=[]), "experiments.table1"),
    (lambda c: c["experiments"]["horizon_sweep"].update(extra_seeds=[5, 1]), "experiments.horizon_sweep.extra_seeds"),
    (lambda c: c["experiments"]["horizon_sweep"].update(extra_seeds=[5, 5]), "experiments.horizon_sweep.extra_seeds"),
])
def test_errors_name_the_key(mutate, key):
    cfg = copy.deepcopy(load("config.yaml"))
    mutate(cfg)
    with pytest.raises(ConfigError) as err:
        validate_config(cfg, SCHEMA)
    assert str(err.value).startswith(f"config key '{key}'"), str(err.value)


def test_run_paths_round_trip_and_rows():
    spec = RunSpec("longbench", 80000, 256, 72, "bfio_h40", 42)
    assert spec.path == "longbench/n80000-g256-b72/bfio_h40/seed42"
    declared = {spec.path: spec}
    assert RunSpec.from_path(spec.path, declared) == spec  # a lookup among the declared runs, not a parse
    assert (spec.policy, spec.horizon) == ("bfio", 40)
    assert spec.with_bfio_defaults({"predictor": "oracle"}).policy_options == {"predictor": "oracle", "horizon": 40}
    assert RunSpec("burstgpt", 5, 2, 72, "fcfs", 1).with_bfio_defaults({"x": 1}).policy_options == {}
    assert row_spec_of("jsq_tokens") == RowSpec("jsq_tokens")
    assert (spec.objective, RunSpec("longbench", 10, 2, 72, "bfio_h40_literal", 1).objective) == ("default", "paper-literal")
    with pytest.raises(ConfigError):
        row_spec_of("bogus")
    with pytest.raises(ConfigError, match="not a declared run path"):
        RunSpec.from_path("longbench/n80000/bfio_h40/seed42", declared)


def test_declared_runs_map_every_path_to_its_run():
    cfg = validate_config(load("config.yaml"), SCHEMA)
    declared = declared_runs(cfg)
    assert set(declared) == {r.path for r in all_runs(cfg)}
    assert all(RunSpec.from_path(p, declared) is r for p, r in declared.items())


def test_expansion_counts_and_sharing():
    cfg = validate_config(load("config.yaml"), SCHEMA)
    literal = [f"bfio_h{h}_literal" for h in (20, 40, 60, 80, 100)]
    assert experiment_rows(cfg["experiments"]["table1"]) == ["fcfs", "jsq_tokens", "bfio_h0", "bfio_h20", "bfio_h40",
                                                             "bfio_h60", "bfio_h80", "bfio_h100", *literal]
    t1 = experiment_runs(cfg, "table1")
    assert len(t1) == 13 * 5 and t1[0].seed == 42
    hs = experiment_runs(cfg, "horizon_sweep")
    assert set(t1) <= set(hs)  # Table 1 runs are shared with the H sweep
    runs = all_runs(cfg)
    assert len(runs) == len(set(runs))
    # H sweep (+FCFS, JSQ; 11 default and 10 paper-literal rows; 5 + 15 extra seeds) + Table 2
    # (+1 literal) + G sweep
    assert experiment_seeds(cfg, "horizon_sweep") == [42, 1, 2, 3, 4, *range(5, 20)]
    assert len(hs) == 23 * 20
    assert len(runs) == 23 * 20 + 5 * 5 + 14 * 2 * 5
    traj = trajectory_runs(cfg)
    assert [r.row for r in traj["table1"]] == ["fcfs", "jsq_tokens", "bfio_h0", "bfio_h40"]
    assert all(r.seed == 42 for rs in traj.values() for r in rs)


def test_missing_trace_message_names_file_and_remedies(tmp_path):
    msg = missing_trace_message("burstgpt", tmp_path)
    assert "paper-traces/burst_data_8000.json" in msg and "data_dir" in msg and "download=auto" in msg
    assert "raw.githubusercontent.com/Echoscd/Load-Balancing-Release/6ae705d" in msg
    msg = missing_trace_message("longbench_v1", tmp_path)
    assert "no public download source" in msg


# --------------------------------------------------------------------------- config key download


def _smoke(tmp_path, **over):
    cfg = load("smoke.yaml")
    cfg.update({"data_dir": str(tmp_path / "data"), "download_dir": str(tmp_path / "dl"), **over})
    return validate_config(cfg, SCHEMA)


@pytest.mark.parametrize("value, mode", [("auto", "auto"), (True, "always"), (False, "never"),
                                         ("true", "always"), ("False", "never")])
def test_download_accepts_auto_and_the_old_booleans(tmp_path, value, mode):
    assert download_mode(_smoke(tmp_path, download=value)) == mode


@pytest.mark.parametrize("over, key", [({"download": "yes"}, "download"), ({"download": 1}, "download"),
                                       ({"download_attempts": 0}, "download_attempts"),
                                       ({"download_timeout_s": 0}, "download_timeout_s"),
                                       ({"download_backoff_s": -1}, "download_backoff_s"),
                                       ({"download_url_base": "mirror.example"}, "download_url_base"),
                                       ({"download_dir": ""}, "download_dir")])
def test_bad_download_keys_are_named(tmp_path, over, key):
    with pytest.raises(ConfigError, match=f"config key '{key}'"):
        _smoke(tmp_path, **over)


def _place(tmp_path, relpath, where="data"):
    f = tmp_path / where / relpath
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text("x")
    return f


def test_known_trace_path_follows_the_download_mode(tmp_path):
    lb, v1 = KNOWN_TRACES["longbench"], KNOWN_TRACES["longbench_v1"]
    auto, true, false = (_smoke(tmp_path, download=v) for v in ("auto", True, False))
    # nothing anywhere: auto and true fetch the public trace; false cannot place it
    assert known_trace_path("longbench", auto) == tmp_path / "dl" / lb.relpath
    assert known_trace_path("longbench", true) == tmp_path / "dl" / lb.relpath
    assert known_trace_path("longbench", false) is None
    assert known_trace_path("longbench_v1", auto) is None and known_trace_path("longbench_v1", true) is None
    # in data_dir: auto and false read it there; true still reads the download directory
    _place(tmp_path, lb.relpath)
    _place(tmp_path, v1.relpath)
    assert known_trace_path("longbench", auto) == known_trace_path("longbench", false) == tmp_path / "data" / lb.relpath
    assert known_trace_path("longbench", true) == tmp_path / "dl" / lb.relpath
    assert known_trace_path("longbench_v1", true) == tmp_path / "data" / v1.relpath
    # false: a file already in the download directory is used (copied or fetched earlier)
    _place(tmp_path, KNOWN_TRACES["arxiv"].relpath, "dl")
    assert known_trace_path("arxiv", false) == tmp_path / "dl" / KNOWN_TRACES["arxiv"].relpath


def test_auto_skips_a_derived_trace_that_is_absent_with_everything_using_it(tmp_path):
    cfg = validate_config(load("config.yaml") | {"data_dir": str(tmp_path / "data")}, SCHEMA)
    cfg["experiments"]["v1"] = {**cfg["experiments"]["table2"], "trace": "longbench_v1", "paper_table": None}
    cfg["starvation"]["settings"].append({"name": "v1_g4", "trace": "longbench_v1", "requests": 100,
                                          "workers": 4, "horizons": [0]})
    line = skip_unavailable_traces(cfg)
    assert line is not None and "\n" not in line and "longbench_v1" in line and "derived locally" in line
    for key in ("traces", "generality.traces", "objective_study.choose.traces", "experiments.v1",
                "starvation.settings"):
        assert key in line, key
    assert "longbench_v1" not in used_traces(cfg)
    assert "v1" not in cfg["experiments"] and "table2" in cfg["experiments"]
    assert [s["name"] for s in cfg["starvation"]["settings"]] == ["longbench_g256", "burstgpt_g16"]
    assert cfg["traces"][:2] == ["longbench", "burstgpt"]  # public ones stay: they are fetched
    assert unavailable_traces(cfg) == []
    # present in data_dir: nothing skipped
    cfg = validate_config(load("config.yaml") | {"data_dir": str(tmp_path / "data")}, SCHEMA)
    _place(tmp_path, KNOWN_TRACES["longbench_v1"].relpath)
    assert skip_unavailable_traces(cfg) is None and "longbench_v1" in cfg["traces"]


def test_download_false_names_every_missing_trace_and_both_remedies(tmp_path):
    cfg = _smoke(tmp_path, download=False)
    _place(tmp_path, KNOWN_TRACES["burstgpt"].relpath)
    assert skip_unavailable_traces(cfg) is None  # nothing dropped offline: the run stops instead
    missing = unavailable_traces(cfg)
    assert missing == [t for t in cfg["traces"] if t != "burstgpt"]
    msg = missing_traces_message(missing, cfg)
    for name in missing:
        assert f"{name}: {KNOWN_TRACES[name].relpath}" in msg
    assert "burstgpt" not in msg
    assert "data_dir=/path/to/data" in msg and "download=auto" in msg and str(tmp_path / "dl") in msg


def test_prepare_trace_and_run_one(tmp_path, data_dir):
    stats = prepare_trace("burstgpt", data_dir / "paper-traces" / "burst_data_8000.json",
                          tmp_path / "t.parquet", tmp_path / "t.json")
    assert stats["rows"] == 8000 and abs(stats["decode_tokens"]["mean"] - 57.0) < 0.1
    spec = RunSpec("burstgpt", 500, 4, 8, "jsq_tokens", 42)
    summary = run_one(spec, tmp_path / "t.parquet", tmp_path / "s.json", tmp_path / "s.parquet",
                      loads_path=tmp_path / "l.npy")
    assert summary["run"] == spec.path and summary["steps"] == np.load(tmp_path / "l.npy").shape[0]


@pytest.mark.parametrize("per_job", [1, 3, 10, 1000])
def test_simulation_jobs_hold_every_run_once(per_job):
    """Issue 42: cells_per_job cells a job; every configured run in exactly one job,
    the reference seed's loads recorded for exactly the trajectory runs, an
    experiment's extra seeds in a second unit of their cell."""
    cfg = validate_config({**load("config.yaml"), "cells_per_job": per_job}, SCHEMA)
    jobs = simulation_jobs(cfg)
    assert all(1 <= len(job) <= per_job for job in jobs) and all(len(job) == per_job for job in jobs[:-1])
    runs = [run for job in jobs for unit in job for run in unit.runs()]
    assert sorted(runs) == sorted(r.path for r in all_runs(cfg))
    recorded = sorted(f"{u.cell}/seed{u.recorded_seed}" for job in jobs for u in job if u.recorded_seed is not None)
    assert recorded == sorted({r.path for rs in trajectory_runs(cfg).values() for r in rs})
    assert {u.recorded_seed for job in jobs for u in job} <= {None, reference_seed(cfg)}
    units = [u for job in jobs for u in job]
    assert {u.seeds for u in units} == {tuple(cfg["seeds"]), tuple(extra_seeds(cfg))}
    assert all(u.trace == u.cell.split("/")[0] and u.trace in cfg["traces"] for u in units)


def test_run_cells_simulates_each_run_and_refuses_mismatched_outputs(tmp_path, data_dir):
    import json
    import logging

    from bfio.runs.experiments import CellRuns

    cfg = validate_config(load("smoke.yaml"), SCHEMA)
    fcfs, bfio = (min((r for r in all_runs(cfg) if r.trace == "longbench" and r.row == row),
                      key=lambda r: (r.requests, r.workers)).cell for row in ("fcfs", "bfio_h20"))
    table = str(tmp_path / "t.parquet")
    prepare_trace("longbench", data_dir / KNOWN_TRACES["longbench"].relpath, table, tmp_path / "t.json")
    job = [CellRuns(fcfs, (42, 1)), CellRuns(bfio, (42,), 42)]
    paths = [tmp_path / f"r{i}" for i in range(3)]
    summaries, series = [str(p / "s.json") for p in paths], [str(p / "s.parquet") for p in paths]
    log, loads = logging.getLogger("test"), [str(tmp_path / "l.npy")]
    with pytest.raises(ValueError, match="3 runs was given 2 summary"):
        run_cells(job, [table] * 2, summaries[:2], series, loads, cfg, {}, log)
    with pytest.raises(ValueError, match="2 cells was given 2 trace tables and 0 load"):
        run_cells(job, [table] * 2, summaries, series, [], cfg, {}, log)
    assert not any(p.exists() for p in paths)  # refused before any run wrote
    run_cells(job, [table] * 2, summaries, series, loads, cfg, {}, log)
    got = [json.loads(Path(s).read_text()) for s in summaries]
    assert [(g["run"], g["seed"]) for g in got] == [(f"{fcfs}/seed42", 42), (f"{fcfs}/seed1", 1),
                                                    (f"{bfio}/seed42", 42)]
    assert np.load(tmp_path / "l.npy").shape == (got[2]["steps"], got[2]["workers"])


def test_prepare_trace_rejects_wrong_checksum(tmp_path):
    bad = tmp_path / "burst_data_8000.json"
    bad.write_text('{"data": [{"input_length": 3, "output_length": 2}]}')
    with pytest.raises(ChecksumError, match="expected"):
        prepare_trace("burstgpt", bad, tmp_path / "t.parquet", tmp_path / "t.json")


def test_code_fingerprints_separate_simulation_from_figures():
    from bfio.runs.experiments import SIMULATION_SOURCES
    from bfio.runs.fingerprint import code_fingerprint

    sim = code_fingerprint(SIMULATION_SOURCES)
    assert sim == code_fingerprint(SIMULATION_SOURCES) and len(sim) == 16
    assert code_fingerprint(["runs/tables.py"]) != code_fingerprint(["runs/paper.py"])
    assert not any(s.startswith("figures") or s == "runs/tables.py" for s in SIMULATION_SOURCES)


def test_a_bare_run_path_simulates_its_own_horizon():
    """A spec read from a path has no options; its bfio_h<H> row must still run H, not the
    policy's default H = 0 (it silently did before ``simulate_run`` resolved it)."""
    from bfio.runs.runner import simulate_run
    from bfio.workloads.workload import Workload

    rng = np.random.default_rng(3)
    work = Workload(rng.integers(1, 200, 300), rng.integers(1, 60, 300))
    bare = RunSpec("longbench", 300, 4, 8, "bfio_h7", 1)
    resolved = bare.with_bfio_defaults(None)
    assert resolved.policy_options == {"horizon": 7}
    got = simulate_run(bare, workload=work)
    assert got.metrics["fast_solver_horizon"] == 7
    assert got.metrics["avg_imbalance"] == simulate_run(resolved, workload=work).metrics["avg_imbalance"]


def _format_keywords(node, where="") -> list[str]:
    if isinstance(node, dict):
        found = [where] if isinstance(node.get("format"), str) else []
        return found + [k for key, v in node.items() for k in _format_keywords(v, f"{where}.{key}")]
    if isinstance(node, list):
        return [k for i, v in enumerate(node) for k in _format_keywords(v, f"{where}[{i}]")]
    return []


def test_schemas_use_no_format_and_validation_skips_the_iri_grammar():
    """validate_config imports jsonschema without its iri format checkers' grammar
    module (bfio.pipeline.config.UNUSED_FORMAT_MODULE: 3 s CPU at import, a third of the
    DAG's build): sound only while no schema of the pipeline uses ``format``."""
    import subprocess
    import sys

    for schema in sorted((REPO / "workflow" / "schemas").glob("*.yaml")):
        assert _format_keywords(yaml.safe_load(schema.read_text())) == [], schema.name
    code = ("import sys, yaml; from bfio.pipeline.config import validate_config, UNUSED_FORMAT_MODULE; "
            f"validate_config(yaml.safe_load(open({str(REPO / 'config' / 'smoke.yaml')!r})), {str(SCHEMA)!r}); "
            "print(UNUSED_FORMAT_MODULE in sys.modules, sys.modules.get(UNUSED_FORMAT_MODULE, 0) is None)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]  # not loaded, and not left blocked


@pytest.mark.parametrize("script", ["prepare_trace.py", "prepare_extra_trace.py"])
def test_trace_jobs_start_without_the_simulator(script):
    """A trace job (one per trace) imports the trace package, not the simulator:
    numba alone is 0.45 s CPU of a job's start."""
    import ast
    import subprocess
    import sys

    tree = ast.parse((REPO / "workflow" / "scripts" / script).read_text())
    imports = "\n".join(ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)))
    code = f"{imports}\nimport sys\nprint(sorted(m for m in ('numba', 'bfio.simulator', 'bfio.runs.run') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
