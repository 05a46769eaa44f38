"""Numba kernels compile once per installation, visibly, and never inside a timing (issue 42).

The fresh-process checks run ``python -c`` with ``NUMBA_CACHE_DIR`` set to an
empty temporary directory: a cold cache, as on a fresh clone, that the next
process finds filled.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numba
import pytest

from bfio.ground import jit
from bfio.cli import main
from bfio.ground.kernel_cache import KERNEL_GROUPS
from bfio.pipeline.kernels_warmup import DEFAULT_SCENARIOS, GROUPS, SCENARIOS

SRC = Path(__file__).resolve().parents[1] / "src"


def kernel_modules() -> list[str]:
    """Every ``bfio`` module that defines kernels (imports :mod:`bfio.ground.jit`'s decorators)."""
    out = []
    for path in sorted((SRC / "bfio").rglob("*.py")):
        if path.name != "jit.py" and re.search(r"^from bfio\.ground\.jit import .*(kernel|helper)", path.read_text(), re.M):
            out.append(".".join(path.relative_to(SRC).with_suffix("").parts))
    return out


def fresh_python(code: str, cache_dir: Path) -> subprocess.CompletedProcess:
    """Run ``code`` in a new interpreter whose numba cache is ``cache_dir``."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), PYTHONPATH=str(SRC))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)


def test_every_kernel_goes_through_bfio_jit():
    """No module decorates with numba directly: ``bfio.ground.jit`` is the one place the
    options (``cache=True``) are set."""
    direct = [str(p.relative_to(SRC)) for p in (SRC / "bfio").rglob("*.py")
              if p.name != "jit.py" and re.search(r"^\s*(from numba import|import numba|@numba\.)", p.read_text(), re.M)]
    assert not direct, f"numba used directly (decorate with bfio.ground.jit.kernel or helper instead): {direct}"


def test_every_kernel_is_cached_on_disk():
    """Every dispatcher defined by the package keeps its specializations in numba's on-disk cache."""
    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher

    found = 0
    for name in kernel_modules():
        mod = importlib.import_module(name)
        for obj in vars(mod).values():
            if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == name:
                found += 1
                assert not isinstance(obj._cache, NullCache), f"{name}.{obj.py_func.__name__} is not cached"
    assert found > 50


def test_run_clock_stands_still_while_numba_compiles():
    @numba.njit
    def fresh(x):  # not cached: compiled here, on the first call
        return x * 2 + 1

    c0, t0, w0 = jit.compile_seconds(), jit.run_clock(), time.perf_counter()
    assert fresh(3) == 7
    compiled, run, wall = jit.compile_seconds() - c0, jit.run_clock() - t0, time.perf_counter() - w0
    assert compiled > 0.01
    assert run < wall - 0.9 * compiled
    c0, t0 = jit.compile_seconds(), jit.run_clock()
    fresh(4)  # compiled: no compile time, the clocks agree
    assert jit.compile_seconds() == c0 and jit.run_clock() - t0 < 0.05


def test_first_compile_prints_one_line_and_the_cache_serves_the_next_process(tmp_path):
    code = ("import numpy as np\n"
            "from bfio.solvers.fenwick import bit_add, bit_prefix\n"
            "bit = np.zeros(9, dtype=np.int64)\n"
            "bit_add(bit, 3, 1); bit_add(bit, 5, 1)\n"
            "print(bit_prefix(bit, 4))\n")
    first = fresh_python(code, tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "1"
    assert first.stderr.count("bfio: compiling numba kernels") == 1, first.stderr
    assert len(first.stderr.strip().splitlines()) == 1, first.stderr
    second = fresh_python(code, tmp_path)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "1" and "compiling" not in second.stderr, second.stderr


def test_a_first_run_in_a_fresh_process_does_not_time_the_compile(tmp_path):
    """JSQ's routing kernel compiles inside its first routing call; route_s_* leave it out."""
    code = ("import json, numpy as np\n"
            "from bfio.ground import jit\n"
            "from bfio.simulator import simulate\n"
            "from bfio.workloads.workload import Workload\n"
            "rng = np.random.default_rng(0)\n"
            "w = Workload(rng.integers(1, 500, 60), rng.integers(1, 40, 60))\n"
            "m = simulate(w, 4, 3, 'jsq_tokens', show_progress=False).metrics\n"
            "print(json.dumps({'route': m['route_s_total'], 'compiled': jit.compile_seconds()}))\n")
    out = fresh_python(code, tmp_path)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["compiled"] > 0.3, got
    assert got["route"] < 0.1 * got["compiled"], got


def test_warmup_groups_are_named_and_cover_every_scenario():
    assert set(GROUPS) == {"simulation", "theory"}
    assert tuple(GROUPS) == KERNEL_GROUPS  # the workflow lists the compile jobs from the light module
    assert SCENARIOS == tuple(sc for group in GROUPS.values() for sc in group)
    assert len({sc.name for sc in SCENARIOS}) == len(SCENARIOS)


def test_bfio_compile_compiles_the_default_runs_kernels_and_all_every_one(monkeypatch, capsys):
    """Lazy compilation of the rarely used paths (issue 42): ``bfio compile`` warms the
    scenarios runs with default options reach, ``--all`` every one, ``--group`` (the
    pipeline's compile jobs) the whole group."""
    import bfio.pipeline.kernels_warmup as kw

    assert DEFAULT_SCENARIOS and set(DEFAULT_SCENARIOS) < set(SCENARIOS)
    assert DEFAULT_SCENARIOS[0].name == "every policy (central and instant dispatch)"
    assert not any(sc.default for sc in GROUPS["theory"])  # the theory checks: the pipeline's only
    warmed = []
    monkeypatch.setattr(kw, "warm", lambda scenarios, stream=None: warmed.append(tuple(scenarios)) or 0.0)
    assert main(["compile"]) == 0
    assert main(["compile", "--all"]) == 0
    assert main(["compile", "--group", "simulation"]) == 0
    assert warmed == [DEFAULT_SCENARIOS, SCENARIOS, GROUPS["simulation"]]
    err = capsys.readouterr().err
    assert "bfio compile: the kernels of runs with default options ready in" in err
    assert err.count("compile on their first use") == 1 and "bfio compile: every kernel ready in" in err


def test_bfio_compile_writes_its_marker(tmp_path, capsys):
    marker = tmp_path / "kernels" / "theory.compiled"
    assert main(["compile", "--group", "theory", "--marker", str(marker)]) == 0
    err = capsys.readouterr().err
    assert "bfio compile: theory checks" in err and "theory kernels ready" in err
    assert marker.read_text().startswith("bfio compile: theory kernels ready in")


def test_compile_is_a_subcommand(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "compile" in capsys.readouterr().out


def test_the_kernel_cache_is_named_by_the_kernels_sources(tmp_path):
    """numba re-checks a kernel's own file, not its callees' (an edit to a callee in
    another file left the callers' stale code in the cache): the cache directory is
    named by a digest of every kernel module and the package modules they import,
    so editing any of them moves to a fresh cache; other modules do not."""
    from bfio.ground.kernel_cache import kernel_cache_dir, kernel_sources_digest

    pkg = tmp_path / "bfio"
    (pkg / "solvers").mkdir(parents=True)
    (pkg / "ground").mkdir()
    (pkg / "ground" / "jit.py").write_text("def kernel(f):\n    return f\n")
    (pkg / "ground" / "limits.py").write_text("MAX = 10\n")
    (pkg / "solvers" / "callee.py").write_text("from bfio.ground.limits import MAX\n\n\n@kernel\ndef g(x):\n    return x + MAX\n")
    (pkg / "solvers" / "caller.py").write_text("from bfio.solvers.callee import g\n\n\n@kernel\ndef f(x):\n    return g(x)\n")
    (pkg / "figures.py").write_text("TITLE = 'a'\n")
    first = kernel_sources_digest(pkg)
    (pkg / "figures.py").write_text("TITLE = 'b'\n")
    assert kernel_sources_digest(pkg) == first  # not a kernel's source
    for path, text in (("solvers/callee.py", "from bfio.ground.limits import MAX\n\n\n@kernel\ndef g(x):\n    return x - MAX\n"),
                       ("ground/limits.py", "MAX = 11\n")):
        before = kernel_sources_digest(pkg)
        (pkg / path).write_text(text)
        assert kernel_sources_digest(pkg) != before, path
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    assert kernel_cache_dir(env, pkg) == str(tmp_path / "cache" / f"bfio-{kernel_sources_digest(pkg)}")
    assert kernel_cache_dir({"XDG_CACHE_HOME": "/x"}, pkg).startswith("/x/bfio/numba/bfio-")


def test_a_group_is_ready_while_its_cache_files_and_versions_hold(tmp_path, monkeypatch):
    """The pipeline's compile job has nothing to do while a group's ready file holds:
    every cache file it lists still there, written by this numba, Python and machine."""
    import json

    import bfio.ground.kernel_cache as kc

    cache = tmp_path / "bfio-0123"
    assert not kc.group_ready("simulation", str(cache))  # nothing compiled yet
    sub = kc.numba_subdirs()[0]
    (cache / sub).mkdir(parents=True)
    (cache / "elsewhere_0123").mkdir()  # another checkout's entries: not this one's
    for name in ("f-1.py311.nbi", "f-1.py311.0.nbc"):
        (cache / sub / name).write_bytes(b"x")
        (cache / "elsewhere_0123" / name).write_bytes(b"x")
    path = kc.mark_group_ready("simulation", str(cache))
    assert path == kc.ready_file("simulation", str(cache)) and kc.group_ready("simulation", str(cache))
    assert path.name.startswith("simulation.") and path.name.endswith(".ready.json")
    assert not kc.group_ready("theory", str(cache))  # another group's kernels: not recorded
    assert sorted(json.loads(path.read_text())["files"]) == [f"{sub}/f-1.py311.0.nbc", f"{sub}/f-1.py311.nbi"]
    monkeypatch.setattr(kc, "version", lambda name: "0.0.1")  # another numba: its cache entries do not count
    assert not kc.group_ready("simulation", str(cache))
    monkeypatch.undo()
    (cache / sub / "f-1.py311.0.nbc").unlink()  # a cleared or partial cache
    assert not kc.group_ready("simulation", str(cache))
    path.write_text("{not json")
    assert not kc.group_ready("simulation", str(cache))


def test_the_ready_files_subdirectories_are_where_numba_caches_each_kernel():
    """numba files a kernel under a subdirectory named by its source directory's path
    (issue 42): kernel_cache.numba_subdirs names the same ones, for every kernel."""
    import bfio.ground.kernel_cache as kc
    from numba.core.dispatcher import Dispatcher

    subdirs = set(kc.numba_subdirs())
    seen = set()
    for name in kernel_modules():
        for obj in vars(importlib.import_module(name)).values():
            if isinstance(obj, Dispatcher) and obj.__module__ == name:
                seen.add(os.path.basename(obj._cache._cache_path))
    assert seen and seen == subdirs, (seen, subdirs)


def test_a_ready_file_speaks_for_its_own_checkout_only(tmp_path):
    """Two checkouts of the same kernel sources (a clone and a worktree, or the
    editable install and a worktree on PYTHONPATH) share numba's cache directory
    but not its entries (numba names them by the source's path): a group marked
    ready by one is not ready for the other, whose kernels numba compiles again.
    (One shared ready file had a fresh clone's compile jobs skip while its
    simulation jobs compiled.)"""
    import shutil

    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):
        shutil.copytree(SRC / "bfio", root / "bfio", ignore=shutil.ignore_patterns("__pycache__"))
    cache = tmp_path / "cache"

    def run(root, code):
        env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(root))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        return out

    kernel = ("import numpy as np\n"
              "from bfio.solvers.fenwick import bit_add\n"
              "bit_add(np.zeros(9, dtype=np.int64), 3, 1)\n")
    ready = "from bfio.ground.kernel_cache import group_ready\nprint(group_ready('probe'))\n"
    first = run(a, kernel + "from bfio.ground.kernel_cache import mark_group_ready\nmark_group_ready('probe')\n")
    assert "bfio: compiling numba kernels" in first.stderr
    assert run(a, kernel + ready).stdout.split() == ["True"]  # a's own entries: loaded, not compiled
    assert run(b, ready).stdout.split() == ["False"]  # same digest, same cache directory, other path
    assert "bfio: compiling numba kernels" in run(b, kernel).stderr  # numba indeed compiles b's again
