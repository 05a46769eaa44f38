"""Issue 43: a run's cluster, arrival and prefill parameters are declared once
(:mod:`bfio.engine.run_parameters`); ``bfio simulate``'s flags, the library words it
rewrites, the config schema's fragments and config/README.md's rows are derived
from the declarations: each declared parameter is in every one of them, and a
changed declaration changes them."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import yaml

from bfio import config_readme, run_parameters
from bfio.cli import simulate as cli_simulate
from bfio.cli.library_words import FLAGS
from bfio.pipeline.config import _registry_enums
from bfio.engine.prefill import PrefillModel
from bfio.runs.run import ArrivalSpec
from bfio.engine.run_parameters import ARRIVAL, PREFILL, SECTIONS, SLOTS, STUDY_PREFILL

REPO = Path(__file__).resolve().parents[1]
RAW_SCHEMA = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    cli_simulate.add_parser(p.add_subparsers())
    return p._subparsers._group_actions[0].choices["simulate"]


def _flags(parser) -> dict:
    return {a.option_strings[0]: a for a in parser._actions if a.option_strings}


def _study_prefill(schema: dict) -> dict:
    return schema["properties"]["prefix_study"]["properties"]["prefill"]["properties"]


def test_the_library_defaults_are_the_declared_ones():
    model, arrival = PrefillModel(), ArrivalSpec()
    for o in PREFILL:
        assert getattr(model, o.name) == o.default, o.name
    for o in ARRIVAL:
        assert getattr(arrival, o.name) == o.default, o.name


def test_every_declared_parameter_has_its_flag_and_library_word():
    flags = _flags(_parser())
    for section, options in (("", (SLOTS,)), ("arrival", ARRIVAL), ("prefill", PREFILL)):
        for o in options:
            action = flags[o.flag]
            default = o.derived or ("none" if o.default is None else o.default)
            assert o.help in action.help and f"default {default}" in action.help, o.name
            assert action.choices == (list(o.allowed()) if o.allowed() is not None else None)
            assert FLAGS[f"{section}.{o.name}" if section else o.name] == o.flag
    assert flags["--slots"].default == SLOTS.default and flags["--prefill-chunk-tokens"].default is None


def test_every_declared_parameter_is_in_the_schema_and_the_readme():
    schema = _registry_enums(RAW_SCHEMA)
    prefill = _study_prefill(schema)
    assert list(prefill) == [o.name for o in STUDY_PREFILL]
    for o in STUDY_PREFILL:
        assert prefill[o.name]["default"] == o.default and o.help in prefill[o.name]["description"]
    assert schema["properties"]["slots"]["default"] == SLOTS.default
    assert "default" not in schema["definitions"]["experiment"]["properties"]["slots"]
    rows = config_readme.declared_rows(schema)
    for key in ["slots", "experiments.<name>.slots", "online.replay[].slots", "generality.slots",
                "prefix_study.settings[].time_scale", *(f"prefix_study.prefill.{o.name}" for o in STUDY_PREFILL)]:
        assert key in rows, key
    assert rows["prefix_study.prefill.chunk_tokens"] == (
        "| `prefix_study.prefill.chunk_tokens` | integer in 1..4,538,783,999,459,328 | `2048` | Chunked prefill: "
        "prompt tokens a rank computes per step. |")
    assert rows["online.replay[].slots"].split(" | ")[2] == "none (top-level `slots`)"


def test_the_readme_rows_are_the_derived_ones():
    """config/README.md is regenerated (``python -m bfio.pipeline.config_readme``) after a declaration changes."""
    text = config_readme.README.read_text()
    new, missing = config_readme.regenerate(text, config_readme.declared_rows(_registry_enums(RAW_SCHEMA)))
    assert missing == [] and new == text


def test_a_changed_declaration_changes_the_flag_the_schema_and_the_readme(monkeypatch):
    before_schema = _registry_enums(RAW_SCHEMA)
    before_rows = config_readme.declared_rows(before_schema)
    before_help = _flags(_parser())["--prefill-chunk-tokens"].help
    chunk = dataclasses.replace(PREFILL[0], default=4096, help="prompt tokens of a rank a step")
    monkeypatch.setattr(cli_simulate, "PREFILL", (chunk, *PREFILL[1:]))
    monkeypatch.setitem(SECTIONS, "study_prefill", (chunk, *STUDY_PREFILL[1:]))
    help_ = _flags(_parser())["--prefill-chunk-tokens"].help
    assert help_ != before_help and "default 4096" in help_ and "prompt tokens of a rank a step" in help_
    schema = _registry_enums(RAW_SCHEMA)
    assert _study_prefill(before_schema)["chunk_tokens"]["default"] == 2048
    assert _study_prefill(schema)["chunk_tokens"]["default"] == 4096
    rows = config_readme.declared_rows(schema)
    assert rows["prefix_study.prefill.chunk_tokens"] != before_rows["prefix_study.prefill.chunk_tokens"]
    assert "| `4096` | Prompt tokens of a rank a step. |" in rows["prefix_study.prefill.chunk_tokens"]
    text = config_readme.README.read_text()
    new, _ = config_readme.regenerate(text, rows)
    assert new != text and "`4096`" in new


def test_a_new_parameter_gets_its_readme_row_beside_its_siblings():
    """A declared key the README has no row of is written after its nearest sibling
    before it (schema order); one with no sibling and no parent row is reported."""
    rows = config_readme.declared_rows(_registry_enums(RAW_SCHEMA))
    keys = list(rows)
    at = keys.index("prefix_study.prefill.token_s") + 1
    rows = dict([*rows.items()][:at] + [("prefix_study.prefill.new", "| `prefix_study.prefill.new` | x |")]
                + [*rows.items()][at:])
    text = config_readme.README.read_text()
    new, missing = config_readme.regenerate(text, rows)
    assert missing == []
    lines = new.splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith("| `prefix_study.prefill.new`"))
    assert lines[i - 1].startswith("| `prefix_study.prefill.token_s`")
    assert new.replace("| `prefix_study.prefill.new` | x |\n", "") == text
    _, missing = config_readme.regenerate(text, {**rows, "nowhere.new": "| `nowhere.new` | x |"})
    assert missing == ["nowhere.new"]


def test_the_marker_takes_the_declaration_and_keeps_its_own_words():
    slots = dataclasses.replace(SLOTS, minimum=2)
    filled = run_parameters.fill_schema({"properties": {"a": {"x-parameter": "slots", "description": "mine"},
                                                        "b": {"x-parameter": "slots", "x-default": True}}},
                                        {**SECTIONS, "": (slots,)})
    assert filled["properties"]["a"]["minimum"] == 2 and filled["properties"]["a"]["description"] == "mine"
    assert "default" not in filled["properties"]["a"] and filled["properties"]["b"]["default"] == SLOTS.default


def test_bfio_options_readme_rows_come_from_their_declarations(monkeypatch):
    """BF-IO's rows (the ``bfio`` section) are derived from its option declarations:
    a new option is one declaration (its row is written among the ``bfio.*`` rows), a
    changed one changes its row, and the schema and the flags follow as before."""
    from bfio.policies import policy_class
    from bfio.policies.bfio_options import OPTIONS
    from bfio.ground.options import Option

    rows = config_readme.declared_rows(_registry_enums(RAW_SCHEMA))
    assert [k for k in rows if k.startswith("bfio.")] == [f"bfio.{o.name}" for o in OPTIONS]
    assert rows["bfio.solver"] == (
        "| `bfio.solver` | string from `bfio.solvers.SOLVERS` | none (policy: `fast`) | Backend of BF-IO's "
        "integer program: `fast` (numba heuristic), `highs` or `gurobi` (exact). |")
    assert rows["bfio.discount"].split(" | ")[1:3] == ["number in (0, 1] or null", "none (the objective's)"]
    new = Option("zz_test_weight", float, 0.5, "a toy weight", minimum=0.0, maximum=2.0, doc="A toy weight of `J`.")
    monkeypatch.setattr(policy_class("bfio"), "options", (*OPTIONS[:2], new, *OPTIONS[2:]))
    schema = _registry_enums(RAW_SCHEMA)
    assert schema["properties"]["bfio"]["properties"]["zz_test_weight"]["maximum"] == 2.0
    rows = config_readme.declared_rows(schema)
    assert rows["bfio.zz_test_weight"] == ("| `bfio.zz_test_weight` | number in 0..2 | none (policy: `0.5`) | "
                                       "A toy weight of `J`. |")
    text = config_readme.README.read_text()
    out, missing = config_readme.regenerate(text, rows)
    assert missing == []
    lines = out.splitlines()
    i = lines.index(rows["bfio.zz_test_weight"])
    assert lines[i - 1].startswith("| `bfio.solver` |")  # after its nearest sibling before it
    assert "--zz-test-weight" in _flags(_parser())
