"""Code fingerprints that follow real imports: the pipeline's rerun triggers.

Every rule passes ``code=code_fingerprint([...])`` as a parameter, so Snakemake
reruns exactly the jobs whose code changed. The fingerprint of a list of
entry modules hashes each of them and every ``bfio`` module they import,
transitively: ``import bfio.x``, ``from bfio.x import y`` (``y`` a module or a
name), relative imports, and imports inside functions alike, plus the
``__init__`` of every package on the way (Python runs it on import). A package
whose ``__init__`` discovers its modules by name (``pkgutil``, as the policy
registry does) counts as importing all of them.

So a figure reruns when a helper it imports from another figure module
changes (``horizon_sweep._err``), and a simulation never reruns for a change
that only a figure imports.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
from functools import lru_cache
from pathlib import Path

from bfio.ground.plugins import plugin_modules, without_implicit_cwd

PACKAGE = "bfio"
ROOT = Path(__file__).resolve().parents[1]


def _module_file(name: str, root: Path) -> Path | None:
    """File of module ``bfio.<...>`` (a module or a package's ``__init__``)."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    base = root.joinpath(*parts[1:])
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = [PACKAGE, *rel.parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, root: Path) -> frozenset[Path]:
    """The ``bfio`` files that importing ``path`` runs directly."""
    return _resolved_imports(path, root, path.read_text())


#: The first line of an ``import`` or ``from`` statement, at any indentation.
_STATEMENT_START = re.compile(r"[ \t]*(?:import|from)[ \t\\]")


def import_statements(text: str) -> list[ast.Import | ast.ImportFrom]:
    """The ``import`` and ``from ... import`` statements of a module's ``text``,
    top level and nested alike, as :func:`ast.walk` over the whole module finds
    them, but parsing only each line that starts one (with its continuation
    lines: open brackets, a trailing backslash): a twelfth of the time, and the
    workflow does this for every module of the package when it starts (issue
    42). A line of a string that reads as an import statement counts as one (a
    file too many in a fingerprint, never one too few); a statement that does
    not start its line (``x = 1; import y``) is not found, which
    ``tests/test_fingerprint.py`` checks for every module of the package."""
    lines = text.splitlines()
    found: list[ast.Import | ast.ImportFrom] = []
    for first, line in enumerate(lines):
        if not _STATEMENT_START.match(line):
            continue
        stmt, last = line.lstrip(), first
        while (stmt.count("(") > stmt.count(")") or stmt.rstrip().endswith("\\")) and last + 1 < len(lines):
            last += 1
            stmt += "\n" + lines[last]
        try:
            tree = ast.parse(stmt)
        except SyntaxError:  # prose in a string that starts with "from" or "import"
            continue
        found += [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    return found


@lru_cache(maxsize=None)
def _resolved_imports(path: Path, root: Path, text: str) -> frozenset[Path]:
    """:func:`_imports` of one text of ``path``: each version of a file is parsed
    and its imports looked up once a process, however many fingerprints pass
    through it (the workflow computes tens of them when it starts, nearly all
    through the same modules: parsing each file anew was 60% of building the DAG)."""
    name = _module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    names: set[str] = set()
    for node in import_statements(text):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                mod = ".".join(anchor + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names.add(mod)
            names.update(f"{mod}.{alias.name}" for alias in node.names)  # `from pkg import module`
    files = set()
    for full in names:
        parts = full.split(".")
        for k in range(1, len(parts) + 1):  # the packages on the way run their __init__
            f = _module_file(".".join(parts[:k]), root)
            if f is not None:
                files.add(f)
    if path.name == "__init__.py" and "pkgutil" in text:
        files.update(p for p in path.parent.glob("*.py"))
    files.discard(path)
    return frozenset(files)


def module_closure(sources, root: Path | None = None, exclude=()) -> list[Path]:
    """Every ``bfio`` file that the entry ``sources`` (files or directories,
    relative to the package, e.g. ``"figures/horizon_sweep.py"``, ``"solvers"``)
    import, transitively, themselves included; sorted. Files under ``exclude``
    (files or directories, relative to the package) are neither included nor
    followed: a study module imports its table and figure code inside the
    functions that need them, which its simulations do not run."""
    root = Path(root) if root is not None else ROOT
    skip = [root / e for e in exclude]
    todo: list[Path] = []
    for src in sources:
        path = root / src
        if path.is_dir():
            todo += sorted(path.rglob("*.py"))
        elif path.is_file():
            todo.append(path)
        else:
            raise FileNotFoundError(f"code_fingerprint: no module or package {src!r} under {root}")
    skipped = [str(e) for e in skip]
    seen: set[Path] = set()
    while todo:
        f = todo.pop()
        if f in seen or any(str(f) == e or str(f).startswith(e + os.sep) for e in skipped):
            continue
        seen.add(f)
        todo += [g for g in _imports(f, root) if g not in seen]
    return sorted(seen)


def plugin_files() -> list[Path]:
    """The files of the plugin modules (:func:`bfio.ground.plugins.plugin_modules`:
    ``$BFIO_PLUGINS`` and entry points) as a job would import them (found on
    :func:`bfio.ground.plugins.search_path`, not imported here): a module's file, every
    ``.py`` file of a package. A plugin that cannot be found has no file (the
    job reports it)."""
    import importlib.util

    files: list[Path] = []
    with without_implicit_cwd():
        for name in plugin_modules():
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                spec = None
            if spec is None or not spec.origin or not Path(spec.origin).is_file():
                continue
            origin = Path(spec.origin).resolve()
            if spec.submodule_search_locations:  # a package: all its modules
                files += sorted(origin.parent.rglob("*.py"))
            else:
                files.append(origin)
    return list(dict.fromkeys(files))


@lru_cache(maxsize=None)
def _fingerprint(sources: tuple, root: Path, exclude: tuple = ()) -> tuple[str, bool]:
    """The sha256 of the closure's files, and whether the closure loads plugins."""
    h = hashlib.sha256()
    closure = module_closure(sources, root, exclude)
    for f in closure:
        h.update(str(f.relative_to(root)).encode())
        h.update(f.read_bytes())
    return h.hexdigest(), root / "ground" / "plugins.py" in closure


def code_fingerprint(sources, root: Path | None = None, exclude=()) -> str:
    """sha256 (first 16 hex digits) of :func:`module_closure` of ``sources``
    (without ``exclude``): changes exactly when one of the files a job's code
    imports changes. When that code loads plugins (it imports
    :mod:`bfio.ground.plugins`: every policy or study registry read does), the files
    of the plugin modules (:func:`plugin_files`, read anew each call) count
    too, so editing a plugin reruns the jobs it can affect; without plugins the
    fingerprint is the closure's alone."""
    digest, loads_plugins = _fingerprint(tuple(sources), Path(root) if root is not None else ROOT,
                                            tuple(exclude))
    files = plugin_files() if loads_plugins else []
    if not files:
        return digest[:16]
    h = hashlib.sha256(digest.encode())
    for f in files:
        h.update(str(f).encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


__all__ = ["code_fingerprint", "import_statements", "module_closure", "plugin_files"]
