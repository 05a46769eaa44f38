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
    (["--policy", "nope"], "'nope' is not a policy"),
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


def test_help_states_every_policy_options_default():
    """Every declared policy option has a flag whose help states the declaration's
    default (issue 28: options declared once, the CLI derived from them)."""
    from bfio.policies import policy_options

    text = " ".join(run("simulate", "--help").stdout.split())
    for name, (option, policies) in policy_options().items():
        assert option.flag in text, name
        default = option.derived or str(option.default)
        assert f"default {default})" in text, (name, default)
        assert f"options of --policy {' | '.join(policies)}" in text


def test_online_arrivals_from_poisson_rate(data_dir, capsys):
    argv = ["simulate", "--trace", "burstgpt", "--requests", "500", "--workers", "2", "--slots", "8",
            "--admission-mode", "arrivals", "--arrival-rate", "20", "--json", "-", "--data-dir", str(data_dir)]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["entry"] == "arrivals" and out["wait_s_max"] >= 0
    # 500 requests at 20 req/s arrive over ~25 s: the run cannot end before the last arrival
    assert out["makespan_s"] > 0 and out["steps"] > 0


def test_online_arrivals_need_an_arrival_source(data_dir):
    r = run("simulate", "--trace", "burstgpt", "--requests", "5", "--workers", "2", "--admission-mode", "arrivals",
            "--data-dir", str(data_dir))
    assert r.returncode == 2 and "no arrival column" in r.stderr


# -- arrival modes, dispatch and trace formats -----------------------------------------


def write_trace(path, fmt, rows=40):
    import pandas as pd

    df = pd.DataFrame({"p": [10 + 7 * i for i in range(rows)], "d": [1 + i % 6 for i in range(rows)],
                       # timestamps out of file order, to check the replay sorts them
                       "t": [float((i * 7) % rows) * 0.01 for i in range(rows)]})
    if fmt == "csv":
        df.to_csv(path, index=False)
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in df.to_dict("records")))
    elif fmt == "json":
        path.write_text(json.dumps({"data": df.to_dict("records")}))
    else:
        df.to_parquet(path)
    return df


COLS = ["--prefill-col", "p", "--decode-col", "d", "--arrival-col", "t"]


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "json", "parquet"])
@pytest.mark.parametrize("mode", ["backlog", "poisson", "trace"])
def test_every_trace_format_in_every_arrival_mode(tmp_path, capsys, fmt, mode):
    p = tmp_path / f"t.{fmt}"
    write_trace(p, fmt)
    extra = {"backlog": [], "poisson": ["--arrival-rate", "200"], "trace": ["--time-scale", "0.5"]}[mode]
    per_req = tmp_path / "req.csv"
    argv = ["simulate", "--trace", str(p), *COLS, "--requests", "25", "--workers", "3", "--slots", "2",
            "--policy", "vllm_dp", "--dispatch", "instant", "--arrival-mode", mode, *extra, "--json", "-",
            "--per-request", str(per_req)]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["arrival_mode"] == mode and out["dispatch"] == "instant" and out["requests"] == 25
    assert out["entry"] == ("backlog" if mode == "backlog" else "arrivals")
    for k in ("queue_wait_s_p50", "tpot_s_p90", "e2e_s_p99", "avg_imbalance_run", "throughput_run", "energy_j_run"):
        assert out[k] is not None and out[k] >= 0
    import pandas as pd

    req = pd.read_csv(per_req)
    assert (req.worker == req.queue_worker).all()
    if mode == "trace":
        # the trace's own rows at their scaled timestamps, in time order
        assert (req.arrival_s.diff().dropna() >= 0).all() and req.arrival_s.iloc[0] == 0
        assert set(req.arrival_s.round(9)) <= {round(0.5 * 0.01 * k, 9) for k in range(40)}


def test_trace_mode_time_scale_changes_the_arrivals(tmp_path, capsys):
    p = tmp_path / "t.csv"
    write_trace(p, "csv")
    spans = []
    for scale in ("1", "0.25"):
        dest = tmp_path / f"r{scale}.csv"
        assert main(["simulate", "--trace", str(p), *COLS, "--requests", "40", "--workers", "2", "--slots", "4",
                     "--arrival-mode", "trace", "--time-scale", scale, "--json", str(tmp_path / "o.json"),
                     "--per-request", str(dest)]) == 0
        import pandas as pd

        spans.append(pd.read_csv(dest).arrival_s.max())
    assert spans[1] == pytest.approx(spans[0] * 0.25)


def test_deprecated_admission_mode_still_works(data_dir, capsys):
    argv = ["simulate", "--trace", "burstgpt", "--requests", "200", "--workers", "2", "--slots", "8",
            "--admission-mode", "arrivals", "--arrival-rate", "50", "--json", "-", "--data-dir", str(data_dir)]
    assert main(argv) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["arrival_mode"] == "poisson"
    assert "deprecated" in cap.err and "--arrival-mode poisson" in cap.err


@pytest.mark.parametrize("args, match", [
    (["--arrival-mode", "poisson"], "needs --arrival-rate"),
    (["--arrival-rate", "5"], "--arrival-rate: only valid with --arrival-mode poisson"),
    (["--arrival-mode", "poisson", "--arrival-rate", "0"], "--arrival-rate: expected a finite number > 0"),
    (["--arrival-mode", "poisson", "--arrival-rate", "nan"], "--arrival-rate: expected a finite number > 0"),
    (["--arrival-mode", "trace", "--time-scale", "-1"], "--time-scale: expected a finite number > 0"),
    (["--arrival-mode", "poisson", "--arrival-rate", "5", "--time-scale", "2"], "--time-scale: only valid"),
    (["--arrival-mode", "sometimes"], "invalid choice: 'sometimes'"),
    (["--dispatch", "eventually"], "invalid choice: 'eventually'"),
    (["--dispatch", "instant"], "--dispatch: policy 'fcfs' does not support --dispatch instant"),
    (["--arrival-mode", "trace", "--requests", "41"], "--requests: --arrival-mode trace replays"),
    (["--admission-mode", "backlog", "--arrival-mode", "trace"], "contradicts --arrival-mode trace"),
])
def test_bad_arrival_and_dispatch_flags(tmp_path, args, match):
    p = tmp_path / "t.csv"
    write_trace(p, "csv")
    argv = ["simulate", "--trace", str(p), *COLS, "--workers", "2"]
    if "--requests" not in args:
        argv += ["--requests", "5"]
    r = run(*argv, *args)
    assert r.returncode == 2 and match in r.stderr, r.stderr


def test_trace_mode_needs_an_arrival_column(tmp_path):
    p = tmp_path / "t.csv"
    write_trace(p, "csv")
    r = run("simulate", "--trace", str(p), "--prefill-col", "p", "--decode-col", "d", "--requests", "5",
            "--workers", "2", "--arrival-mode", "trace")
    assert r.returncode == 2 and "has no arrival column" in r.stderr


def test_help_documents_online_options():
    r = run("simulate", "--help")
    for opt in ["--arrival-mode", "--arrival-rate", "--time-scale", "--dispatch", "vllm_dp", "least_tokens"]:
        assert opt in r.stdout


def test_traces_prints_a_header_row(tmp_path, capsys):
    assert main(["traces", "--data-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["trace", "status", "source", "path"]
    assert len(lines) > 1 and all(line.split()[1] == "missing" for line in lines[1:])


# --------------------------------------------------------------------------- README quick start

def _readme_quick_start_calls():
    import re
    import shlex
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = re.search(r"^## Quick start\n(.*?)(?=^## )", text, flags=re.S | re.M).group(1)
    block = re.search(r"```bash\n(.*?)```", section, flags=re.S).group(1).replace("\\\n", " ")
    calls = [shlex.split(line.split("#")[0])[1:] for line in block.splitlines()
             if line.strip().startswith("bfio simulate")]
    return text, calls


def test_readme_quick_start_uses_files_it_creates_and_the_tables_admission():
    from bfio.cli import build_parser
    from bfio.runs.paper import PAPER_BFIO_OPTIONS, TABLE_SETTINGS

    text, calls = _readme_quick_start_calls()
    assert calls
    parser = build_parser()
    for call in calls:
        args = parser.parse_args(call)
        if args.trace.endswith((".csv", ".jsonl", ".json", ".parquet")):
            # a file the README has the reader create (Bring your own trace)
            assert f"cat > {args.trace} <<" in text, args.trace
        t2 = TABLE_SETTINGS["table2"]
        if args.policy == "bfio" and args.trace == t2["trace"] and args.workers == t2["workers"]:
            # the Table 2 row: the tables' admission and placement, not the library defaults
            assert args.admission == PAPER_BFIO_OPTIONS["admission"]
            assert args.placement == PAPER_BFIO_OPTIONS["placement"]


def test_simulate_with_prefill_and_prefix_caches_reports_ttft_and_hits(data_dir, capsys):
    """The prefill flags turn the model on (issue 32): the JSON carries the run's
    prefill parameters, TTFT and the cache hit rate, the text summary a prefill line;
    without the flags neither appears."""
    base = ["simulate", "--trace", "mooncake", "--requests", "300", "--workers", "4", "--policy", "cache_first",
            "--arrival-mode", "trace", "--dispatch", "instant", "--data-dir", str(data_dir)]
    assert main(base + ["--prefill-chunk-tokens", "1024", "--prefix-cache-blocks", "500", "--json", "-"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ttft_s_p99"] >= out["ttft_s_p50"] > 0 and 0 < out["cache_hit_rate"] < 1
    assert main(base + ["--prefill-chunk-tokens", "1024", "--prefix-cache-blocks", "500", "--kv-tokens", "150000",
                        "--json", "-"]) == 0
    bounded = json.loads(capsys.readouterr().out)
    assert bounded["prefill"]["kv_tokens"] == 150_000 and out["prefill"]["kv_tokens"] is None
    assert bounded["ttft_s_p99"] > out["ttft_s_p99"]  # prompts wait for KV memory
    assert main(base + ["--prefill-chunk-tokens", "1024", "--prefix-cache-blocks", "500"]) == 0
    text = capsys.readouterr().out
    assert "prefill: TTFT p50/p99=" in text and "prefix-cache hit rate=" in text
    assert main([a if a != "cache_first" else "vllm_dp" for a in base]) == 0  # cache_first needs the model
    assert "prefill:" not in capsys.readouterr().out


def test_simulate_with_preemption_reports_the_evictions(data_dir, capsys):
    """Issue 44: --preemption with --kv-tokens turns the model's preemption on; the
    run records it in its prefill parameters and reports evictions and recomputed
    tokens; without the flag neither appears."""
    base = ["simulate", "--trace", "burstgpt", "--requests", "300", "--workers", "2", "--policy", "vllm_dp",
            "--dispatch", "instant", "--arrival-mode", "poisson", "--arrival-rate", "100", "--kv-tokens", "12000",
            "--data-dir", str(data_dir)]
    for rule in ("vllm", "sglang"):
        assert main(base + ["--preemption", rule, "--json", "-"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["prefill"]["preemption"] == rule and out["preemptions"] > 0 and out["recomputed_tokens"] > 0
        assert main(base + ["--preemption", rule]) == 0
        assert f"KV preemption ({rule}): " in capsys.readouterr().out
    assert main(base + ["--json", "-"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "preemption" not in out["prefill"] and "preemptions" not in out


def test_simulate_errors_name_the_flags_not_the_library(data_dir, capsys):
    """Issue 42: a run the library refuses is reported in the command line's words:
    the flags that would fix it, not simulate()'s arguments or PrefillModel's fields."""
    base = ["simulate", "--trace", "burstgpt", "--requests", "200", "--workers", "4", "--data-dir", str(data_dir)]
    assert main(base + ["--policy", "cache_first", "--dispatch", "instant", "--arrival-mode", "poisson",
                        "--arrival-rate", "100"]) == 2
    err = capsys.readouterr().err
    assert "--prefill-chunk-tokens" in err and "simulate(prefill=" not in err and "PrefillModel" not in err, err
    assert main(base + ["--policy", "fcfs", "--preemption", "vllm"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bfio: error: --preemption: ") and "--kv-tokens N" in err, err
    assert "prefill.kv_tokens" not in err, err
    assert main(base + ["--policy", "fcfs", "--kv-tokens", "10", "--preemption", "vllm"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bfio: error: --kv-tokens: request "), err


def test_cli_words_rewrites_library_names_only():
    from bfio.cli.library_words import cli_words
    from bfio.policies.base import REQUIREMENTS

    assert cli_words("prefill.chunk_tokens: must be an integer >= 1") == "--prefill-chunk-tokens: must be an integer >= 1"
    assert cli_words(f"policy 'x' needs {REQUIREMENTS['blocks']}").endswith("(a trace with a hash column, such as mooncake)")
    assert cli_words("dispatch: policy 'fcfs' does not support dispatch='instant'") == \
        "--dispatch: policy 'fcfs' does not support --dispatch instant"
    assert cli_words("trace file x.csv: row 3: bad") == "trace file x.csv: row 3: bad"


def test_engine_routers_default_to_instant_dispatch_and_central_when_asked(tmp_path):
    """Issue 42: ``--policy vllm_dp`` (an engine's router) runs bound at arrival as the
    engine runs it; ``--dispatch central`` still runs it from the pool; the project's
    own rules keep the paper's central pool; an instant-only rule needs no flag."""
    import json

    from bfio.cli import main
    from bfio.cli.simulate import instant_by_default

    assert {"vllm_dp", "vllm_token_lb", "sglang_total_tokens"} <= set(instant_by_default())
    assert not {"fcfs", "jsq_tokens", "bfio", "round_robin"} & set(instant_by_default())
    trace = tmp_path / "t.csv"
    trace.write_text("input_length,output_length\n" + "".join(f"{10 + 37 * i % 500},{1 + i % 9}\n" for i in range(60)))
    base = ["simulate", "--trace", str(trace), "--requests", "200", "--workers", "3", "--slots", "2"]
    out = tmp_path / "r.json"
    for policy, extra, want in (("vllm_dp", [], "instant"), ("vllm_dp", ["--dispatch", "central"], "central"),
                                ("sglang_total_tokens", [], "instant"), ("jsq_tokens", [], "central"),
                                ("bfio", [], "central"), ("atom_least_requests", [], "instant")):
        assert main(base + ["--policy", policy, *extra, "--json", str(out)]) == 0, policy
        assert json.loads(out.read_text())["dispatch"] == want, (policy, extra)
