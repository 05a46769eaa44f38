"""Compile the numba kernels once, into numba's on-disk cache (``bfio compile``).

``python -m bfio.pipeline.kernels_warmup`` (or ``bfio compile``) runs tiny simulations
that reach the package's kernels with the argument types real runs give them
(:data:`SCENARIOS`: every registered policy under each dispatch it supports,
BF-IO's placements, admissions, objectives and predictors, arrivals, closed
loops, DyntraLB's pause planner, prefill and prefix caches, the calibrated
step model, the theory checks' slot model). Each kernel is compiled the first time and kept in numba's cache
(:mod:`bfio.ground.jit`), so every later process, a pipeline job or a ``bfio
simulate``, loads it instead of compiling it. A second run only loads (a few
seconds).

Lazy compilation of the rarely used paths (issue 42): ``bfio compile``, the
README's install step, compiles the kernels of runs with default options
(:data:`DEFAULT_SCENARIOS`: every policy under each dispatch, BF-IO's defaults
including the paths they take at scale; under a minute on 2 cores, measured by
``benchmarks/bench_compile.py``); the kernels only some options reach (BF-IO's
other placements, admissions, objectives and predictors, prefill and prefix
caches, the calibrated step model, the theory checks) compile on their first
use, with :mod:`bfio.ground.jit`'s one-line note, or up front with ``bfio compile
--all``. The pipeline compiles every kernel of a group in its first job (rule
``compile_kernels``, ``--group``), which every job of the group waits for, so
parallel jobs never compile the same kernels at once.

The scenarios read nothing from disk (but the calibrated step model's, which
reads the kernel profiles of the data directory when they are there and is
skipped otherwise) and leave no state behind: their workloads are drawn from
fixed synthetic lengths.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bfio.ground.errors import ProfileError
from bfio.ground.jit import compile_seconds
from bfio.ground.kernel_cache import SIMULATION_KERNELS, THEORY_KERNELS, mark_group_ready
from bfio.policies import available, policy_class
from bfio.policies.names import KV_WAYS
from bfio.engine.prefill import PrefillModel
from bfio.workloads.sessions import grpo_groups, multi_turn_sessions
from bfio.simulator import simulate
from bfio.step_model import StepModel
from bfio.workloads.workload import Workload, draw_workload, poisson_arrivals

#: Requests in a scenario's workload: enough for every solver phase to run (waiting > free slots).
REQUESTS = 48
WORKERS = 4
SLOTS = 3


@dataclass(frozen=True)
class Scenario:
    """One tiny run that reaches some kernels; ``run()`` returns nothing.
    ``default``: a run with default options reaches them (``bfio compile``
    compiles these; the others compile on first use or with ``--all``)."""

    name: str
    run: Callable[[], None]
    default: bool = False


def _workload(arrivals: bool = False, blocks: bool = False, n: int = REQUESTS):
    """``n`` requests with fixed synthetic lengths (int64, as a trace's), optional
    Poisson arrivals and prompt block hashes."""
    rng = np.random.default_rng(7)
    prefill = rng.integers(16, 2_000, 200).astype(np.int64)
    decode = rng.integers(1, 60, 200).astype(np.int64)
    if blocks:
        return grpo_groups(prefill, decode, groups=n // 8, group_size=8, seed=1, block_tokens=64,
                           group_rate_per_s=50.0)
    w = draw_workload(prefill, decode, n, seed=1)
    if arrivals:
        w = Workload(w.prefill, w.decode, poisson_arrivals(n, 200.0, 1), name=w.name)
    return w


def _simulate(policy: str, *, dispatch: str = "central", entry: str = "backlog", prefill=None, workload=None,
              **options) -> None:
    w = workload if workload is not None else _workload(arrivals=entry == "arrivals")
    simulate(w, WORKERS, SLOTS, policy, dispatch=dispatch, entry=entry, prefill=prefill, policy_options=options,
             show_progress=False, record_loads=True)


def _every_policy() -> None:
    """Every registered policy that needs nothing beyond the paper's state, under each dispatch it supports."""
    for name in available():
        cls = policy_class(name)
        if getattr(cls, "requires", ()):
            continue
        for dispatch in getattr(cls, "dispatch_modes", ("central",)):
            entry = "arrivals" if dispatch == "instant" else "backlog"
            _simulate(name, dispatch=dispatch, entry=entry)


def _bfio_defaults_at_scale() -> None:
    """BF-IO with its default options on the paths a large run takes: ``auto``
    placement's heap, ``drain:N``'s due requests, shards above ``shard_workers``
    workers with free slots, and arrivals under central dispatch."""
    _simulate("bfio", admission="drain:4")
    _simulate("bfio", admission="drain:4", placement="heap")
    _simulate("bfio", admission="drain:4", shard_workers=2)
    _simulate("bfio", entry="arrivals")
    _simulate("fcfs", entry="arrivals")


def _bfio_central() -> None:
    """BF-IO's central routing under its other options: admissions, objectives, placements, predictors."""
    for options in ({"horizon": 20, "admission": "free"}, {"horizon": 0, "admission": "free"},
                    {"horizon": 20, "admission": "fifo"},
                    {"horizon": 10, "admission": "free", "objective": "paper-literal"},
                    {"horizon": 10, "admission": "free", "discount": 0.5, "new_requests": "persist"},
                    {"horizon": 20, "admission": "free", "placement": "heap"},
                    {"horizon": 20, "admission": "free", "placement": "auto"},
                    {"horizon": 20, "admission": "free", "predictor": "noisy"},
                    {"horizon": 20, "admission": "free", "predictor": "lognormal"},
                    {"horizon": 20, "admission": "free", "predictor": "bucket"},
                    {"horizon": 20, "admission": "free", "predictor": "empirical"},
                    {"horizon": 20, "admission": "free", "predictor": "geometric"},
                    {"horizon": 20, "admission": "free", "predictor": "prompt_survival"},
                    {"horizon": 20, "admission": "free", "predictor": "empirical", "placement": "heap"}):
        _simulate("bfio", **options)
    _simulate("bfio", entry="arrivals", horizon=20, admission="free")


def _bfio_instant() -> None:
    """BF-IO's instant dispatch (binding arrivals to worker queues)."""
    _simulate("bfio", dispatch="instant", entry="arrivals", horizon=20)


def _prefill_and_prefix() -> None:
    """The prefill step model, prefix caches and KV-bounded admission, with the policies that need them."""
    w = _workload(blocks=True)
    cache = PrefillModel(chunk_tokens=256, cache_blocks=64)
    for name in available():
        for dispatch in getattr(policy_class(name), "dispatch_modes", ("central",)):
            if name == "bfio":
                _simulate(name, dispatch=dispatch, entry="arrivals", prefill=cache, workload=w, horizon=20)
            elif getattr(policy_class(name), "requires", ()) or name == "fcfs":
                _simulate(name, dispatch=dispatch, entry="arrivals", prefill=cache, workload=w)
    _simulate("vllm_dp", dispatch="instant", entry="arrivals", workload=w,
              prefill=PrefillModel(chunk_tokens=256, kv_tokens=4_000))


def _rank_pauses() -> None:
    """DyntraLB's planner (issue 45, :mod:`bfio.sim.pause`): a plan every step."""
    simulate(_workload(arrivals=True), WORKERS, SLOTS, "vllm_dp", dispatch="instant", entry="arrivals",
             rank_pause="dyntra_lb", rank_pause_options={"mode": "static", "start_step": 0}, show_progress=False)


def _calibrated() -> StepModel | None:
    """The calibrated step model (issue 44), or ``None`` when its kernel profiles are
    not in the data directory (the scenarios that need it then run without it or skip)."""
    try:
        StepModel("calibrated").coefficients()
    except ProfileError:
        return None
    return StepModel("calibrated")


def _migrations() -> None:
    """BF-IO's migration planner (issue 45, :mod:`bfio.solvers.migration_plan`), with
    queue moves beside it; then each way of moving the KV (:data:`bfio.policies.names.KV_WAYS`)
    in the actions study's regime (the prefill model with a KV bound and vLLM's preemption,
    the calibrated step when its profiles are in the data directory): the kernels that price
    a recompute, a transfer and the choice between them, which the pipeline's study jobs
    otherwise compiled on their first use."""
    w = _workload(arrivals=True)
    simulate(w, WORKERS, SLOTS, "bfio", dispatch="instant", entry="arrivals",
             policy_options={"horizon": 20}, queue_moves="bfio", migration="bfio",
             migration_options={"kv": "transfer", "cost_weight": 0.0}, show_progress=False)
    step = _calibrated()
    for kv in KV_WAYS:
        simulate(w, WORKERS, SLOTS, "bfio", dispatch="instant", entry="arrivals",
                 policy_options={"horizon": 20, "predictor": "prompt_survival"}, migration="bfio",
                 migration_options={"kv": kv, "cost_weight": 0.0}, step_model=step, show_progress=False,
                 prefill=PrefillModel(chunk_tokens=256, kv_tokens=4_000, preemption="vllm"))


def _closed_loop() -> None:
    """Closed-loop sessions (a request follows another's completion)."""
    rng = np.random.default_rng(7)
    w = multi_turn_sessions(rng.integers(16, 2_000, 200), rng.integers(1, 60, 200), sessions=8, turns=3, seed=1,
                            block_tokens=64)
    _simulate("fcfs", entry="arrivals", workload=w)
    _simulate("bfio", entry="arrivals", workload=w, horizon=20, admission="free")


def _calibrated_step() -> None:
    """The calibrated step model (issue 44): lockstep and independent ranks, each with
    and without prefill; skipped when the kernel profiles are not in the data directory."""
    w = _workload(arrivals=False)
    if _calibrated() is None:
        return
    for barrier, prefill in (("lockstep", None), ("lockstep", PrefillModel()), ("independent", None),
                             ("independent", PrefillModel())):
        simulate(w, WORKERS, SLOTS, "fcfs", prefill=prefill, show_progress=False, record_loads=True,
                 step_model=StepModel("calibrated", barrier=barrier))


def _theory() -> None:
    """The theory checks' kernels: the slot model (FCFS and BF-IO's balanced placement)."""
    # local: `bfio --help` builds this module's parser; the theory checks load when their kernels compile
    from bfio.theory.distributions import uniform
    from bfio.theory.drift import make_drift
    from bfio.theory.slot_model import run_slot_model

    run_slot_model(uniform(100), 4, 3, 0.3, make_drift({"kind": "zero"}, 100), seed=1, n_batches=2)


#: The scenarios by group: each group reaches its own kernels (the theory checks'
#: live in :mod:`bfio.theory` and share none with the simulator's), so the
#: pipeline compiles the groups in two jobs that may run at once: two processes
#: that compile the *same* kernel at once can corrupt numba's cache index.
GROUPS = {
    SIMULATION_KERNELS: (
        Scenario("every policy (central and instant dispatch)", _every_policy, default=True),
        Scenario("BF-IO's defaults at scale (heap, drain, shards, arrivals)", _bfio_defaults_at_scale, default=True),
        Scenario("BF-IO instant dispatch", _bfio_instant, default=True),
        Scenario("BF-IO central options (placements, admissions, objectives, predictors)", _bfio_central),
        Scenario("prefill, prefix caches, KV bound", _prefill_and_prefix),
        Scenario("closed-loop sessions", _closed_loop),
        Scenario("rank pauses (DyntraLB's planner)", _rank_pauses),
        Scenario("migrations (BF-IO's planner)", _migrations),
        Scenario("calibrated step model (lockstep, independent ranks)", _calibrated_step),
    ),
    THEORY_KERNELS: (Scenario("theory checks (slot model)", _theory),),
}
#: Every scenario, in the order :func:`warm` runs them.
SCENARIOS = tuple(sc for group in GROUPS.values() for sc in group)
#: The scenarios a run with default options reaches: what ``bfio compile`` compiles.
DEFAULT_SCENARIOS = tuple(sc for sc in SCENARIOS if sc.default)


def warm(scenarios=SCENARIOS, stream=None) -> float:
    """Run ``scenarios`` (compiling or loading every kernel they reach), one line on
    ``stream`` (default ``sys.stderr``) each; returns the seconds taken."""
    stream = sys.stderr if stream is None else stream
    t0 = time.perf_counter()
    for sc in scenarios:
        t = time.perf_counter()
        sc.run()
        print(f"bfio compile: {sc.name}: {time.perf_counter() - t:.1f} s", file=stream, flush=True)
    return time.perf_counter() - t0


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The options of ``bfio compile`` / ``python -m bfio.pipeline.kernels_warmup``."""
    p = parser or argparse.ArgumentParser(prog="python -m bfio.pipeline.kernels_warmup", description=__doc__.split("\n")[0])
    p.add_argument("--group", choices=sorted(GROUPS), action="append", default=None,
                   help="compile every kernel of this group (repeatable; the pipeline's compile jobs)")
    p.add_argument("--all", action="store_true",
                   help="compile every kernel, the options' too (default: those of runs with default options; "
                        "the others compile on first use, saying so in one line)")
    p.add_argument("--marker", type=Path, default=None,
                   help="write this file once the kernels are compiled (the pipeline's rule compile_kernels)")
    return p


def run(args: argparse.Namespace) -> int:
    """Compile (or load) the kernels of ``args.group`` (every scenario of those
    groups), of every group with ``args.all``, else of :data:`DEFAULT_SCENARIOS`;
    mark each whole group run ready in the cache (:func:`bfio.ground.kernel_cache.mark_group_ready`);
    write ``args.marker`` if given."""
    if args.group:
        what, scenarios = f"{', '.join(args.group)} kernels", tuple(sc for g in args.group for sc in GROUPS[g])
    elif getattr(args, "all", False):
        what, scenarios = "every kernel", SCENARIOS
    else:
        what, scenarios = "the kernels of runs with default options", DEFAULT_SCENARIOS
    total = warm(scenarios)
    line = (f"bfio compile: {what} ready in {total:.1f} s "
            f"({compile_seconds():.1f} s compiling them or loading them from numba's cache)")
    print(line, file=sys.stderr, flush=True)
    if not args.group and not getattr(args, "all", False):
        print("bfio compile: the kernels only some options use compile on their first use (one line says so), "
              "or now with `bfio compile --all`", file=sys.stderr, flush=True)
    for group in args.group or (GROUPS if getattr(args, "all", False) else ()):
        mark_group_ready(group)  # every kernel of the group is in the cache: later compile jobs have nothing to do
    if args.marker is not None:
        args.marker.parent.mkdir(parents=True, exist_ok=True)
        args.marker.write_text(line + "\n")
    return 0


def main(argv=None) -> int:
    return run(build_parser().parse_args(argv))


__all__ = ["Scenario", "GROUPS", "SCENARIOS", "DEFAULT_SCENARIOS", "warm", "build_parser", "run", "main"]


if __name__ == "__main__":
    sys.exit(main())
