"""The study registry's order is fixed (issue 43): the built-in studies by name,
each after the studies it builds on (``Study.builds_on``), then the plugins',
whichever study module a process imported first; ``builds_on`` covers the
study modules a study's module imports."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import bfio.studies.registry as registry
from bfio.ground.errors import ConfigError
from bfio.studies.registry import Study, builtin, studies

SRC = Path(__file__).resolve().parents[1] / "src"

_ORDER = """
import json, sys
{first}
from bfio.studies.registry import studies, _MODULES
print(json.dumps({{"order": list(studies()), "modules": {{n: _MODULES[n] for n in studies()}}}}))
"""


def _order(first: str = "") -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
           "BFIO_PLUGINS": ""}
    out = subprocess.run([sys.executable, "-c", _ORDER.format(first=first)], capture_output=True, text=True,
                         env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def fresh():
    return _order()


def test_the_order_is_by_name_after_what_a_study_builds_on(fresh):
    order = fresh["order"]
    assert set(order) == set(studies()) and list(studies()) == order
    for i, name in enumerate(order):
        assert set(studies()[name].builds_on) <= set(order[:i]), name
    # by name where nothing is built on: each study is either after its name's
    # predecessor or pulled ahead of it by a study that builds on it
    pulled = {d for s in studies().values() for d in s.builds_on}
    plain = [n for n in order if n not in pulled]
    assert plain == sorted(plain)


def test_importing_a_study_module_first_changes_no_order(fresh):
    modules = sorted(set(fresh["modules"].values()))
    assert len(modules) >= 2
    for module in modules:
        assert _order(f"import {module}")["order"] == fresh["order"], module


def _study_imports(module: str, seen: set) -> set[str]:
    """The study modules ``module`` imports at its top, directly or through other
    modules of the package."""
    seen.add(module)
    tree = ast.parse(Path(importlib.util.find_spec(module).origin).read_text())
    found = set()
    for node in tree.body:
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
        for name in names:
            if name.startswith("bfio.studies.") and name not in seen:
                found.add(name)
                found |= _study_imports(name, seen)
    return found


def test_builds_on_covers_the_study_modules_imported(fresh):
    study_of = {m: n for n, m in fresh["modules"].items()}
    for name, module in fresh["modules"].items():
        imported = {study_of[m] for m in _study_imports(module, set()) if m in study_of} - {name}
        assert imported <= set(studies()[name].builds_on), (name, imported)


def _toy(name: str, builds_on=()) -> Study:
    return Study(name=name, description="toy", generic=False, builds_on=builds_on)


@pytest.fixture
def toy_registry(monkeypatch):
    studies()
    monkeypatch.setattr(registry, "_REGISTRY", {})
    monkeypatch.setattr(registry, "_MODULES", {})
    return registry


def test_a_plugin_comes_after_the_builtins_and_order_ignores_registration(toy_registry):
    def reg(study, module):
        toy_registry._REGISTRY[study.name] = study
        toy_registry._MODULES[study.name] = module

    reg(_toy("plug"), "my_plugin")
    reg(_toy("zeta", ("beta",)), "bfio.studies.zeta")
    reg(_toy("beta"), "bfio.studies.beta")
    reg(_toy("alpha"), "bfio.studies.alpha")
    assert not builtin("plug") and builtin("beta")
    assert toy_registry._ordered() == ["alpha", "beta", "zeta", "plug"]
    reg(_toy("aaa", ("zeta",)), "bfio.studies.aaa")
    assert toy_registry._ordered() == ["beta", "zeta", "aaa", "alpha", "plug"]


def test_an_unknown_or_circular_builds_on_is_named(toy_registry):
    toy_registry._REGISTRY.update(a=_toy("a", ("b",)), b=_toy("b", ("a",)))
    toy_registry._MODULES.update(a="bfio.studies.a", b="bfio.studies.b")
    with pytest.raises(ConfigError, match="circle: a -> b -> a"):
        toy_registry._ordered()
    toy_registry._REGISTRY.update(b=_toy("b", ("nope",)))
    with pytest.raises(ConfigError, match="study 'b' builds on 'nope'"):
        toy_registry._ordered()


def test_config_names_no_builtin_study_by_hand(fresh):
    """The config's checks and schema read the registry (``Study.validate``,
    ``Study.schema_enums``), never a built-in study's section name."""
    source = Path(importlib.util.find_spec("bfio.pipeline.config").origin).read_text()
    literals = {n.value for n in ast.walk(ast.parse(source))
                if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert not literals & set(fresh["order"])


def test_a_study_fills_its_section_schema_from_its_registries():
    import yaml

    from bfio.pipeline.config import _registry_enums
    from bfio.predictors import PREDICTORS
    from bfio.studies.starvation_summary import COST_METRICS

    root = Path(__file__).resolve().parents[1]
    props = _registry_enums(yaml.safe_load((root / "workflow/schemas/config.schema.yaml").read_text()))["properties"]
    assert props["predictor_study"]["properties"]["predictors"]["items"]["enum"] == list(PREDICTORS)
    assert props["starvation"]["properties"]["cost_metric"]["enum"] == list(COST_METRICS)
    filled = [n for n, s in studies().items() if s.schema_enums is not None]
    assert set(filled) >= {"predictor_study", "starvation"}


def test_a_study_that_declares_its_runs_has_them_run_with_its_setting_named():
    """``Study.runs``: the registry hands the declared runs to the batch runner it is
    given (the pipeline's: bfio.runs.runner.run_batch) and names the setting first."""
    import pandas as pd

    def declared(name, setting, section, seeds, slots, defaults):
        return [(setting["trace"], row, seed) for row in section["rows"] for seed in seeds]

    def batch(runs, frames, show_progress, log):
        assert list(frames) == ["burstgpt"] and show_progress is False
        return pd.DataFrame({"row": [r[1] for r in runs], "seed": [r[2] for r in runs]})

    study = Study(name="mine", description="mine", runs=declared, tabulate=print)
    out = study.run_setting(batch, "g4", {"trace": "burstgpt"}, {"rows": ["fcfs", "jsq"]}, [1, 2], 8, None, {})
    assert list(out.columns) == ["setting", "row", "seed"] and len(out) == 4 and set(out["setting"]) == {"g4"}
    with pytest.raises(TypeError, match="not both"):
        Study(name="mine", description="mine", runs=declared, simulate=declared, tabulate=print)
    with pytest.raises(TypeError, match="needs simulate"):
        Study(name="mine", description="mine", tabulate=print)


def test_a_one_module_study_keeps_its_module_a_simulation_trigger():
    one = Study(name="mine", description="mine", generic=False, modules=("studies/mine.py", "engine/x.py"),
                table_modules=("studies/mine.py", "studies/mine_more.py"))
    assert one.table_only_modules() == ("studies/mine_more.py",)
    online = studies()["online"]
    assert online.table_only_modules() == online.table_modules  # the studies before: apart, as before
