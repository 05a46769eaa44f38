"""Compile time of every numba kernel, and its load time from numba's cache (issue 42).

Two fresh processes share an empty numba cache (``NUMBA_CACHE_DIR`` set to a new
temporary directory, so an existing cache is neither read nor touched):

1. ``compile``: runs ``bfio compile``'s scenarios (:mod:`bfio.pipeline.kernels_warmup`:
   the kernels of runs with default options; ``--all``: every scenario, the
   options' and the theory checks' too, as the pipeline's compile jobs) and times each kernel's compiles (numba's ``numba:compile`` events; a
   kernel's own time, without the callees compiled inside it, in wall and in
   CPU seconds of the process: the CPU time does not grow when other work
   shares the cores), with the argument types of each specialization;
2. ``load``: runs them again in a new process, where every kernel comes from
   the cache, and times each kernel's cache loads.

    python benchmarks/bench_compile.py            # the table of `bfio compile` (about 1 min on 2 cores)
    python benchmarks/bench_compile.py --all      # every kernel (about 1.5 min)
    python benchmarks/bench_compile.py --json out.json

Targets (issue 42): ``bfio compile``, the install step, at most 60 s; a first
BF-IO call in a new process at most 5 s from the cache.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict


def _name(dispatcher) -> str:
    f = dispatcher.py_func
    return f"{f.__module__}.{f.__qualname__}"


def _scenarios(every: bool) -> tuple:
    """``bfio compile``'s scenarios, or with ``every`` all of them."""
    import bfio.pipeline.kernels_warmup as kw

    return kw.SCENARIOS if every else kw.DEFAULT_SCENARIOS


def _record_compiles(every: bool) -> list[dict]:
    """Run the warm-up scenarios and return one record per compiled specialization
    (kernel, argument types, own wall and CPU seconds)."""
    from numba.core import event

    records: list[dict] = []
    stack: list[list] = []  # [wall start, CPU start, child wall, child CPU] of the compiles under way

    class Compiles(event.Listener):
        def on_start(self, ev):
            stack.append([time.perf_counter(), time.process_time(), 0.0, 0.0])

        def on_end(self, ev):
            start, cpu_start, child, child_cpu = stack.pop()
            total = time.perf_counter() - start
            cpu = time.process_time() - cpu_start
            if stack:
                stack[-1][2] += total
                stack[-1][3] += cpu
            records.append({"kernel": _name(ev.data["dispatcher"]), "args": str(ev.data["args"]),
                            "self_s": total - child, "total_s": total, "self_cpu_s": cpu - child_cpu})

    event.register("numba:compile", Compiles())
    from bfio.pipeline.kernels_warmup import warm

    warm(_scenarios(every), stream=sys.stderr)
    return records


def _dispatchers() -> list:
    """Every numba dispatcher defined in a loaded ``bfio`` module."""
    from numba.core.registry import CPUDispatcher

    found = {}
    for mod_name, mod in list(sys.modules.items()):
        if not mod_name.startswith("bfio") or mod is None:
            continue
        for obj in vars(mod).values():
            if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == mod_name:
                found[_name(obj)] = obj
    return list(found.values())


def _record_loads(every: bool) -> list[dict]:
    """Run the warm-up scenarios with every kernel in the cache; one record per
    specialization loaded (kernel, argument types, seconds)."""
    import bfio.pipeline.kernels_warmup as kw

    # import every kernel module first (the scenarios' imports), then time each cache's loads
    kw.warm(scenarios=(), stream=sys.stderr)
    _import_kernel_modules()
    records: list[dict] = []
    for disp in _dispatchers():
        cache = disp._cache
        load = cache.load_overload

        def timed(sig, target_context, _load=load, _name=_name(disp)):
            t = time.perf_counter()
            out = _load(sig, target_context)
            records.append({"kernel": _name, "args": str(sig), "load_s": time.perf_counter() - t,
                            "hit": out is not None})
            return out

        cache.load_overload = timed
    kw.warm(_scenarios(every), stream=sys.stderr)
    return records


def _import_kernel_modules() -> None:
    """Import every ``bfio`` module that defines kernels (so their caches can be timed)."""
    import importlib
    import pathlib

    root = pathlib.Path(importlib.import_module("bfio").__file__).parent
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        if "from bfio.ground.jit import" in text and path.name != "jit.py":
            rel = path.relative_to(root.parent).with_suffix("")
            importlib.import_module(".".join(rel.parts))


def _phase(name: str, cache_dir: str, every: bool) -> tuple[list[dict], float, float]:
    """Run phase ``name`` in a fresh process with ``NUMBA_CACHE_DIR=cache_dir``; its
    records, wall seconds and CPU seconds (user + system of the process)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    t = time.perf_counter()
    before = os.times()
    out = subprocess.run([sys.executable, __file__, "--phase", name] + (["--all"] if every else []), env=env,
                         check=True, capture_output=True, text=True)
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return json.loads(out.stdout), time.perf_counter() - t, cpu


def _table(compiles: list[dict], loads: list[dict]) -> str:
    per = defaultdict(lambda: {"specs": set(), "self_s": 0.0, "self_cpu_s": 0.0, "load_s": 0.0})
    for r in compiles:
        per[r["kernel"]]["specs"].add(r["args"])
        per[r["kernel"]]["self_s"] += r["self_s"]
        per[r["kernel"]]["self_cpu_s"] += r["self_cpu_s"]
    for r in loads:
        per[r["kernel"]]["load_s"] += r["load_s"]
    lines = ["| kernel | specializations | compile (own) CPU s | compile (own) wall s | cache load s |",
             "|---|---|---|---|---|"]
    for k, v in sorted(per.items(), key=lambda kv: -kv[1]["self_cpu_s"]):
        lines.append(f"| `{k}` | {len(v['specs'])} | {v['self_cpu_s']:.2f} | {v['self_s']:.2f} | {v['load_s']:.3f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--phase", choices=("compile", "load"), help=argparse.SUPPRESS)
    p.add_argument("--json", default=None, help="also write the records to this file")
    p.add_argument("--all", action="store_true", help="every scenario (bfio compile --all), not bfio compile's")
    args = p.parse_args(argv)
    if args.phase == "compile":
        json.dump(_record_compiles(args.all), sys.stdout)
        return 0
    if args.phase == "load":
        json.dump(_record_loads(args.all), sys.stdout)
        return 0
    with tempfile.TemporaryDirectory(prefix="bfio-numba-") as cache:
        compiles, t_compile, cpu_compile = _phase("compile", cache, args.all)
        loads, t_load, cpu_load = _phase("load", cache, args.all)
    misses = [r for r in loads if not r["hit"]]
    print(_table(compiles, loads))
    print(f"\nfresh process, empty cache: {t_compile:.1f} s wall, {cpu_compile:.1f} s CPU "
          f"({sum(r['self_s'] for r in compiles):.1f} s wall, {sum(r['self_cpu_s'] for r in compiles):.1f} s CPU "
          f"compiling {len(compiles)} specializations of {len({r['kernel'] for r in compiles})} kernels)")
    print(f"fresh process, from the cache: {t_load:.1f} s wall, {cpu_load:.1f} s CPU "
          f"({sum(r['load_s'] for r in loads):.2f} s loading {len(loads)} specializations; "
          f"{len(misses)} not in the cache)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"compiles": compiles, "loads": loads, "compile_wall_s": t_compile, "load_wall_s": t_load,
                       "compile_cpu_s": cpu_compile, "load_cpu_s": cpu_load,
                       "scenarios": "all" if args.all else "bfio compile"}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
