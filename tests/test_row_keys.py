"""Row keys are written by :func:`bfio.lookahead.run_keys.row_key` (:attr:`bfio.lookahead.run_keys.RowSpec.key`)
and never parsed back (issues 14, 43): a key's spec is looked up among the declared
rows, every key round-trips, the registry's row pattern (the schema's validation)
accepts exactly the plain BF-IO keys, the study labels read the declared specs,
and no module matches a key with a regular expression."""

from __future__ import annotations

import inspect
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

import bfio.figures.series
import bfio.runs.run
import bfio.lookahead.run_keys
import bfio.studies.online_summary
from bfio.ground.errors import ConfigError
from bfio.lookahead.run_keys import (MAX_KEY_HORIZON, RowSpec, admission_label, declare_rows, declared_spec, paper_row_spec,
                           row_key, row_spec)
from bfio.policies import row_pattern
from bfio.studies.declared_rows import config_rows
from bfio.studies.starvation import starvation_variants
from bfio.studies.online_summary import policy_label

horizons = st.integers(min_value=0, max_value=MAX_KEY_HORIZON)
admissions = st.one_of(st.sampled_from(["free", "fifo"]),
                       st.integers(min_value=1, max_value=10**6).map(lambda n: f"aging:{n}"))


@given(horizons, st.sampled_from(["default", "paper-literal"]))
def test_bfio_keys_round_trip_and_match_the_registry_pattern(h, objective):
    key = row_key("bfio", h, objective)
    assert paper_row_spec(key) == row_spec(key) == RowSpec("bfio", h, objective)
    assert re.fullmatch(row_pattern(), key)


@given(horizons, admissions)
def test_admission_keys_are_looked_up_once_declared_and_labelled(h, admission):
    spec = RowSpec("bfio", h, admission=admission)
    key = spec.key
    assert key == row_key("bfio", h, admission=admission)
    assert not re.fullmatch(row_pattern(), key)  # a study variant, not an experiment row
    declare_rows([spec])
    assert row_spec(key) == spec and paper_row_spec(key) is None
    assert policy_label(key, "central") == f"BF-IO (H={h}, {admission}) (central)"


def test_an_undeclared_key_names_no_row():
    assert row_spec("bfio_h7_drain99999") is None  # never declared: not read off the key
    assert row_spec(f"bfio_h{MAX_KEY_HORIZON + 1}") is None and row_spec("fcfs") is None
    with pytest.raises(ConfigError, match="horizon"):
        RowSpec("bfio", MAX_KEY_HORIZON + 1)
    with pytest.raises(ConfigError, match="only BF-IO rows"):
        RowSpec("fcfs", 40)


def test_starvation_variants_and_config_rows_use_the_specs():
    section = {"admissions": ["free", "aging:200"], "settings": [{"name": "s", "horizons": [0, 40]}],
               "variants": {"bfio_h40_noisy": {"policy": "bfio", "horizon": 40, "predictor": "noisy"}}}
    variants = starvation_variants(section["settings"][0], section)
    rows = config_rows({"starvation": section, "online": {"variants": {
        "bfio_h20_drain20": {"policy": "bfio", "horizon": 20, "admission": "drain:20"},
        "vllm_dp_r10": {"policy": "vllm_dp", "report_interval": 10}}}})
    for key, v in variants.items():
        assert rows[key] == RowSpec("bfio", v["horizon"], admission=v["admission"]) and rows[key].key == key
    assert len(variants) == 4
    assert rows["bfio_h20_drain20"].key == "bfio_h20_drain20"
    assert rows["bfio_h40_noisy"] == RowSpec("bfio", 40)  # a variant named otherwise: declared, not keyed
    assert rows["vllm_dp_r10"] == RowSpec("vllm_dp")
    declare_rows(rows)
    assert row_spec("bfio_h40_noisy") is None and declared_spec("bfio_h40_noisy").horizon == 40


def test_baseline_keys_are_their_names_and_bad_admissions_are_refused():
    assert row_key("fcfs") == "fcfs" and paper_row_spec("fcfs") is None
    with pytest.raises(ConfigError):
        admission_label("aging:x")


def test_spec_options_and_labels():
    assert RowSpec("bfio", 40).options() == {"horizon": 40}
    lit = RowSpec("bfio", 40, "paper-literal")
    assert lit.options()["objective"] == "paper-literal" and lit.paper() == RowSpec("bfio", 40)
    assert lit.label(lambda n: "BF-IO") == "BF-IO (H=40, paper-literal)"
    assert bfio.runs.run.resolve_row("bfio_h40_literal")[1] == {"horizon": 40, **{k: v for k, v in lit.options().items()}}


def test_no_module_matches_a_row_key_with_a_regular_expression():
    for module in (bfio.lookahead.run_keys, bfio.runs.run, bfio.figures.series, bfio.studies.online_summary):
        source = inspect.getsource(module)
        for pattern in ("re.match(", "re.compile(", "parse_bfio_row", "parse_admission_row", "RUN_RE"):
            assert pattern not in source, (module.__name__, pattern)


def test_tables_and_the_horizon_figure_read_stored_columns():
    """Issue 28: downstream of the runs, the order, checks and curves come from the
    ``horizon`` and ``objective`` columns a run stores, not from the key. A summary
    table stores no objective (its columns are kept so results stay byte-identical):
    there it is the declared row's (a lookup, issue 43)."""
    import pandas as pd

    import bfio.runs.tables
    from bfio.figures import horizon_sweep

    source = inspect.getsource(bfio.runs.tables)
    assert "parse_bfio_row" not in source and "paper_row" not in source
    summary = pd.DataFrame({"row": ["fcfs", "x_late", "x_early", "x_lit"], "horizon": [None, 30, 5, 5],
                            "objective": [None, "default", "default", "paper-literal"]})
    bf = horizon_sweep._bfio_rows(summary, horizon_sweep._objectives(summary))
    assert list(zip(bf["row"], bf["H"], bf["objective"])) == [("x_early", 5, "default"), ("x_late", 30, "default"),
                                                              ("x_lit", 5, "paper-literal")]
    # a summary table as written (no objective column): H stored, the objective the declared row's
    table = pd.DataFrame({"row": ["fcfs", "bfio_h20", "bfio_h20_literal"], "horizon": [None, 20, 20]})
    bf = horizon_sweep._bfio_rows(table, horizon_sweep._objectives(table))
    assert list(zip(bf["row"], bf["H"], bf["objective"])) == [("bfio_h20", 20, "default"),
                                                              ("bfio_h20_literal", 20, "paper-literal")]


def test_runs_carry_the_declared_spec_and_refuse_another_key():
    from bfio.runs.experiments import experiment_runs
    from bfio.runs.run import RunSpec

    config = {"seeds": [42], "experiments": {"x": {"trace": "longbench", "requests": 10, "workers": [2],
                                                   "baselines": ["fcfs"], "horizons": [7], "literal_horizons": [7]}}}
    runs = experiment_runs(config, "x")
    assert [(r.row, r.row_spec) for r in runs] == [("fcfs", RowSpec("fcfs")), ("bfio_h7", RowSpec("bfio", 7)),
                                                   ("bfio_h7_literal", RowSpec("bfio", 7, "paper-literal"))]
    assert [(r.policy, r.horizon, r.objective) for r in runs] == [("fcfs", None, None), ("bfio", 7, "default"),
                                                                  ("bfio", 7, "paper-literal")]
    assert runs[2].with_bfio_defaults({"solver": "fast"}).policy_options == {"solver": "fast",
                                                                            **RowSpec("bfio", 7, "paper-literal").options()}
    with pytest.raises(ConfigError, match="not the key of its spec"):
        RunSpec("longbench", 10, 2, 72, "bfio_h8", 42, row_spec=RowSpec("bfio", 7))


def test_a_runs_config_declares_its_rows_for_the_notebook(tmp_path):
    from bfio.studies.declared_rows import declare_run_rows

    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "mine.yaml").write_text(
        "run_name: mine\nonline:\n  variants:\n    bfio_h33_drain7: {policy: bfio, horizon: 33, admission: 'drain:7'}\n")
    (tmp_path / "config" / "config.yaml").write_text("seeds: [42]\n")
    assert row_spec("bfio_h33_drain7") is None
    assert declare_run_rows(tmp_path, "mine") == [tmp_path / "config" / "mine.yaml"]
    assert row_spec("bfio_h33_drain7") == RowSpec("bfio", 33, admission="drain:7")
    assert policy_label("bfio_h33_drain7", "central") == "BF-IO (H=33, drain:7) (central)"


def test_the_notebook_warns_of_a_config_file_it_cannot_read(tmp_path):
    from bfio.studies.declared_rows import UnreadConfigWarning, declare_run_rows

    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "a_broken.yaml").write_text("run_name: mine\nonline: [unclosed\n")
    (tmp_path / "config" / "b_list.yaml").write_text("- run_name\n- mine\n")
    (tmp_path / "config" / "mine.yaml").write_text(
        "run_name: mine\nonline:\n  variants:\n    bfio_h34_drain8: {policy: bfio, horizon: 34, admission: 'drain:8'}\n")
    with pytest.warns(UnreadConfigWarning) as caught:
        assert declare_run_rows(tmp_path, "mine") == [tmp_path / "config" / "mine.yaml"]
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2
    assert str(tmp_path / "config" / "a_broken.yaml") in messages[0] and "ParserError" in messages[0]
    assert "line 2" in messages[0]  # the parse error's own text
    assert str(tmp_path / "config" / "b_list.yaml") in messages[1] and "not a mapping" in messages[1]
    assert row_spec("bfio_h34_drain8") == RowSpec("bfio", 34, admission="drain:8")


def test_the_pipeline_stops_on_a_config_file_it_cannot_read(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    broken = tmp_path / "broken.yaml"
    broken.write_text("run_name: mine\nonline: [unclosed\n")
    cmd = [sys.executable, "-m", "snakemake", "-s", str(repo / "Snakefile"), "-d", str(tmp_path / "work"), "-n",
           "--configfile", str(broken)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, "CI": "1"})
    assert proc.returncode != 0
    assert "Config file is not valid" in proc.stdout + proc.stderr
