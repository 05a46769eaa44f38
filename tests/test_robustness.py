"""Regression tests of issue 12, items 3-7 (extreme token counts, tiny windows,
config checks at load time, user errors without tracebacks, atomic outputs)
and the streaming JSONL reader."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from bfio.cli import main
from bfio.ground.errors import BfioError, ConfigError, TraceError
from bfio.pipeline.config import validate_config
from bfio.ground.results_io import collect_runs, write_json
from bfio.ground.limits import MAX_DECODE, MAX_PREFILL, MAX_SLOTS, MIN_WINDOW_STEPS
from bfio.traces import load_trace
from bfio.workloads.workload import Workload

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


# -- item 3: documented bounds, no silent overflow -------------------------------------------
def test_bounds_keep_loads_exact():
    # G * B * (max prefill + max decode) stays within float64's exact integers
    assert MAX_SLOTS * (MAX_PREFILL + MAX_DECODE) <= 2 ** 53


@pytest.mark.parametrize("prefill, decode, field", [
    ([4 * 10 ** 18], [1], "prefill"),
    ([4e18], [1], "prefill"),
    ([5], [10 ** 12], "decode"),
    ([1e30], [1], "prefill"),
    ([MAX_PREFILL + 1], [1], "prefill"),
    ([5], [MAX_DECODE + 1], "decode"),
    ([2.5], [1], "prefill"),
])
def test_workload_rejects_out_of_range_lengths(prefill, decode, field):
    with pytest.raises(ConfigError, match=rf"^{field}: entry 0"):
        Workload(np.asarray(prefill), np.asarray(decode))


def test_one_worker_at_the_bound_has_zero_imbalance():
    from bfio.simulator import simulate

    wl = Workload(np.array([MAX_PREFILL, MAX_PREFILL - 1]), np.array([3, 2]))
    r = simulate(wl, 1, 2, "fcfs")
    assert r.metrics["avg_imbalance_run"] == 0
    assert (r.series["imbalance_pre"] == 0).all()
    assert r.series["max_load_pre"].iloc[0] == 2 * MAX_PREFILL - 1  # exact, no wrap-around


def test_simulator_rejects_cluster_beyond_bound():
    from bfio.simulator import simulate

    with pytest.raises(ConfigError, match="workers x slots"):
        simulate(Workload(np.array([5]), np.array([1])), MAX_SLOTS, 2, "fcfs")


# -- item 4: tiny or empty measurement windows are flagged ------------------------------------
@pytest.fixture
def small_trace(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("a,b\n" + "".join(f"{10 + i},{1 + i % 7}\n" for i in range(50)))
    return f


@pytest.mark.parametrize("workers, window", [(1000, "empty"), (100, "only")])
def test_tiny_window_warns(small_trace, tmp_path, capsys, workers, window):
    out = tmp_path / "r.json"
    rc = main(["simulate", "--trace", str(small_trace), "--prefill-col", "a", "--decode-col", "b",
               "--requests", "500", "--workers", str(workers), "--slots", "8", "--json", str(out)])
    assert rc == 0
    res = json.loads(out.read_text())
    assert res["window_steps"] < MIN_WINDOW_STEPS
    assert any(window in w and "avg_imbalance_run" in w for w in res["warnings"])
    assert any("never full" in w for w in res["warnings"])
    err = capsys.readouterr().err
    assert "bfio: warning: measurement window" in err and "throughput_run" in err


def test_sound_run_has_no_warnings(small_trace, tmp_path):
    out = tmp_path / "r.json"
    assert main(["simulate", "--trace", str(small_trace), "--prefill-col", "a", "--decode-col", "b",
                 "--requests", "400", "--workers", "2", "--slots", "4", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["warnings"] == []


# -- item 5: config checked when the Snakefile loads ------------------------------------------
def test_schema_enums_come_from_registries():
    from bfio.pipeline.config import _registry_enums
    from bfio.predictors import PREDICTORS
    from bfio.solvers import SOLVERS

    with open(SCHEMA) as f:
        schema = _registry_enums(yaml.safe_load(f))
    bfio = schema["properties"]["bfio"]
    assert bfio["properties"]["solver"]["enum"] == list(SOLVERS)
    assert bfio["properties"]["predictor"]["enum"] == list(PREDICTORS)
    assert bfio["additionalProperties"] is False


def test_bfio_keys_of_other_branches_are_allowed_by_the_schema():
    # discount / new_requests / objective: every declared BF-IO option is a key of the
    # schema's bfio section as validation sees it (derived, bfio.pipeline.config._registry_enums)
    from bfio.pipeline.config import _registry_enums

    with open(SCHEMA) as f:
        props = _registry_enums(yaml.safe_load(f))["properties"]["bfio"]["properties"]
    assert {"discount", "new_requests", "objective", "placement", "shard_workers"} <= set(props)


def test_default_figure_experiment_may_be_absent():
    # the default figures.horizon_sweep names an experiment a small config may not have: no figure, no error
    cfg = validate_config({"experiments": {"x": {"trace": "longbench", "requests": 10, "workers": [2],
                                                 "baselines": ["fcfs"]}}}, SCHEMA)
    assert cfg["figures"]["horizon_sweep"] == "horizon_sweep"


def test_replay_job_refuses_more_requests_than_rows():
    from bfio.runs.run import ArrivalSpec, RunSpec
    from bfio.runs.runner import build_workload

    frame = pd.DataFrame({"prefill_tokens": [5, 6, 7], "decode_tokens": [1, 2, 3], "arrival_s": [0.0, 1.0, 2.0]})
    run = RunSpec.make("t", 4, 2, 2, "fcfs", 1, arrival=ArrivalSpec("trace", time_scale=1.0))
    with pytest.raises(ConfigError, match="3 rows"):
        build_workload(run, frame)


def test_online_trace_rate_without_arrivals_names_the_problem():
    from bfio.studies.online import trace_rate

    with pytest.raises(ConfigError, match="no arrival"):
        trace_rate(pd.DataFrame({"prefill_tokens": [5], "decode_tokens": [1]}))


# -- item 6: outputs checked before the simulation runs ----------------------------------------
def test_json_destination_checked_before_simulating(small_trace, tmp_path, monkeypatch, capsys):
    import bfio.runs.runner

    def boom(*a, **k):
        raise AssertionError("simulated although the output cannot be written")

    monkeypatch.setattr(bfio.runs.runner, "simulate", boom)
    rc = main(["simulate", "--trace", str(small_trace), "--prefill-col", "a", "--decode-col", "b",
               "--requests", "10", "--workers", "2", "--json", str(tmp_path)])
    assert rc == 2 and "is a directory" in capsys.readouterr().err


def test_mixed_offsets_all_aware_compare_in_utc(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("a,b,t\n5,1,2024-03-31T01:59:00+00:00\n6,1,2024-03-31T04:00:00+02:00\n")
    t = load_trace(str(f), prefill_col="a", decode_col="b", arrival_col="t")
    assert t.arrival_s.tolist() == [0.0, 60.0]


# -- item 7: atomic outputs, readable errors on truncated files -------------------------------
def test_truncated_summary_error_names_the_file(tmp_path):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    write_json({"a": 1}, good)
    bad.write_text('{"a": 1, "b"')
    with pytest.raises(BfioError, match=str(bad)):
        collect_runs([good, bad])


def test_truncated_trace_table_error_names_the_file(tmp_path):
    from bfio.runs.experiments import read_trace_table

    f = tmp_path / "t.parquet"
    pd.DataFrame({"prefill_tokens": [5], "decode_tokens": [1]}).to_parquet(f)
    f.write_bytes(f.read_bytes()[:20])
    with pytest.raises(TraceError, match=str(f)):
        read_trace_table(f)


def test_write_json_is_atomic(tmp_path):
    dest = tmp_path / "summary.json"
    write_json({"a": 1}, dest)
    with pytest.raises(TypeError):
        write_json({"a": object()}, dest)  # fails while serializing
    assert json.loads(dest.read_text()) == {"a": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]


def test_series_extension_checked(small_trace, tmp_path, capsys):
    rc = main(["simulate", "--trace", str(small_trace), "--prefill-col", "a", "--decode-col", "b",
               "--requests", "10", "--workers", "2", "--series", str(tmp_path / "s.xlsx")])
    assert rc == 2 and "unknown extension '.xlsx'" in capsys.readouterr().err
    assert not (tmp_path / "s.xlsx").exists()


@pytest.mark.parametrize("name, text", [
    ("d.csv", "a,b,a\n5,1,6\n"),
    ("d.jsonl", '{"a": 5, "b": 1, "a": 6}\n'),
    ("d.json", '[{"a": 5, "b": 1, "a": 6}]'),
])
def test_duplicate_column_rejected(tmp_path, name, text):
    f = tmp_path / name
    f.write_text(text)
    with pytest.raises(TraceError, match="field 'a'.*twice"):
        load_trace(str(f), prefill_col="a", decode_col="b")


# -- JSONL: streamed, only the needed columns kept --------------------------------------------
def test_jsonl_streaming_matches_records(tmp_path):
    f = tmp_path / "t.jsonl"
    rows = [{"id": f"r{i}", "meta": {"x": [1, 2]}, "output_length": 1 + i % 4, "input_length": 10 + i,
             "ts": 0.5 * i} for i in range(30)]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    t = load_trace(str(f), arrival_col="ts")
    ref = pd.DataFrame.from_records(rows)
    assert t.prefill.tolist() == ref["input_length"].tolist()
    assert t.decode.tolist() == ref["output_length"].tolist()
    assert t.arrival_s.tolist() == ref["ts"].tolist()


def test_jsonl_missing_column_lists_available(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text('{"in": 5, "output_length": 1}\n')
    with pytest.raises(TraceError, match=r"field 'input_length'.*available: in, output_length"):
        load_trace(str(f))


# -- issue 26, items 1, 2, 12, 24: outputs never replace what they should not -----------------
def _sim(trace, *outputs):
    return main(["simulate", "--trace", str(trace), "--prefill-col", "a", "--decode-col", "b",
                 "--requests", "40", "--workers", "2", "--slots", "4", *outputs])


def _device(path, minor):
    """A character device like /dev/null (minor 3) or /dev/full (minor 7) at ``path``."""
    import os
    import stat

    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    except (PermissionError, OSError) as e:
        pytest.skip(f"cannot create a device node here ({e})")
    return path


def _is_char_device(path) -> bool:
    import os
    import stat

    return stat.S_ISCHR(os.lstat(path).st_mode)


@pytest.mark.parametrize("option, name", [("--json", "null"), ("--series", "null.csv"), ("--per-request", "n.pq")])
def test_device_output_is_written_in_place(small_trace, tmp_path, option, name):
    dev = _device(tmp_path / name, 3)
    assert _sim(small_trace, option, str(dev)) == 0
    assert _is_char_device(dev)  # not replaced by a regular file
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, "t.csv"])


def test_full_device_fails_and_stays_a_device(small_trace, tmp_path, capsys):
    dev = _device(tmp_path / "full", 7)
    assert _sim(small_trace, "--json", str(dev)) == 2
    assert "--json" in capsys.readouterr().err
    assert _is_char_device(dev)


def test_symlink_output_writes_its_target(small_trace, tmp_path):
    target, link = tmp_path / "target.json", tmp_path / "link.json"
    target.write_text("old")
    link.symlink_to(target)
    assert _sim(small_trace, "--json", str(link)) == 0
    assert link.is_symlink() and json.loads(target.read_text())["workers"] == 2


def test_symlink_loop_is_named(small_trace, tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.symlink_to(b)
    b.symlink_to(a)
    assert _sim(small_trace, "--json", str(a)) == 2
    assert "symlink loop" in capsys.readouterr().err


def test_named_pipe_reader_gets_the_output(small_trace, tmp_path):
    import os
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    assert _sim(small_trace, "--json", str(fifo)) == 0
    reader.join(timeout=30)
    assert json.loads(got[0])["workers"] == 2
    assert os.path.exists(fifo) and not os.path.isfile(fifo)


@pytest.mark.parametrize("first, second", [("--series", "--json"), ("--series", "--per-request")])
def test_two_outputs_on_one_path_refused(small_trace, tmp_path, capsys, first, second):
    same = tmp_path / "same.csv"
    assert _sim(small_trace, first, str(same), second, str(same)) == 2
    assert "the same file as" in capsys.readouterr().err
    assert not same.exists()


def test_failed_output_leaves_no_other_output(small_trace, tmp_path, capsys):
    ok, full = tmp_path / "ok.csv", _device(tmp_path / "r.csv", 7)
    assert _sim(small_trace, "--series", str(ok), "--per-request", str(full), "--json", str(tmp_path / "s.json")) == 2
    assert "--per-request" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv", "t.csv"]


def test_outputs_follow_the_umask(small_trace, tmp_path):
    import os

    old = os.umask(0o022)
    try:
        assert _sim(small_trace, "--json", str(tmp_path / "s.json"), "--series", str(tmp_path / "s.csv")) == 0
    finally:
        os.umask(old)
    assert {oct((tmp_path / n).stat().st_mode & 0o777) for n in ("s.json", "s.csv")} == {"0o644"}


@pytest.mark.parametrize("option", ["--json", "--series"])
def test_empty_output_path_refused(small_trace, capsys, option):
    assert _sim(small_trace, option, "") == 2
    assert "empty path" in capsys.readouterr().err


# -- issue 26, item 11: bfio solve refuses the time limits bfio simulate refuses ----------------
@pytest.mark.parametrize("value", ["-5", "nan", "0", "inf"])
def test_solve_refuses_a_bad_time_limit(tmp_path, capsys, value):
    from bfio.solvers.random_instances import random_instance
    from bfio.solvers.instance import save_instance

    inst = random_instance(np.random.default_rng(0), workers=3, waiting=5, horizon=2)
    path = save_instance(inst, tmp_path / "inst.json")
    with pytest.raises(SystemExit) as e:
        main(["solve", "--instance", str(path), "--time-limit-s", value, "--json", str(tmp_path / "out.json")])
    assert e.value.code == 2 and "--time-limit-s" in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()


# -- issue 26, items 5, 6, 7, 9, 10, 17, 19, 23 -------------------------------------------------
def _smoke_config():
    with open(REPO / "config" / "smoke.yaml") as f:
        return yaml.safe_load(f)


@pytest.mark.parametrize("name", ["../../../escaped", "with space", "a/b", "x" * 80])
def test_experiment_names_are_identifiers(name):
    cfg = _smoke_config()
    cfg["experiments"][name] = cfg["experiments"]["table1"]
    with pytest.raises(ConfigError, match="experiments"):
        validate_config(cfg, SCHEMA)


def test_run_name_length_is_bounded(tmp_path):
    from bfio.pipeline.config import named_run

    with pytest.raises(ConfigError, match="run_name.*64"):
        named_run({}, {"run_name": "a" * 300}, cwd=tmp_path)


def test_jsonl_repeated_key_with_space_before_colon(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text('{"a" : 5, "a": 6, "b": 1}\n')  # two '":' tokens, two distinct keys
    with pytest.raises(TraceError, match="twice"):
        load_trace(str(f), prefill_col="a", decode_col="b")


@pytest.mark.parametrize("patch, needle", [
    ({"discout": 0.5}, "discout"),
    ({"waiting": {"prefill": [3], "lifetimes": [2]}}, "waiting.lifetimes"),
])
def test_instance_format_is_closed(tmp_path, patch, needle):
    from bfio.solvers.random_instances import random_instance
    from bfio.solvers.instance import InstanceError, load_instance, save_instance

    inst = random_instance(np.random.default_rng(0), workers=2, waiting=1, horizon=1)
    data = json.loads(save_instance(inst, tmp_path / "i.json").read_text())
    data.update(patch)
    (tmp_path / "i.json").write_text(json.dumps(data))
    with pytest.raises(InstanceError, match=needle.replace(".", r"\.")):
        load_instance(tmp_path / "i.json")


def test_instance_repeated_key_refused(tmp_path):
    from bfio.solvers.random_instances import random_instance
    from bfio.solvers.instance import InstanceError, load_instance, save_instance

    inst = random_instance(np.random.default_rng(0), workers=2, waiting=1, horizon=1)
    text = save_instance(inst, tmp_path / "i.json").read_text()
    (tmp_path / "i.json").write_text(text.replace('{"format"', '{"discount": 0.5, "discount": 0.9, "format"', 1))
    with pytest.raises(InstanceError, match="twice"):
        load_instance(tmp_path / "i.json")


def test_noise_high_is_bounded():
    from bfio.policies import make_policy

    with pytest.raises(ConfigError, match="noise_high"):
        make_policy("bfio", predictor="noisy", noise_high=1e30)


@pytest.mark.parametrize("extra", [["--noise-low", "0.3"], ["--noise-high", "0.3", "--predictor", "oracle"],
                                   ["--shard-workers", "4", "--solver", "highs"],
                                   ["--time-limit-s", "5"]])
def test_options_that_do_not_apply_are_refused(small_trace, capsys, extra):
    rc = main(["simulate", "--trace", str(small_trace), "--prefill-col", "a", "--decode-col", "b",
               "--requests", "10", "--workers", "2", "--policy", "bfio", *extra])
    assert rc == 2 and "only valid with" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["99999999999999999999", str(2 ** 27 + 1)])
def test_huge_request_counts_refused_up_front(small_trace, capsys, value):
    with pytest.raises(SystemExit) as e:
        main(["simulate", "--trace", str(small_trace), "--prefill-col", "a", "--decode-col", "b",
              "--requests", value, "--workers", "2"])
    assert e.value.code == 2 and "bfio.ground.limits" in capsys.readouterr().err


def test_huge_request_count_in_config_fails_when_loading():
    cfg = _smoke_config()
    cfg["experiments"]["table1"]["requests"] = 10 ** 13
    with pytest.raises(ConfigError, match=r"experiments\.table1\.requests"):
        validate_config(cfg, SCHEMA)


def test_solve_accepts_the_fallback_its_messages_suggest(tmp_path):
    from bfio.solvers.random_instances import random_instance
    from bfio.solvers.instance import save_instance

    path = save_instance(random_instance(np.random.default_rng(0), workers=2, waiting=3, horizon=1),
                         tmp_path / "i.json")
    out = tmp_path / "o.json"
    assert main(["solve", "--instance", str(path), "--solver", "fast", "--on-solver-error", "fallback",
                 "--json", str(out)]) == 0
    assert json.loads(out.read_text())["admissible"] >= 1


# -- issue 26 item 18, issue 31 item 5: Ctrl-C, the data directory --------------------------------
def test_ctrl_c_is_one_line_without_traceback(small_trace, monkeypatch, capsys):
    import bfio.cli.simulate

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(bfio.cli.simulate, "cmd_simulate", interrupted)
    assert main(["simulate", "--trace", str(small_trace), "--requests", "5", "--workers", "1"]) == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "Traceback" not in err


def test_default_data_dir_is_beside_the_checkout_not_searched_upwards(tmp_path, monkeypatch):
    from bfio.traces.registry import default_data_dir

    monkeypatch.delenv("BFIO_DATA_DIR", raising=False)
    decoy = tmp_path / "a" / "b"
    decoy.mkdir(parents=True)
    (tmp_path / "shared" / "data").mkdir(parents=True)  # what an upward search from a/b would find
    monkeypatch.chdir(decoy)
    assert default_data_dir() == REPO.parent / "shared" / "data"


# -- issue 31 item 5: numbers and lists from the command line ------------------------------------
def test_command_line_numbers_in_lists_are_numbers():
    cfg = _smoke_config()
    cfg["seeds"] = ["42", "7"]  # snakemake --config seeds=[42,7]
    cfg["slots"] = "16"
    out = validate_config(cfg, SCHEMA)
    assert out["seeds"] == [42, 7] and out["slots"] == 16


@pytest.mark.parametrize("key, value", [("seeds", ["forty"]), ("slots", "many"), ("seeds", ["4.5"])])
def test_command_line_text_that_is_no_number_is_still_refused(key, value):
    cfg = _smoke_config()
    cfg[key] = value
    with pytest.raises(ConfigError, match=key):
        validate_config(cfg, SCHEMA)


# -- issue 26, items 3 and 22: one date format per column, seconds as text -----------------------
def _arrivals(tmp_path, values):
    f = tmp_path / "d.csv"
    f.write_text("a,b,t\n" + "".join(f"5,1,{v}\n" for v in values))
    return load_trace(str(f), prefill_col="a", decode_col="b", arrival_col="t").arrival_s.tolist()


def test_day_month_dates_read_one_way_per_column(tmp_path):
    # 13/01 can only be day first, so 12/01 is 12 January too (not 1 December)
    assert _arrivals(tmp_path, ["12/01/2024 10:00", "13/01/2024 10:00"]) == [0.0, 86400.0]


def test_ambiguous_day_month_column_is_refused_naming_the_row(tmp_path):
    with pytest.raises(TraceError, match=r"row 1.*ambiguous.*ISO 8601"):
        _arrivals(tmp_path, ["01/01/2024 10:00", "12/01/2024 10:00", "11/01/2024 10:00"])


def test_iso_dates_are_not_read_day_first(tmp_path):
    assert _arrivals(tmp_path, ["2024-01-12T10:00:00", "2024-01-12T10:00:05"]) == [0.0, 5.0]


def test_seconds_written_as_text_are_seconds(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text('{"a": 5, "b": 1, "t": "0.5"}\n{"a": 5, "b": 1, "t": "1.5"}\n')
    assert load_trace(str(f), prefill_col="a", decode_col="b", arrival_col="t").arrival_s.tolist() == [0.5, 1.5]


@pytest.mark.parametrize("second, needle", [
    ("true", r"row 1.*True is neither seconds nor a timestamp"),  # was read as 1 s
    ('"abc"', r"row 1.*'abc' is neither seconds nor a timestamp"),
    ('"2024-01-01T00:00:00"', r"row 1.*is a timestamp while row 0 is seconds"),  # was 1.7e9 s after row 0
])
def test_arrival_column_of_one_kind_blames_the_row(tmp_path, second, needle):
    f = tmp_path / "t.jsonl"
    f.write_text(f'{{"a": 5, "b": 1, "t": 0.5}}\n{{"a": 5, "b": 1, "t": {second}}}\n')
    with pytest.raises(TraceError, match=needle):
        load_trace(str(f), prefill_col="a", decode_col="b", arrival_col="t")


def test_parquet_decimal_token_counts_are_read(tmp_path):
    # issue 26 item 24: an integral decimal column was refused as "not an integer"
    from decimal import Decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    f = tmp_path / "d.parquet"
    pq.write_table(pa.table({"a": pa.array([Decimal(10), Decimal(20)], pa.decimal128(10, 0)), "b": [5, 6]}), f)
    assert load_trace(str(f), prefill_col="a", decode_col="b").prefill.tolist() == [10, 20]
    pq.write_table(pa.table({"a": pa.array([Decimal(10), Decimal("20.5")], pa.decimal128(10, 1)), "b": [5, 6]}), f)
    with pytest.raises(TraceError, match=r"row 1.*not an integer"):
        load_trace(str(f), prefill_col="a", decode_col="b")


def test_empty_policy_is_a_usage_error_naming_the_option(small_trace, capsys):
    with pytest.raises(SystemExit) as e:
        main(["simulate", "--trace", str(small_trace), "--requests", "10", "--workers", "2", "--policy", ""])
    assert e.value.code == 2 and "argument --policy: '' is not a policy (fcfs" in capsys.readouterr().err


# -- issue 26, items 13, 20, 21: one validation for the API and the loaders -----------------------
@pytest.mark.parametrize("kwargs, needle", [({"workers": 2.5}, "workers"), ({"slots": 1.5}, "slots"),
                                            ({"policy": None}, "policy")])
def test_api_refuses_what_it_would_truncate_or_crash_on(kwargs, needle):
    from bfio.simulator import simulate

    args = {"workers": 2, "slots": 2, **kwargs}
    with pytest.raises(ConfigError, match=needle):
        simulate(Workload(np.array([5, 6]), np.array([1, 2])), args.pop("workers"), args.pop("slots"), **args)


@pytest.mark.parametrize("workload, needle", [([1, 2], "Workload"), (None, "Workload")])
def test_api_refuses_a_workload_that_is_not_one(workload, needle):
    from bfio.simulator import simulate

    with pytest.raises(ConfigError, match=needle):
        simulate(workload, 2, 2)


def test_api_refuses_an_empty_workload():
    from bfio.simulator import simulate

    with pytest.raises(ConfigError, match="no requests"):
        simulate(Workload(np.array([], dtype=np.int64), np.array([], dtype=np.int64)), 2, 2)


@pytest.mark.parametrize("field, patch", [("sizes", {"sizes": [3.7]}), ("base", {"base": -np.ones((2, 1))})])
def test_instance_api_refuses_what_the_loader_refuses(field, patch):
    from bfio.solvers.instance import Instance, InstanceError

    args = {"base": np.zeros((2, 1)), "free": [1, 1], "sizes": [3], "ages": [0], **patch}
    with pytest.raises(InstanceError, match=field):
        Instance(**args)


def test_extra_trace_that_is_a_directory_fails_when_the_config_loads(tmp_path):
    cfg = _smoke_config()
    cfg["extra_traces"] = {"mine": {"path": str(tmp_path), "prefill_col": "a", "decode_col": "b"}}
    with pytest.raises(ConfigError, match=r"extra_traces\.mine\.path.*directory"):
        validate_config(cfg, SCHEMA)


# -- issue 26, item 16: Gurobi refuses a model its licence cannot take before building it ---------
def test_gurobi_refuses_an_oversized_model_before_building_it(monkeypatch):
    pytest.importorskip("gurobipy")
    import bfio.solvers.gurobi as grb
    from bfio.solvers.random_instances import random_instance
    from bfio.solvers.result import SolverError

    if not grb.size_limited():
        pytest.skip("this Gurobi licence is not size-limited")

    def never(*a, **k):
        raise AssertionError("built the model although the licence refuses it")

    monkeypatch.setattr(grb, "build_milp", never)
    inst = random_instance(np.random.default_rng(0), workers=200, waiting=400, horizon=30)
    with pytest.raises(SolverError, match="too large for the restricted"):
        grb.solve_gurobi(inst, time_limit_s=5)


# -- issue 26, item 8: arrival times bounded so latencies keep their precision --------------------
@pytest.mark.parametrize("extra", [["--arrival-mode", "poisson", "--arrival-rate", "1e-12"],
                                   ["--arrival-mode", "poisson", "--arrival-rate", "1e-300"]])
def test_arrivals_beyond_the_clock_precision_are_refused(small_trace, capsys, extra):
    assert _sim(small_trace, *extra) == 2
    assert "MAX_ARRIVAL_S" in capsys.readouterr().err


def test_trace_arrival_beyond_the_bound_names_the_row(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("a,b,t\n5,1,0\n6,2,10\n7,3,1e300\n")
    with pytest.raises(TraceError, match=r"row 2.*MAX_ARRIVAL_S"):
        load_trace(str(f), prefill_col="a", decode_col="b", arrival_col="t")


def test_time_scale_beyond_the_bound_is_refused():
    from bfio.workloads.workload import replay_workload

    with pytest.raises(ConfigError, match="MAX_ARRIVAL_S"):
        replay_workload(np.array([5, 6]), np.array([1, 2]), np.array([0.0, 10.0]), time_scale=1e15)


# -- issue 26 audit (second pass): the three items that still showed their defect ----------


@pytest.mark.parametrize("name, text, needle", [
    ("t.csv", "a,b,t\n5,3,1.5\n6,4,2.5\n7,2,x\n", r"row 2, field 't': value 'x' is neither"),
    ("t.jsonl", '{"a": 5, "b": 3, "t": "0.5"}\n{"a": 5, "b": 3, "t": "abc"}\n', r"row 1, field 't': value 'abc'"),
    ("u.csv", "a,b,t\n5,3,0.5\n6,4,2024-01-01T00:00:00\n", r"row 1.*is a timestamp while row 0 is seconds"),
])
def test_an_all_text_arrival_column_blames_the_bad_row(tmp_path, name, text, needle):
    """Item 22: with pandas >= 3 an all-text column is dtype ``str``, not ``object``;
    the row-by-row check must still run (it blamed row 0 before)."""
    f = tmp_path / name
    f.write_text(text)
    with pytest.raises(TraceError, match=needle):
        load_trace(str(f), prefill_col="a", decode_col="b", arrival_col="t")


def test_a_symlink_loop_as_input_is_not_a_missing_file(tmp_path, capsys):
    """Item 24: a trace path that is a symlink loop was reported as 'file does not exist'."""
    a, b = tmp_path / "loopa.csv", tmp_path / "loopb.csv"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(TraceError, match="cannot be opened: Too many levels of symbolic links"):
        load_trace(str(a), prefill_col="a", decode_col="b")
    assert main(["simulate", "--trace", str(a), "--requests", "2", "--workers", "2"]) == 2
    err = capsys.readouterr().err
    assert "symbolic links" in err and "does not exist" not in err
    from bfio.runs.experiments import prepare_trace

    with pytest.raises(TraceError, match="symbolic links"):
        prepare_trace("longbench", a, tmp_path / "out.parquet", tmp_path / "out.json")


@pytest.mark.parametrize("cols", [("a", "a", None), ("a", "b", "a"), ("a", "b", "b")])
def test_one_column_for_two_roles_is_refused(small_trace, capsys, cols):
    """Item 10: the same column for prefill and decode ran as if nothing were wrong."""
    prefill, decode, arrival = cols
    argv = ["simulate", "--trace", str(small_trace), "--prefill-col", prefill, "--decode-col", decode,
            "--requests", "4", "--workers", "2"]
    if arrival:
        argv += ["--arrival-col", arrival]
    assert main(argv) == 2
    assert "columns are both" in capsys.readouterr().err
