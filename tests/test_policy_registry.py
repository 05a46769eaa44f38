"""The policy registry is the single source of policy names and labels (issue 14):
a policy registered here, in a test module, and nowhere else appears in the CLI
help, the validated config schema, the experiments' rows and the table labels;
and every built-in policy does too."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from bfio import policies
from bfio.cli import build_parser, main
from bfio.ground.errors import ConfigError
from bfio.pipeline.config import _registry_enums, validate_config
from bfio.runs.experiments import experiment_rows, experiment_runs
from bfio.runs.run import RunSpec, row_spec_of
from bfio.lookahead.run_keys import RowSpec, row_key
from bfio.policies import Policy, RoutingState, register
from bfio.policies.names import ROUTER_NAMES
from bfio.studies.online_summary import policy_label as study_label
from bfio.runs.tables import row_label

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
NAME = "throwaway_test_policy"


class Throwaway(Policy):
    """Fills the last worker first (any valid rule will do)."""

    name = NAME
    label = "Throwaway (test)"
    dispatch_modes = ("central", "instant")

    def route(self, state: RoutingState) -> np.ndarray:
        out = np.full(state.pool.shape[0], -1, dtype=np.int64)
        u = state.admissible
        if u:
            out[:u] = np.repeat(np.arange(state.workers)[::-1], state.free[::-1])[:u]
        return out

    def dispatch(self, state, requests) -> np.ndarray:
        return np.full(requests.shape[0], state.workers - 1, dtype=np.int64)


@pytest.fixture
def throwaway():
    register(Throwaway)
    try:
        yield NAME
    finally:
        policies._REGISTRY.pop(NAME, None)


def _option(parser, command, flag):
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    return next(a for a in sub._actions if flag in a.option_strings)


def _config(baselines):
    return {"experiments": {"x": {"trace": "longbench", "requests": 10, "workers": [2], "baselines": baselines}},
            "figures": {"worker_sweep_baseline": baselines[0]}}


def test_throwaway_policy_reaches_cli_schema_experiments_and_tables(throwaway, tmp_path):
    # CLI: named in the --policy help and in the instant-dispatch list, and runnable
    parser = build_parser()
    assert NAME in _option(parser, "simulate", "--policy").help
    assert NAME in _option(parser, "simulate", "--dispatch").help
    trace = tmp_path / "t.csv"
    trace.write_text("input_length,output_length\n" + "".join(f"{10 + i},{1 + i % 7}\n" for i in range(40)))
    out = tmp_path / "r.json"
    assert main(["simulate", "--trace", str(trace), "--requests", "50", "--workers", "2", "--slots", "3",
                 "--policy", NAME, "--json", str(out)]) == 0
    assert json.loads(out.read_text())["policy"] == NAME

    # config schema: the validated schema lists it, a config naming it validates
    with open(SCHEMA) as f:
        schema = _registry_enums(yaml.safe_load(f))
    assert NAME in schema["definitions"]["experiment"]["properties"]["baselines"]["items"]["enum"]
    assert re.match(schema["definitions"]["row"]["pattern"], NAME)
    cfg = validate_config(_config([NAME, "fcfs"]), SCHEMA)

    # experiments: a baseline row, its runs route with the new policy
    assert NAME in policies.baselines()
    from bfio.runs import experiments
    assert NAME in experiments.BASELINES
    assert experiment_rows(cfg["experiments"]["x"])[:2] == [NAME, "fcfs"]
    runs = experiment_runs(cfg, "x")
    assert {r.policy for r in runs} == {NAME, "fcfs"}
    assert row_spec_of(NAME) == RowSpec(NAME)
    declared = {r.path: r for r in runs}
    assert RunSpec.from_path(f"longbench/n10-g2-b72/{NAME}/seed42", declared).policy == NAME

    # tables and study summaries: the class's label
    assert row_label(NAME) == "Throwaway (test)"
    assert study_label(NAME, "instant") == "Throwaway (test) (instant)"


def test_unregistered_policy_is_refused_everywhere():
    assert NAME not in policies.registered()
    assert NAME not in _option(build_parser(), "simulate", "--policy").help
    with pytest.raises(ConfigError, match="experiments.x.baselines"):
        validate_config(_config([NAME]), SCHEMA)
    with pytest.raises(ConfigError, match="neither a baseline"):
        row_spec_of(NAME)
    assert row_label(NAME) == NAME


def test_every_registered_policy_is_everywhere():
    help_text = _option(build_parser(), "simulate", "--policy").help
    instant_help = _option(build_parser(), "simulate", "--dispatch").help
    with open(SCHEMA) as f:
        schema = _registry_enums(yaml.safe_load(f))
    enum = schema["definitions"]["experiment"]["properties"]["baselines"]["items"]["enum"]
    for name in policies.registered():
        cls = policies._REGISTRY[name]
        assert name in help_text
        assert ("instant" in cls.dispatch_modes) == (name in instant_help.split("policies:")[1])
        assert policies.policy_label(name) != name, f"policy {name} has no label (bfio.policies.names)"
        if name in policies.KEYED_ROWS:
            continue
        assert name in enum
        assert re.match(schema["definitions"]["row"]["pattern"], name)
        assert row_spec_of(name) == RowSpec(name)
        assert row_label(name) == policies.policy_label(name)
    # BF-IO rows keep their keys and labels
    for key in (row_key("bfio", 40), row_key("bfio", 0, "paper-literal")):
        assert re.match(schema["definitions"]["row"]["pattern"], key)
        assert row_spec_of(key).policy == "bfio" and row_spec_of(key).key == key
    assert row_label("bfio_h40") == "BF-IO (H=40)"


def test_router_names_name_every_built_in_and_no_built_in_labels_itself():
    """The labels of built-ins are read from bfio.policies.names without importing the
    policy modules (issue 42): exact only while the names there are the built-ins' and
    no built-in class carries a label of its own."""
    built_in = {n for n in policies.registered() if policies._REGISTRY[n].__module__.startswith("bfio.policies.")}
    assert built_in == set(ROUTER_NAMES)
    assert [n for n in built_in if "label" in policies._REGISTRY[n].__dict__] == []


def test_labels_unchanged():
    """The labels printed in tables and study summaries before the registry held them."""
    expect = {"fcfs": "FCFS", "jsq_tokens": "JSQ", "jsq_requests": "JSQ (requests)", "round_robin": "Round robin",
              "random": "Random", "power_of_two": "Power of two", "bfio_h20": "BF-IO (H=20)",
              "bfio_h40_literal": "BF-IO (H=40, paper-literal)", "nope": "nope"}
    assert {k: row_label(k) for k in expect} == expect
    assert study_label("vllm_dp", "instant") == "vLLM DP (instant)"
    assert study_label("least_tokens", "instant") == "Least tokens (instant)"


def test_schema_file_lists_no_policy_names():
    """Policy names live in the registry only: the YAML schema has no enum or
    pattern of them to keep in sync."""
    with open(SCHEMA) as f:
        raw = yaml.safe_load(f)
    assert "pattern" not in raw["definitions"]["row"]
    assert "enum" not in raw["definitions"]["experiment"]["properties"]["baselines"]["items"]
    before = copy.deepcopy(raw)
    _registry_enums(raw)
    assert raw == before  # the enums are filled in a copy
