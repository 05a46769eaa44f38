"""Where numba keeps the package's kernels, and whether a group of them is there
already (issue 42).

:func:`kernel_cache_dir` names numba's on-disk cache by a digest of the kernels'
sources (:func:`kernel_sources_digest`): numba re-checks a kernel's own file but
not the files of the kernels it calls, so an edit to a callee would otherwise
leave its callers' stale machine code in the cache. :mod:`bfio.ground.jit` sets numba's
cache there.

A group of kernels (:data:`bfio.pipeline.kernels_warmup.GROUPS`) compiled by ``bfio
compile --group``/``--all`` or the pipeline's rule ``compile_kernels`` leaves a
ready file in that directory (:func:`mark_group_ready`): numba's and Python's
versions, the machine, the checkout's package directory and the cache files
numba keeps for that checkout. While it holds (:func:`group_ready`: same
versions and machine, every file still there), the pipeline's compile job has
nothing to do and ends without importing numba or the simulator: on a warm
cache a first look no longer loads every kernel in two jobs that every
simulation waits for. This module imports neither.

**One ready file per checkout.** numba files a kernel's cache entries under a
subdirectory named by the *path* of the kernel's source directory
(:func:`numba_subdirs`), not by its contents; two checkouts of the same kernel
sources (a clone and its worktrees, ``/work/main`` and a worktree on
``PYTHONPATH``, a fresh clone in a temporary directory) share the cache
directory (same digest) but not each other's entries. A ready file written by
one checkout therefore says nothing about another's: it is named by the
package directory (:func:`ready_file`) and lists only that checkout's
subdirectories' files. (One ready file per group, shared by every checkout,
had the compile jobs of a fresh clone or worktree skip compiling on another
checkout's word while the simulation jobs compiled the kernels, in parallel.)
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import sys
from importlib.metadata import version
from pathlib import Path

#: A line of a module that defines a kernel (:func:`bfio.ground.jit.kernel` or :func:`bfio.ground.jit.helper`).
_DEFINES_KERNEL = re.compile(rb"^@(kernel|helper)\b", re.MULTILINE)
#: A module the kernels' module imports from the package (its constants are frozen into the kernels).
_IMPORTS = re.compile(rb"^from (bfio(?:\.\w+)*) import", re.MULTILINE)


#: The groups of kernels, each compiled by a pipeline job of its own (their
#: scenarios: :data:`bfio.pipeline.kernels_warmup.GROUPS`, keyed by these). Here,
#: in a module without numba, so that the workflow lists the compile jobs when it
#: starts without importing the simulator (0.3 s of its start, issue 42).
SIMULATION_KERNELS = "simulation"
THEORY_KERNELS = "theory"
KERNEL_GROUPS = (SIMULATION_KERNELS, THEORY_KERNELS)


def package_root(root: Path | None = None) -> Path:
    """The package directory: ``root``, else the imported ``bfio``'s (the one on
    ``PYTHONPATH`` in a worktree, not the editable install's)."""
    return Path(root) if root is not None else Path(__file__).parents[1]


def kernel_modules(root: Path | None = None) -> list[Path]:
    """The modules of the package at ``root`` that define a kernel: the files numba
    caches kernels of."""
    root = package_root(root)
    return [path for path in sorted(root.rglob("*.py")) if _DEFINES_KERNEL.search(path.read_bytes())]


def numba_subdirs(root: Path | None = None) -> list[str]:
    """The subdirectories of the cache directory where numba keeps the kernels of the
    package at ``root``: one per directory holding a kernel module, named
    ``<directory name>_<sha1 of its absolute path>`` (numba's
    ``_CacheLocator.get_suitable_cache_subpath``; a test checks the two agree), so a
    checkout at another path has other subdirectories."""
    dirs = {os.path.dirname(os.path.abspath(path)) for path in kernel_modules(root)}
    return sorted(f"{os.path.basename(d)}_{hashlib.sha1(d.encode()).hexdigest()}" for d in dirs)


def kernel_sources_digest(root: Path | None = None) -> str:
    """A digest of every module of the package at ``root`` that defines a kernel,
    of the package modules those import (numba freezes their module-level
    constants into the machine code) and of :mod:`bfio.ground.jit`: it changes whenever the
    code any cached kernel was compiled from may have changed."""
    root = package_root(root)
    files = set()
    jit = root / "ground" / "jit.py"
    for path in {*kernel_modules(root), *([jit] if jit.is_file() else [])}:
        files.add(path)
        for module in _IMPORTS.findall(path.read_bytes()):
            rel = Path(*module.decode().split(".")[1:])
            for cand in (root / rel.with_suffix(".py"), root / rel / "__init__.py"):
                if cand.is_file():
                    files.add(cand)
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def kernel_cache_dir(environ=None, root: Path | None = None) -> str:
    """Where numba keeps the kernels: ``$NUMBA_CACHE_DIR`` (else
    ``$XDG_CACHE_HOME/bfio/numba``, else ``~/.cache/bfio/numba``) / ``bfio-<digest>``
    (:func:`kernel_sources_digest`), so a checkout whose kernel sources changed
    (an edit, a ``git pull``) compiles afresh instead of loading stale code."""
    env = os.environ if environ is None else environ
    base = env.get("NUMBA_CACHE_DIR") or os.path.join(
        env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "bfio", "numba")
    return os.path.join(base, f"bfio-{kernel_sources_digest(root)}")


def _checkout_id(root: Path | None = None) -> str:
    """A short name of the package directory at ``root`` (its absolute path, as numba reads it)."""
    return hashlib.sha1(os.path.abspath(package_root(root)).encode()).hexdigest()[:12]


def ready_file(group: str, cache_dir: str | None = None, root: Path | None = None) -> Path:
    """The ready file of kernel group ``group`` for the checkout whose package is at
    ``root`` (default: the imported one), in the cache (:func:`kernel_cache_dir`)."""
    return Path(cache_dir or kernel_cache_dir(root=root)) / f"{group}.{_checkout_id(root)}.ready.json"


def _cache_state(cache_dir: Path, root: Path | None = None) -> dict:
    """What a ready file holds: the versions the cache entries were compiled with, the
    package directory and every cache file now in its numba subdirectories
    (:func:`numba_subdirs`; paths relative to ``cache_dir``)."""
    files = sorted(str(p.relative_to(cache_dir)) for sub in numba_subdirs(root) for p in (cache_dir / sub).rglob("*")
                   if p.is_file())
    return {"numba": version("numba"), "python": list(sys.version_info[:2]), "machine": platform.machine(),
            "package": os.path.abspath(package_root(root)), "files": files}


def mark_group_ready(group: str, cache_dir: str | None = None, root: Path | None = None) -> Path:
    """Record that every kernel of ``group`` is in the cache for the checkout at ``root``
    (called once its scenarios ran)."""
    path = ready_file(group, cache_dir, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(_cache_state(path.parent, root)))
    tmp.replace(path)
    return path


def group_ready(group: str, cache_dir: str | None = None, root: Path | None = None) -> bool:
    """Whether ``group``'s kernels are in the cache for the checkout at ``root``: its
    ready file exists, was written with this numba, Python and machine for this
    package directory, and lists cache files of it that are all still there (a
    cleared or partial cache, another numba or another checkout's entries mean
    compiling again)."""
    path = ready_file(group, cache_dir, root)
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(state, dict):
        return False
    if (state.get("numba"), state.get("python"), state.get("machine"), state.get("package")) != (
            version("numba"), list(sys.version_info[:2]), platform.machine(), os.path.abspath(package_root(root))):
        return False
    files = state.get("files")
    return isinstance(files, list) and bool(files) and all((path.parent / f).is_file() for f in files)


__all__ = ["KERNEL_GROUPS", "SIMULATION_KERNELS", "THEORY_KERNELS", "package_root", "kernel_modules", "numba_subdirs", "kernel_sources_digest", "kernel_cache_dir", "ready_file", "mark_group_ready", "group_ready"]
