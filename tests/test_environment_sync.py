"""The environment files agree: environment.yml lists pyproject.toml's packages,
each pinned to its version in constraints.txt; constraints.txt pins every
package of the install within pyproject's bounds; .ci/run installs and tests
exactly as the README says."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

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


def constraints() -> dict[str, str]:
    """constraints.txt: canonical name -> pinned version."""
    out = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        req = Requirement(line)
        pins = [s for s in req.specifier if s.operator == "=="]
        assert len(pins) == 1 and len(req.specifier) == 1, f"constraints.txt: {line!r} is not name==version"
        assert canon(req.name) not in out, f"constraints.txt pins {req.name} twice"
        out[canon(req.name)] = pins[0].version
    return out


def test_same_packages_pinned_to_the_constraints():
    py, env, pins = pyproject_requirements(), environment_requirements(), constraints()
    missing = sorted(set(py) - set(env))
    extra = sorted(set(env) - set(py) - CONDA_EXTRAS)
    assert not missing, f"in pyproject.toml but not environment.yml: {missing}"
    assert not extra, f"in environment.yml but not pyproject.toml: {extra}"
    assert env["python"] == py["python"], "environment.yml's python bound differs from requires-python"
    differ = {k: (env[k], pins.get(k)) for k in py if k != "python" and env[k] != f"=={pins.get(k)}"}
    assert not differ, f"environment.yml pins differ from constraints.txt (environment.yml, constraints.txt): {differ}"


def test_constraints_pin_every_dependency_within_the_bounds():
    py, pins = pyproject_requirements(), constraints()
    unpinned = sorted(set(py) - {"python"} - set(pins))
    assert not unpinned, f"pyproject.toml dependencies without a pin in constraints.txt: {unpinned}"
    outside = {k: (pins[k], py[k]) for k in py if k != "python" and Version(pins[k]) not in SpecifierSet(py[k])}
    assert not outside, f"pins outside pyproject.toml's bounds (pin, bound): {outside}"
    assert "bfio" not in pins, "constraints.txt must not pin the package itself"


def _readme_commands() -> list[str]:
    """The commands of the README's first code block (comments dropped)."""
    block = re.search(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S).group(1)
    return [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]


def test_ci_installs_and_tests_exactly_as_the_readme_says():
    """.ci/run runs the README's install command (pinned: -c constraints.txt; the first
    line's part before its pipeline command ``&& snakemake``) and its test command, word
    for word; the README's pipeline command is CI's smoke test."""
    commands = _readme_commands()
    install = [c.split(" && snakemake")[0].strip() for c in commands if c.startswith("pip install")]
    assert all(c.startswith("pip install") and "&& snakemake -c 2" in c for c in commands[:1]), commands
    tests = [c for c in commands if c.startswith("python -m pytest")]
    assert len(install) == 1 and len(tests) == 1, commands
    assert "-c constraints.txt" in install[0], install[0]
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.strip().startswith("#")]
    assert install[0] in ci and tests[0] in ci, (install, tests, ci)
    assert ci.index(install[0]) < ci.index(tests[0])


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
