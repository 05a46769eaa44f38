"""Row keys are produced by :func:`bfio.run_keys.row_key` and parsed by
:func:`bfio.run_keys.parse_bfio_row` / :func:`bfio.run_keys.parse_admission_row` only
(issue 14): every key round-trips, the registry's row pattern accepts exactly
the plain BF-IO keys, and the study labels read them."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bfio.errors import ConfigError
from bfio.run_keys import admission_label, parse_admission_row, parse_bfio_row, row_key
from bfio.policies import row_pattern
from bfio.studies.starvation import starvation_variants
from bfio.studies.online_summary import policy_label

horizons = st.integers(min_value=0, max_value=10_000)
admissions = st.one_of(st.sampled_from(["free", "fifo"]),
                       st.integers(min_value=1, max_value=10**6).map(lambda n: f"aging:{n}"))


@given(horizons, st.sampled_from(["default", "paper-literal"]))
def test_bfio_keys_round_trip_and_match_the_registry_pattern(h, objective):
    key = row_key("bfio", h, objective)
    assert parse_bfio_row(key) == (h, objective)
    assert parse_admission_row(key) is None
    assert re.fullmatch(row_pattern(), key)


@given(horizons, admissions)
def test_admission_keys_round_trip_and_label(h, admission):
    key = row_key("bfio", h, admission=admission)
    assert parse_admission_row(key) == (h, admission)
    assert parse_bfio_row(key) is None
    assert not re.fullmatch(row_pattern(), key)  # a study variant, not an experiment row
    assert policy_label(key, "central") == f"BF-IO (H={h}, {admission}) (central)"


def test_starvation_variants_use_the_row_keys():
    variants = starvation_variants({"horizons": [0, 40]}, {"admissions": ["free", "aging:200"]})
    for key, v in variants.items():
        assert parse_admission_row(key) == (v["horizon"], v["admission"])
    assert len(variants) == 4


def test_baseline_keys_are_their_names_and_bad_admissions_are_refused():
    assert row_key("fcfs") == "fcfs" and parse_bfio_row("fcfs") is None
    with pytest.raises(ConfigError):
        admission_label("aging:x")


def test_tables_and_the_horizon_figure_read_stored_columns():
    """Issue 28: downstream of the runs, the order, checks and curves come from the
    ``horizon`` and ``objective`` columns a run stores, not from the key. The one key
    the horizon-sweep figure still reads is the objective of a summary table, which
    stores none (its columns are kept so results stay byte-identical)."""
    import inspect

    import pandas as pd

    import bfio.tables
    from bfio.figures import horizon_sweep

    source = inspect.getsource(bfio.tables)
    assert "parse_bfio_row" not in source and "paper_row" not in source
    summary = pd.DataFrame({"row": ["fcfs", "x_late", "x_early", "x_lit"], "horizon": [None, 30, 5, 5],
                            "objective": [None, "default", "default", "paper-literal"]})
    bf = horizon_sweep._bfio_rows(summary, horizon_sweep._objectives(summary))
    assert list(zip(bf["row"], bf["H"], bf["objective"])) == [("x_early", 5, "default"), ("x_late", 30, "default"),
                                                              ("x_lit", 5, "paper-literal")]
    # a summary table as written (no objective column): H stored, the objective from the key
    table = pd.DataFrame({"row": ["fcfs", "bfio_h20", "bfio_h20_literal"], "horizon": [None, 20, 20]})
    bf = horizon_sweep._bfio_rows(table, horizon_sweep._objectives(table))
    assert list(zip(bf["row"], bf["H"], bf["objective"])) == [("bfio_h20", 20, "default"),
                                                              ("bfio_h20_literal", 20, "paper-literal")]
