"""Rerun triggers follow real imports (issue 14): bfio.runs.fingerprint."""

import ast
from pathlib import Path

import pytest

from bfio.runs.fingerprint import ROOT, code_fingerprint, import_statements, module_closure


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "bfio"
    (root / "figures").mkdir(parents=True)
    (root / "plug").mkdir()
    files = {
        "__init__.py": "",
        "figures/__init__.py": "",
        "figures/a.py": "from bfio.figures.b import helper\n",
        "figures/b.py": "def helper():\n    from ..c import deep\n    return deep()\n",
        "c.py": "import bfio.plug\ndef deep():\n    return 1\n",
        "plug/__init__.py": "import pkgutil\n",
        "plug/one.py": "X = 1\n",
        "unrelated.py": "Y = 2\n",
    }
    for rel, text in files.items():
        (root / rel).write_text(text)
    return root


def test_closure_follows_imports_in_functions_relative_and_discovered(tmp_path):
    root = _tree(tmp_path)
    got = {str(p.relative_to(root)) for p in module_closure(["figures/a.py"], root)}
    assert got == {"__init__.py", "figures/__init__.py", "figures/a.py", "figures/b.py", "c.py",
                   "plug/__init__.py", "plug/one.py"}


def test_fingerprint_changes_with_an_imported_helper_only(tmp_path):
    root = _tree(tmp_path)
    before = code_fingerprint(["figures/a.py"], root)
    (root / "unrelated.py").write_text("Y = 3\n")
    assert code_fingerprint(["figures/a.py"], root.parent / "bfio") == before  # cached, and unchanged anyway
    from bfio.runs import fingerprint

    fingerprint._fingerprint.cache_clear()
    assert code_fingerprint(["figures/a.py"], root) == before
    (root / "plug" / "one.py").write_text("X = 2\n")
    fingerprint._fingerprint.cache_clear()
    assert code_fingerprint(["figures/a.py"], root) != before


def test_each_file_is_parsed_once_and_again_when_its_imports_change(tmp_path):
    """The workflow computes tens of fingerprints through the same modules: a
    file's imports are read once a process (parse cache keyed by its text), and
    an edited file is read anew, so a new import is followed at once."""
    from bfio.runs import fingerprint

    root = _tree(tmp_path)
    module_closure(["figures/a.py"], root)
    parsed = fingerprint._resolved_imports.cache_info().misses
    module_closure(["figures/a.py"], root)
    module_closure(["figures/b.py", "c.py"], root)
    assert fingerprint._resolved_imports.cache_info().misses == parsed
    (root / "c.py").write_text("import bfio.unrelated\ndef deep():\n    return 1\n")
    got = {str(p.relative_to(root)) for p in module_closure(["figures/a.py"], root)}
    assert "unrelated.py" in got
    assert fingerprint._resolved_imports.cache_info().misses == parsed + 2  # c.py anew, unrelated.py


def test_real_figures_import_their_helpers():
    """The figures carry the helpers they borrow in their closure: the style's
    registry and intervals (issue 42), and the row keys it reads."""
    closure = {str(p.relative_to(ROOT)) for p in module_closure(["figures/worker_sweep.py"])}
    assert "figures/style.py" in closure and "lookahead/run_keys.py" in closure and "ground/student_t.py" in closure


def _dumped(nodes) -> list[str]:
    return sorted(ast.dump(n) for n in nodes)


def test_import_statements_match_a_full_parse_in_every_module_of_the_package():
    """The line scan the fingerprints read finds exactly the import statements a
    walk of the whole syntax tree finds, in every module of the package (a
    statement that does not start its line would be missed: this is where it shows)."""
    for path in sorted(ROOT.rglob("*.py")):
        text = path.read_text()
        full = [n for n in ast.walk(ast.parse(text)) if isinstance(n, (ast.Import, ast.ImportFrom))]
        assert _dumped(import_statements(text)) == _dumped(full), path


def test_import_statements_follow_brackets_and_backslashes_and_skip_prose():
    text = ('"""Docstring.\n\nfrom the table, import nothing\n"""\n'
            "from bfio.a import (\n  one,\ntwo)\n"
            "def f():\n    if True:\n        import bfio.b, \\\n            bfio.c\n")
    got = [ast.unparse(n) for n in import_statements(text)]
    assert got == ["from bfio.a import one, two", "import bfio.b, bfio.c"]


def test_missing_source_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.py"):
        module_closure(["nope.py"], _tree(tmp_path))


def test_results_diff_ignores_timings_and_finds_a_changed_number(tmp_path):
    """``bfio.runs.results_diff``: wall times may differ, a metric may not."""
    import json

    import pandas as pd

    from bfio.runs.results_diff import compare_trees, main

    for name, wall, imb in (("a", 1.0, 3.25), ("b", 2.0, 3.25), ("c", 1.0, 3.2500001)):
        d = tmp_path / name / "tables"
        d.mkdir(parents=True)
        pd.DataFrame({"row": ["fcfs"], "avg_imbalance": [imb], "wall_s": [wall]}).to_csv(d / "t.csv", index=False)
        (d / "s.json").write_text(json.dumps({"metrics": {"avg_imbalance": imb, "solver_s_p99": wall,
                                                        "route_s_p50": wall / 3}}))
    assert compare_trees(tmp_path / "a", tmp_path / "b") == []
    diffs = dict(compare_trees(tmp_path / "a", tmp_path / "c"))
    assert set(diffs) == {"tables/t.csv", "tables/s.json"}
    assert main([str(tmp_path / "a"), str(tmp_path / "c")]) == 1
    (tmp_path / "b" / "tables" / "extra.md").write_text("x\n")
    assert dict(compare_trees(tmp_path / "a", tmp_path / "b")) == {"tables/extra.md": f"only in {tmp_path / 'b'}"}
