"""A table of bad inputs (issue 12): malformed traces, CLI arguments, saved
instances and pipeline configs. Each must give exit code 2 (CLI) or a
ConfigError (config), a message naming the offending file / row / field / key,
and no traceback. The CLI runs in process (``bfio.cli.main``) for speed; a few
cases also run as a subprocess to check the real exit code and stderr."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bfio.cli import main
from bfio.ground.errors import ConfigError
from bfio.pipeline.config import validate_config

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"

GOOD_CSV = "a,b,t\n" + "".join(f"{10 + i},{1 + i % 5},{i * 0.5}\n" for i in range(40))
SIM = ["--prefill-col", "a", "--decode-col", "b", "--requests", "20", "--workers", "2", "--slots", "2"]


def cli(argv, capsys):
    """Run the CLI in process: ``(exit code, stderr)``; argparse's SystemExit counts."""
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as e:
        rc = e.code
    return rc, capsys.readouterr().err


def assert_clean_error(rc, err, expected_rc, needles):
    assert rc == expected_rc, err
    assert "Traceback" not in err, err
    for needle in needles:
        assert needle in err, f"{needle!r} not in {err!r}"


# --------------------------------------------------------------------------- traces
# (file name, content, extra CLI args, substrings the message must contain).
# "{f}" in a needle is replaced by the trace path.
TRACES = [
    ("neg.csv", "a,b\n5,1\n6,-1\n", [], ["{f}", "row 1", "field 'b'", "not positive"]),
    ("zero.csv", "a,b\n0,1\n", [], ["row 0", "field 'a'", "not positive"]),
    ("frac.csv", "a,b\n5,1\n2.5,1\n", [], ["row 1", "field 'a'", "not an integer"]),
    ("nan.csv", "a,b\n5,1\n,1\n", [], ["row 1", "field 'a'", "missing"]),
    ("text.csv", "a,b\n5,1\n6,abc\n", [], ["row 1", "field 'b'", "not an integer"]),
    ("nocol.csv", "x,b\n5,1\n", [], ["field 'a'", "missing prefill column"]),
    ("big4e18.csv", "a,b\n5,1\n4000000000000000000,2\n", [], ["row 1", "field 'a'", "exceeds the maximum prefill"]),
    ("big2p63.csv", "a,b\n5,1\n9223372036854775808,2\n", [], ["row 1", "field 'a'", "exceeds"]),
    ("big1e30.csv", "a,b\n1e30,1\n", [], ["row 0", "field 'a'", "exceeds"]),
    ("prefill2p31.csv", "a,b\n5,1\n2147483649,1\n", [], ["row 1", "field 'a'", "2,147,483,648"]),
    ("dec1e12.csv", "a,b\n5,1\n5,1000000000000\n", [], ["row 1", "field 'b'", "exceeds the maximum decode"]),
    ("dec2p24.csv", "a,b\n5,16777217\n", [], ["row 0", "field 'b'", "16,777,216"]),
    ("inf.csv", "a,b\n5,1\ninf,1\n", [], ["row 1", "field 'a'"]),
    ("negbig.csv", "a,b\n-9223372036854775809,1\n", [], ["row 0", "field 'a'"]),
    ("dupcol.csv", "a,b,a\n5,1,6\n", [], ["{f}", "field 'a'", "twice"]),
    ("dupkey.jsonl", '{"a": 5, "b": 1}\n{"a": 5, "b": 1, "a": 7}\n', [], ["row 1", "field 'a'", "twice"]),
    ("dupkey.json", '{"data": [{"a": 5, "a": 6, "b": 1}]}', [], ["field 'a'", "twice"]),
    ("empty.csv", "", [], ["{f}", "empty"]),
    ("header.csv", "a,b\n", [], ["{f}", "no rows"]),
    ("badline.jsonl", '{"a": 5, "b": 1}\n{"a": 5,\n', [], ["row 1", "line 2", "not valid JSON"]),
    ("list.jsonl", '{"a": 5, "b": 1}\n[1, 2]\n', [], ["row 1", "expected a JSON object"]),
    ("nodata.json", '{"rows": []}', [], ["field 'data'"]),
    ("datanotlist.json", '{"data": 5}', [], ["field 'data'", "expected a list"]),
    ("notjson.json", "{oops", [], ["{f}", "not valid JSON"]),
    ("trace.txt", "a,b\n5,1\n", [], ["{f}", "unsupported extension"]),
    ("big.jsonl", '{"a": 4000000000000000000, "b": 1}\n', [], ["row 0", "field 'a'", "exceeds"]),
    ("huge.jsonl", '{"a": 5, "b": 1}\n{"a": 18446744073709551616, "b": 1}\n', [], ["row 1", "field 'a'", "exceeds"]),
    ("missingkey.jsonl", '{"a": 5, "b": 1}\n{"a": 5}\n', [], ["row 1", "field 'b'"]),
    ("bool.json", '{"data": [{"a": 5, "b": true}]}', [], ["row 0", "field 'b'"]),
    ("neg.jsonl", '{"a": 5, "b": 1}\n{"a": -3, "b": 1}\n', [], ["row 1", "field 'a'", "not positive"]),
    ("mixedtz.csv", "a,b,t\n5,1,2024-01-01T00:00:00+00:00\n6,1,2024-01-01T00:00:05\n",
     ["--arrival-col", "t", "--arrival-mode", "trace"], ["row 1", "field 't'", "time zone"]),
    ("badtime.csv", "a,b,t\n5,1,2024-01-01T00:00:00\n6,1,yesterday\n",
     ["--arrival-col", "t", "--arrival-mode", "trace"], ["row 1", "field 't'", "timestamp"]),
    ("negtime.csv", "a,b,t\n5,1,0\n6,1,-3\n", ["--arrival-col", "t", "--arrival-mode", "trace"],
     ["row 1", "field 't'", "negative"]),
    ("noarrcol.csv", "a,b\n5,1\n", ["--arrival-col", "t", "--arrival-mode", "trace"], ["field 't'", "missing arrival"]),
]


@pytest.mark.parametrize("name, content, extra, needles", TRACES, ids=[t[0] for t in TRACES])
def test_bad_trace(tmp_path, capsys, name, content, extra, needles):
    f = tmp_path / name
    f.write_text(content)
    out = tmp_path / "out.json"
    rc, err = cli(["simulate", "--trace", f, *SIM, *extra, "--json", out], capsys)
    assert_clean_error(rc, err, 2, [n.replace("{f}", str(f)) for n in needles])
    assert not out.exists()


def test_missing_trace_file(tmp_path, capsys):
    rc, err = cli(["simulate", "--trace", tmp_path / "nope.csv", *SIM], capsys)
    assert_clean_error(rc, err, 2, ["nope.csv", "does not exist"])


# --------------------------------------------------------------------------- CLI arguments
@pytest.fixture
def good_trace(tmp_path):
    f = tmp_path / "good.csv"
    f.write_text(GOOD_CSV)
    (tmp_path / "afile").write_text("x")
    return f


ARGS = [
    ("seed_negative", ["--seed", "-1"], ["--seed", "-1"]),
    ("seed_text", ["--seed", "x"], ["--seed"]),
    ("json_directory", ["--json", "{d}"], ["--json", "is a directory"]),
    ("json_under_file", ["--json", "{d}/afile/r.json"], ["--json", "afile", "not a directory"]),
    ("json_unwritable", ["--json", "/proc/bfio-test/r.json"], ["--json", "cannot write"]),
    ("series_xlsx", ["--series", "{d}/s.xlsx"], ["--series", "unknown extension '.xlsx'"]),
    ("series_noext", ["--series", "{d}/s"], ["--series", "unknown extension"]),
    ("per_request_txt", ["--per-request", "{d}/p.txt"], ["--per-request", "unknown extension '.txt'"]),
    ("series_under_file", ["--series", "{d}/afile/s.csv"], ["--series", "not a directory"]),
    ("per_request_directory", ["--per-request", "{d}"], ["--per-request", "is a directory"]),
    ("workers_million", ["--workers", "1000000", "--slots", "8"], ["--workers x --slots", "2,097,152"]),
    ("workers_zero", ["--workers", "0"], ["--workers"]),
    ("slots_zero", ["--slots", "0"], ["--slots"]),
    ("requests_zero", ["--requests", "0"], ["--requests"]),
    ("policy_unknown", ["--policy", "nope"], ["'nope' is not a policy"]),
    ("horizon_without_bfio", ["--horizon", "5"], ["--horizon: only valid with --policy bfio"]),
    ("poisson_without_rate", ["--arrival-mode", "poisson"], ["--arrival-rate"]),
    ("rate_zero", ["--arrival-mode", "poisson", "--arrival-rate", "0"], ["--arrival-rate"]),
    ("time_scale_backlog", ["--time-scale", "0.5"], ["--time-scale"]),
    ("trace_mode_no_arrivals", ["--arrival-mode", "trace"], ["no arrival column"]),
    ("trace_mode_too_many", ["--arrival-mode", "trace", "--arrival-col", "t", "--requests", "41"],
     ["--requests", "40 rows"]),
    ("bfio_predictor", ["--policy", "bfio", "--predictor", "foo"], ["predictor", "'foo'"]),
    ("bfio_solver", ["--policy", "bfio", "--solver", "cplex"], ["solver", "'cplex'"]),
    ("bfio_admission", ["--policy", "bfio", "--admission", "aging:-5"], ["admission", "aging:-5"]),
    ("bfio_instant_admission", ["--policy", "bfio", "--dispatch", "instant", "--admission", "free"],
     ["--admission: only valid with --dispatch central"]),
    ("dispatch_unknown", ["--dispatch", "teleport"], ["--dispatch"]),
]


@pytest.mark.parametrize("name, args, needles", ARGS, ids=[a[0] for a in ARGS])
def test_bad_argument(tmp_path, good_trace, capsys, name, args, needles):
    d = str(tmp_path)
    args = [a.replace("{d}", d) for a in args]
    base = ["simulate", "--trace", good_trace, *SIM]
    rc, err = cli([*base, *args], capsys)
    assert_clean_error(rc, err, 2, needles)
    produced = {p.name for p in tmp_path.iterdir()} - {"good.csv", "afile"}
    assert not produced, f"partial outputs left behind: {produced}"


def test_unknown_known_trace_name(capsys, tmp_path):
    rc, err = cli(["simulate", "--trace", "no_such_trace", *SIM, "--data-dir", tmp_path], capsys)
    assert_clean_error(rc, err, 2, ["no_such_trace", "does not exist"])


# --------------------------------------------------------------------------- instances
def instance(**over):
    inst = {"free": [2, 2], "base_loads": [[10, 5], [3, 1]], "horizon": 1,
            "waiting": {"prefill": [7, 5], "age": [0, 0]}}
    for k, v in over.items():
        if k.startswith("waiting_"):
            inst["waiting"][k[len("waiting_"):]] = v
        else:
            inst[k] = v
    return json.dumps(inst)


INSTANCES = [
    ("prefill_1e30", instance(waiting_prefill=[1e30, 5]), [], ["field 'waiting.prefill'", "entry 0"]),
    ("prefill_2p63", instance(waiting_prefill=[5, 2 ** 63]), [], ["field 'waiting.prefill'", "entry 1"]),
    ("prefill_4e18", instance(waiting_prefill=[4 * 10 ** 18, 5]), [], ["field 'waiting.prefill'", "entry 0"]),
    ("base_1e30", instance(base_loads=[[1e30, 5], [3, 1]]), [], ["field 'base_loads[0]'"]),
    ("age_huge", instance(waiting_age=[0, 10 ** 30]), [], ["field 'waiting.age'"]),
    ("not_json", "{oops", [], ["not valid JSON"]),
    ("free_negative", instance(free=[-1, 2]), [], ["field 'free'"]),
    ("prefill_zero", instance(waiting_prefill=[0, 5]), [], ["field 'waiting.prefill'"]),
    ("admission_bad", instance(admission="aging:-5"), [], ["field 'admission'"]),
    ("rows_mismatch", instance(base_loads=[[10, 5]]), [], ["field 'base_loads'"]),
    ("json_directory", instance(), ["--json", "{d}"], ["--json", "is a directory"]),
    ("json_under_file", instance(), ["--json", "{d}/inst.json/r.json"], ["--json", "not a directory"]),
]


@pytest.mark.parametrize("name, text, extra, needles", INSTANCES, ids=[i[0] for i in INSTANCES])
def test_bad_instance(tmp_path, capsys, name, text, extra, needles):
    f = tmp_path / "inst.json"
    f.write_text(text)
    extra = [a.replace("{d}", str(tmp_path)) for a in extra]
    rc, err = cli(["solve", "--instance", f, *extra], capsys)
    assert_clean_error(rc, err, 2, needles)
    if "--json" not in extra:
        assert str(f) in err


# --------------------------------------------------------------------------- configs
def smoke():
    with open(REPO / "config" / "smoke.yaml") as f:
        return yaml.safe_load(f)


REPLAY = {"name": "r", "trace": "azure_code", "workers": 4, "time_scales": [1.0]}
CONFIGS = [
    ("bfio_typo", lambda c: c["bfio"].update(admision="free"), "bfio.admision"),
    ("bfio_solver", lambda c: c["bfio"].update(solver="cplex"), "bfio.solver"),
    ("bfio_predictor", lambda c: c["bfio"].update(predictor="foo"), "bfio.predictor"),
    ("bfio_admission", lambda c: c["bfio"].update(admission="aging:-5"), "bfio.admission"),
    ("bfio_admission_zero", lambda c: c["bfio"].update(admission="aging:0"), "bfio.admission"),
    ("bfio_predictor_solver", lambda c: c["bfio"].update(predictor="empirical", solver="highs"), "bfio.solver"),
    ("bfio_on_error", lambda c: c["bfio"].update(on_solver_error="retry"), "bfio.on_solver_error"),
    ("bfio_time_limit", lambda c: c["bfio"].update(time_limit_s=0), "bfio.time_limit_s"),
    ("bfio_discount", lambda c: c["bfio"].update(discount=0), "bfio.discount"),
    ("bfio_discount_big", lambda c: c["bfio"].update(discount=1.5), "bfio.discount"),
    ("bfio_new_requests", lambda c: c["bfio"].update(new_requests="later"), "bfio.new_requests"),
    ("bfio_objective", lambda c: c["bfio"].update(objective="paper"), "bfio.objective"),
    ("bfio_noise", lambda c: c["bfio"].update(noise_low=-1), "bfio.noise_low"),
    ("horizon_sweep_missing", lambda c: c["figures"].update(horizon_sweep="nosuchexp"), "figures.horizon_sweep"),
    ("worker_sweep_missing", lambda c: c["figures"].update(worker_sweep="nosuchexp"), "figures.worker_sweep"),
    ("replay_beyond_rows", lambda c: c["online"].update(replay=[{**REPLAY, "requests": 9000}]),
     "online.replay.0.requests"),
    ("replay_no_arrivals", lambda c: c["online"].update(replay=[{**REPLAY, "trace": "burstgpt"}]),
     "online.replay.0.trace"),
    ("online_variant_option", lambda c: c["online"].update(
        variants={"v": {"policy": "bfio", "admision": "free"}}), "online.variants.v"),
    ("online_variant_policy", lambda c: c["online"].update(variants={"v": {"policy": "nope"}}), "online.variants.v"),
    ("online_central_unknown", lambda c: c["online"].update(
        poisson=[{"name": "p", "trace": "burstgpt", "requests": 100, "workers": 2}], central=["nope"]),
     "online.central.0"),
    ("online_instant_unsupported", lambda c: c["online"].update(
        poisson=[{"name": "p", "trace": "burstgpt", "requests": 100, "workers": 2}], instant=["fcfs"]),
     "online.instant.0"),
    ("online_saturation_row", lambda c: c["online"].update(
        poisson=[{"name": "p", "trace": "burstgpt", "requests": 100, "workers": 2}], saturation_row="nope"),
     "online.saturation_row"),
    ("predictor_study_predictor", lambda c: c.setdefault("predictor_study", {}).update(predictors=["foo"]),
     "predictor_study.predictors.0"),
    ("starvation_admission", lambda c: c.setdefault("starvation", {}).update(admissions=["aging:-5"]),
     "starvation.admissions.0"),
]


@pytest.mark.parametrize("name, mutate, key", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_bad_config(name, mutate, key):
    cfg = smoke()
    cfg.setdefault("online", {})
    mutate(cfg)
    with pytest.raises(ConfigError) as e:
        validate_config(copy.deepcopy(cfg), SCHEMA)
    assert f"config key '{key}" in str(e.value)


def test_table_size():
    n = len(TRACES) + len(ARGS) + len(INSTANCES) + len(CONFIGS) + 2
    assert n >= 60, n


# --------------------------------------------------------------------------- real processes
@pytest.mark.parametrize("args, needle", [
    (["--seed", "-1"], "--seed"),
    (["--json", "/proc/bfio-test/r.json"], "cannot write"),
    (["--series", "x.xlsx"], "unknown extension"),
])
def test_subprocess_exit_code(good_trace, args, needle):
    r = subprocess.run([sys.executable, "-m", "bfio.cli", "simulate", "--trace", str(good_trace), *SIM, *args],
                       capture_output=True, text=True, cwd=good_trace.parent)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("override, key", [
    ("bfio={'admision': 'free'}", "bfio.admision"),
    ("bfio={'solver': 'cplex'}", "bfio.solver"),
    ("figures={'horizon_sweep': 'nosuchexp'}", "figures.horizon_sweep"),
])
def test_dry_run_stops_with_key(tmp_path, override, key):
    """The Snakefile validates on load: a dry run already fails, naming the key."""
    import os

    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(tmp_path), "-n",
           "--configfile", str(REPO / "config" / "smoke.yaml"), "--config", override]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, "CI": "1"})
    assert proc.returncode != 0
    assert f"config key '{key}'" in proc.stdout + proc.stderr
