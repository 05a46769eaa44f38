"""A run simulated: its workload (:func:`build_workload`) and its simulation
(:func:`simulate_run`, :func:`run_study`, :func:`run_batch`); what a run *is*
(:class:`bfio.runs.run.RunSpec`) is :mod:`bfio.runs.run`'s.

Apart from :mod:`bfio.runs.run` (issue 42) so that what only describes runs (the
pipeline's rules, the studies' registry, tables and figures) starts without the
simulator and numba; the CLI, the paper experiments, every study and the
notebook run a simulation through this module.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from bfio.workloads import workload as wl
from bfio.ground.errors import ConfigError
from bfio.engine.prefill import PrefillModel
from bfio.engine.prefix import PrefixBlocks
from bfio.ground.progress import progress, progress_line
from bfio.runs.run import RunSpec
from bfio.simulator import simulate
from bfio.traces.registry import KNOWN_TRACES
from bfio.ground.arrival_modes import entry_mode


def prefill_model(run: RunSpec):
    """``run``'s :class:`bfio.engine.prefill.PrefillModel`, or ``None`` (the paper's step loop)."""
    return PrefillModel(**dict(run.prefill)) if run.prefill else None


def frame_blocks(trace: str, frame: pd.DataFrame):
    """The prompts' block hashes of a canonical trace table (its ``block_hashes``
    column, written for traces with a hash column; blocks of the table's
    ``attrs["block_tokens"]`` tokens, else the known trace's), or ``None``."""
    if "block_hashes" not in frame:
        return None

    spec = KNOWN_TRACES.get(trace)
    block_tokens = frame.attrs.get("block_tokens") or (spec.block_tokens if spec is not None else None)
    if not block_tokens:
        raise ConfigError(f"trace '{trace}': a block_hashes column needs the trace's block size (a known trace "
                          "with block_tokens, or the table's attrs['block_tokens'] from --block-tokens)")
    return PrefixBlocks.from_lists(frame["block_hashes"], block_tokens)


def build_workload(run: RunSpec, frame: pd.DataFrame):
    """The workload of ``run`` from a canonical trace table (``prefill_tokens``,
    ``decode_tokens`` [, ``arrival_s``])."""
    s = frame["prefill_tokens"].to_numpy()
    o = frame["decode_tokens"].to_numpy()
    blocks = frame_blocks(run.trace, frame)
    mode = run.arrival.mode
    if mode == "trace":
        if "arrival_s" not in frame:
            raise ConfigError(f"arrival.mode: trace '{run.trace}' has no arrival times; use backlog or poisson")
        if run.requests is not None and run.requests > len(frame):
            raise ConfigError(f"requests: trace '{run.trace}' has {len(frame)} rows, a replay of {run.requests} "
                              "requests would need more (a replay uses the trace's own rows, no resampling)")
        n = run.requests if run.requests is None or run.requests < len(frame) else None
        return wl.replay_workload(s, o, frame["arrival_s"].to_numpy(dtype=float), n=n,
                                  seed=run.seed if n is not None else None,
                                  time_scale=run.arrival.time_scale, name=run.trace, blocks=blocks)
    work = wl.draw_workload(s, o, run.requests, run.seed, name=run.trace, blocks=blocks)
    if mode == "poisson":
        work = wl.with_arrivals(work, wl.poisson_arrivals(run.requests, run.arrival.rate, run.seed))
    return work


def simulate_run(run: RunSpec, frame: pd.DataFrame | None = None, *, workload=None, record_loads: bool = False,
                 show_progress: bool | None = False):
    """Simulate ``run``: its workload (:func:`build_workload` on trace table
    ``frame``, or ``workload`` when given) through :func:`bfio.simulator.simulate`.
    A BF-IO row without options is resolved first (:meth:`RunSpec.with_bfio_defaults`
    with the library's defaults).
    Returns the :class:`~bfio.simulator.SimulationResult`."""
    # a spec read from a path alone (RunSpec.from_path) has no options yet: its bfio_h<H>
    # row still runs its own H and objective (library defaults for the rest), never H = 0
    run = run.with_bfio_defaults(None)
    if workload is None:
        workload = build_workload(run, frame)
    return simulate(workload, run.workers, run.slots, run.policy, seed=run.seed,
                    entry=entry_mode(run.arrival.mode), dispatch=run.dispatch, record_loads=record_loads,
                    policy_options=run.policy_options or None, show_progress=show_progress,
                    prefill=prefill_model(run), step_model=run.step_model_spec, queue_moves=run.queue_moves,
                    rank_pause=run.rank_pause, rank_pause_options=dict(run.rank_pause_options) or None,
                    migration=run.migration, migration_options=dict(run.migration_options) or None,
                    reference=run.reference)


def run_study(run: RunSpec, frame: pd.DataFrame | None = None, workload=None, extra=None) -> dict:
    """Simulate ``run`` on trace table ``frame`` (or on ``workload`` when given);
    a flat dict of its identity and metrics, plus ``extra(run, result)`` (a study's
    own per-run columns) when given."""
    work = build_workload(run, frame) if workload is None else workload
    t0 = time.perf_counter()
    result = simulate_run(run, workload=work)
    metrics = {k: v for k, v in result.metrics.items() if np.isscalar(v)}
    if extra is not None:
        metrics.update(extra(run, result))
    return {**run.ident(), "requests_run": len(work), "steps": result.steps,
            "window_steps": result.window_steps, **metrics, "sim_wall_s": time.perf_counter() - t0}


def run_batch(runs, frames: dict, show_progress: bool | None = None, log=None, workload_of=None,
              extra=None) -> pd.DataFrame:
    """Run every :class:`RunSpec` in ``runs`` (``frames``: trace name -> table); one row each.
    ``workload_of(run)``, when given, builds each run's workload instead (a study's
    generated workloads, e.g. :mod:`bfio.workloads.sessions`); ``extra(run, result)`` adds
    columns to each row (:func:`run_study`)."""
    rows = []
    bar = progress(total=len(runs), desc="study runs", enabled=show_progress, log=log is None, unit="run")
    t0 = time.perf_counter()
    for k, run in enumerate(runs, start=1):
        rec = run_study(run, frames[run.trace], extra=extra) if workload_of is None else \
            run_study(run, workload=workload_of(run), extra=extra)
        if log is not None:
            log.info("%s G=%d %s %s %s seed=%d: %.2f s [%s]", run.trace, run.workers, run.arrival.label,
                     run.dispatch, run.row, run.seed, rec["sim_wall_s"],
                     progress_line("runs", k, len(runs), time.perf_counter() - t0))
        rows.append(rec)
        bar.update(1)
    bar.close()
    return pd.DataFrame(rows)


__all__ = ["frame_blocks", "build_workload", "prefill_model", "simulate_run", "run_study", "run_batch"]
