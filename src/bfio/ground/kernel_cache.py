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
versions, the machine and every cache file then present. While it holds
(:func:`group_ready`: same versions and machine, every file still there), the
pipeline's compile job has nothing to do and ends without importing numba or
the simulator: on a warm cache a first look no longer loads every kernel in two
jobs that every simulation waits for. This module imports neither.
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


def kernel_sources_digest(root: Path | None = None) -> str:
    """A digest of every module of the package at ``root`` that defines a kernel,
    of the package modules those import (numba freezes their module-level
    constants into the machine code) and of :mod:`bfio.ground.jit`: it changes whenever the
    code any cached kernel was compiled from may have changed."""
    root = Path(root) if root is not None else Path(__file__).parents[1]
    files = set()
    for path in sorted(root.rglob("*.py")):
        text = path.read_bytes()
        if _DEFINES_KERNEL.search(text) or path == root / "ground" / "jit.py":
            files.add(path)
            for module in _IMPORTS.findall(text):
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


def ready_file(group: str, cache_dir: str | None = None) -> Path:
    """The ready file of kernel group ``group`` in the cache (:func:`kernel_cache_dir`)."""
    return Path(cache_dir or kernel_cache_dir()) / f"{group}.ready.json"


def _cache_state(cache_dir: Path) -> dict:
    """What a ready file holds: the versions the cache entries were compiled with and
    every cache file now in the directory (relative paths)."""
    files = sorted(str(p.relative_to(cache_dir)) for p in cache_dir.rglob("*")
                   if p.is_file() and not p.name.endswith(".ready.json"))
    return {"numba": version("numba"), "python": list(sys.version_info[:2]), "machine": platform.machine(),
            "files": files}


def mark_group_ready(group: str, cache_dir: str | None = None) -> Path:
    """Record that every kernel of ``group`` is in the cache (called once its scenarios ran)."""
    path = ready_file(group, cache_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(_cache_state(path.parent)))
    tmp.replace(path)
    return path


def group_ready(group: str, cache_dir: str | None = None) -> bool:
    """Whether ``group``'s kernels are in the cache: its ready file exists, was written
    with this numba, Python and machine, and every cache file it lists is still there
    (a cleared or partial cache, or another numba, means compiling again)."""
    path = ready_file(group, cache_dir)
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(state, dict):
        return False
    if (state.get("numba"), state.get("python"), state.get("machine")) != (
            version("numba"), list(sys.version_info[:2]), platform.machine()):
        return False
    files = state.get("files")
    return isinstance(files, list) and bool(files) and all((path.parent / f).is_file() for f in files)


__all__ = ["kernel_sources_digest", "kernel_cache_dir", "ready_file", "mark_group_ready", "group_ready"]
