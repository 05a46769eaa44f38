"""The ``bfio`` command line."""

import json
import subprocess
import sys

import pytest

from bfio.cli import main


def run(*args):
    return subprocess.run([sys.executable, "-m", "bfio.cli", *args], capture_output=True, text=True)


REQUIRED = {"avg_imbalance", "throughput", "tpot", "energy_j", "avg_imbalance_pre", "energy_j_pre",
            "steps", "window_steps", "wall_s"}


def test_simulate_json_to_stdout(data_dir, capsys):
    rc = main(["simulate", "--trace", "burstgpt", "--requests", "2000", "--seed", "1", "--workers", "4",
               "--slots", "8", "--policy", "jsq_tokens", "--json", "-", "--data-dir", str(data_dir)])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert REQUIRED <= out.keys()
    assert out["policy"] == "jsq_tokens" and out["requests"] == 2000 and out["steps"] >= out["window_steps"]
    assert out["wait_steps_p50"] >= 0


def test_simulate_generic_csv_with_columns(tmp_path, capsys):
    p = tmp_path / "t.csv"
    p.write_text("a,b\n" + "".join(f"{10 + i},{1 + i % 5}\n" for i in range(40)))
    dest = tmp_path / "out" / "r.json"
    series = tmp_path / "series.csv"
    assert main(["simulate", "--trace", str(p), "--prefill-col", "a", "--decode-col", "b", "--requests", "50",
                 "--workers", "2", "--slots", "3", "--json", str(dest), "--series", str(series)]) == 0
    out = json.loads(dest.read_text())
    assert out["trace"] == "t" and REQUIRED <= out.keys()
    assert series.read_text().startswith("step,clock,dt")


def test_bad_trace_gives_clear_error_and_no_output(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("a,b\n5,1\n6,-1\n")
    dest = tmp_path / "r.json"
    r = run("simulate", "--trace", str(p), "--prefill-col", "a", "--decode-col", "b", "--requests", "5",
            "--workers", "2", "--json", str(dest))
    assert r.returncode == 2
    assert "row 1, field 'b'" in r.stderr and "not positive" in r.stderr
    assert not dest.exists()


@pytest.mark.parametrize("args, match", [
    (["--requests", "0"], "positive integer"),
    (["--policy", "nope"], "unknown policy 'nope'"),
    (["--horizon", "5"], "--horizon: only valid with --policy bfio"),
])
def test_bad_options(tmp_path, args, match):
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"data": [{"input_length": 5, "output_length": 2}]}))
    base = {"--requests": "5", "--workers": "2"}
    argv = ["simulate", "--trace", str(p)]
    for k, v in base.items():
        if k not in args:
            argv += [k, v]
    r = run(*argv, *args)
    assert r.returncode == 2 and match in r.stderr


def test_help_documents_every_option():
    r = run("simulate", "--help")
    for opt in ["--trace", "--requests", "--seed", "--workers", "--slots", "--policy", "--json", "--prefill-col",
                "--decode-col", "--arrival-col", "--horizon", "--solver", "--predictor", "--admission"]:
        assert opt in r.stdout
    assert "simulate" in run("--help").stdout


def test_online_arrivals_from_poisson_rate(data_dir, capsys):
    argv = ["simulate", "--trace", "burstgpt", "--requests", "500", "--workers", "2", "--slots", "8",
            "--admission-mode", "arrivals", "--arrival-rate", "20", "--json", "-", "--data-dir", str(data_dir)]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["admission_mode"] == "arrivals" and out["wait_s_max"] >= 0
    # 500 requests at 20 req/s arrive over ~25 s: the run cannot end before the last arrival
    assert out["makespan_s"] > 0 and out["steps"] > 0


def test_online_arrivals_need_an_arrival_source(data_dir):
    r = run("simulate", "--trace", "burstgpt", "--requests", "5", "--workers", "2", "--admission-mode", "arrivals",
            "--data-dir", str(data_dir))
    assert r.returncode == 2 and "no arrival column" in r.stderr
