"""environment.yml mirrors pyproject.toml: same packages, same version bounds."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]
#: Conda-only entries allowed in environment.yml besides the mirrored ones.
CONDA_EXTRAS = {"pip"}


def canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pyproject_requirements() -> dict[str, str]:
    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    reqs = list(data["project"]["dependencies"])
    for extra in data["project"].get("optional-dependencies", {}).values():
        reqs += extra
    out = {canon("python"): str(Requirement(f"python{data['project']['requires-python']}").specifier)}
    for r in reqs:
        req = Requirement(r)
        out[canon(req.name)] = str(req.specifier)
    return out


def environment_requirements() -> dict[str, str]:
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    entries = []
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            entries += dep.get("pip", [])
        else:
            entries.append(dep)
    out = {}
    for e in entries:
        # conda "name>=x" and "name=x" (conda's "=" is a prefix match; only ">=" is used here)
        req = Requirement(e.replace(" ", ""))
        key = canon(req.name)
        assert key not in out, f"environment.yml lists {req.name} twice"
        out[key] = str(req.specifier)
    return out


def test_same_packages_and_bounds():
    py, env = pyproject_requirements(), environment_requirements()
    missing = sorted(set(py) - set(env))
    extra = sorted(set(env) - set(py) - CONDA_EXTRAS)
    assert not missing, f"in pyproject.toml but not environment.yml: {missing}"
    assert not extra, f"in environment.yml but not pyproject.toml: {extra}"
    differ = {k: (py[k], env[k]) for k in py if py[k] != env[k]}
    assert not differ, f"version bounds differ (pyproject, environment.yml): {differ}"


def test_environment_channels_and_name():
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    assert env["name"] == "bfio"
    assert "conda-forge" in env["channels"]


#: Runtime dependencies used without an ``import`` of their own name: distribution -> why.
INDIRECT = {"pyarrow": "pandas' parquet engine (read_parquet, to_parquet)"}
IMPORT_NAME = {"pyyaml": "yaml"}


def test_every_runtime_dependency_is_used():
    """A declared runtime dependency is imported by the package or the workflow
    (or listed in INDIRECT with the reason), so nothing is installed for nothing."""
    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    code = "\n".join(p.read_text() for d in ("src", "workflow") for p in (REPO / d).rglob("*.py"))
    code += "\n".join(p.read_text() for p in (REPO / "workflow").rglob("*.smk")) + (REPO / "Snakefile").read_text()
    unused = []
    for r in data["project"]["dependencies"]:
        name = canon(Requirement(r).name)
        module = IMPORT_NAME.get(name, name.replace("-", "_"))
        if not re.search(rf"^\s*(import|from)\s+{re.escape(module)}\b", code, flags=re.M) and name not in INDIRECT:
            unused.append(name)
    assert not unused, f"declared but never imported: {unused} (use them or drop them from pyproject.toml " \
                       "and environment.yml)"
