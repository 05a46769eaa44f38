"""The step loop of barrier-synchronized data-parallel decode (Sections 3 and 6.2).

``G`` workers with ``B`` slots each; every step all active requests generate one
token, the step lasts ``dt = C + t_l max_g L_g`` (the barrier waits for the most
loaded worker) and requests stay on the worker they were first placed on.
The loop, the backlog pool of ``4 G`` requests and the metric window follow
``../shared/spec/semantics.md`` to the letter (the "paper convention").

Two entry modes (``entry``; "admission" means only BF-IO's rule): ``backlog``
(the paper's: no arrival times, the pool is topped up to ``pool_factor * G`` before every routing call) and ``arrivals``
(online: a request enters the system when the clock passes its arrival time;
when nothing is active or waiting the clock jumps to the next arrival without
counting a step). While nothing waits, the steps up to the next arrival (or all
remaining steps, once every request has entered) need no routing call and run
in one kernel call (:func:`bfio.engine.kernels.run_steps`, ``fast_forward``), with the
same per-step records as one step at a time.

Two dispatch interfaces (``docs/online.md``): ``central`` (the paper's: one
shared pool, the policy's ``route`` picks which waiting requests each worker
admits at every routing call) and ``instant`` (as vLLM / SGLang data-parallel
routers: each request is bound to one worker's FIFO queue by the policy's
``dispatch`` when it enters the system, never moved afterwards, and every worker
admits from the head of its own queue into its free slots).

The loop is written over parts in :mod:`bfio.sim` (``docs/architecture.md``):
the cluster state, the entry strategies, the dispatch parts, the step engines
and the result; this module is its public entry and keeps the names it has
always exported.
"""

from __future__ import annotations

from bfio.sim.loop import simulate
from bfio.sim.setup import check_lengths as _check_lengths  # noqa: F401  (its former name, still imported)
from bfio.sim.setup import whole_number
from bfio.engine.simulation_result import SERIES_FIELDS, SimulationResult, StepSeries, window_warnings
from bfio.ground.arrival_modes import ENTRY_MODES

ADMISSION_MODES = ENTRY_MODES  # deprecated alias of ENTRY_MODES, removed in the next release

__all__ = ["simulate", "whole_number", "SimulationResult", "StepSeries", "SERIES_FIELDS", "window_warnings",
           "ENTRY_MODES", "ADMISSION_MODES"]
