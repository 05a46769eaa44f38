"""The arguments of :func:`bfio.simulator.simulate`, checked before anything runs:
the cluster (``G`` workers x ``B`` slots, Section 3), the workload's token
lengths within :mod:`bfio.ground.limits`, the entry and dispatch modes and what the
policy supports and needs. Every refusal is a :class:`~bfio.ground.errors.ConfigError`
naming the argument."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from bfio.ground.constants import PaperConstants
from bfio.ground.errors import ConfigError
from bfio.ground.limits import MAX_DECODE, MAX_PREFILL, MAX_SLOTS
from bfio.policies import Policy, make_policy
from bfio.policies.base import CENTRAL_ONLY, DISPATCH_MODES, REQUIREMENTS
from bfio.engine.prefill import PrefillModel
from bfio.sim.migration_checks import check_migration
from bfio.sim.moves import check_queue_moves
from bfio.sim.pause import check_rank_pause
from bfio.step_model import StepCoefficients, StepModel
from bfio.ground.arrival_modes import ENTRY_MODES
from bfio.workloads.workload import Workload


def whole_number(key: str, value) -> int:
    """``value`` as an ``int`` if it is a whole number (``2``, ``np.int64(2)``,
    ``2.0``), else :class:`ConfigError` naming ``key``: ``2.5`` workers is an
    error, never 2 (the same rule as the instance and trace loaders)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not np.isfinite(value) or float(value) != int(value):
        raise ConfigError(f"{key}: expected a whole number, got {value!r}")
    return int(value)


def check_lengths(workload: Workload) -> None:
    """The kernels' inputs, checked once: token lengths within :mod:`bfio.ground.limits`
    (a :class:`Workload` enforces this; a hand-made object might not)."""
    for field_, arr, maximum in (("prefill", workload.prefill, MAX_PREFILL), ("decode", workload.decode, MAX_DECODE)):
        if arr.size and (arr.dtype != np.int64 or arr.min() < 1 or arr.max() > maximum):
            raise ConfigError(f"workload.{field_}: token lengths must be int64 in 1..{maximum:,} (bfio.ground.limits), "
                              f"got dtype {arr.dtype}, range {arr.min()}..{arr.max()}")


@dataclass(frozen=True, eq=False)
class Setup:
    """One run's checked arguments: ``policy`` is a policy object (built from its
    name and options), ``constants`` never ``None``, ``coefficients`` the
    calibrated step's (``None``: the paper's step). A balanced reference
    (:mod:`bfio.sim.pooled`) is the setup of its one pooled rank, ``pooled_ranks``
    the ``G`` it pools (1: the cluster itself)."""

    workload: Workload
    workers: int
    slots: int
    policy: Policy
    seed: int
    constants: PaperConstants
    entry: str
    dispatch: str
    prefill: PrefillModel | None
    step_model: StepModel
    #: the queue-move rule (issue 45, :mod:`bfio.sim.moves`; ``none``: no moves)
    queue_moves: str = "none"
    #: the pause rule and its full options (issue 45, :mod:`bfio.sim.pause`; ``none``: no pauses)
    rank_pause: str = "none"
    rank_pause_options: dict | None = None
    #: the migration rule and its full options (issue 45, :mod:`bfio.sim.migration`; ``none``: no migrations)
    migration: str = "none"
    migration_options: dict | None = None
    coefficients: StepCoefficients | None = None
    #: the step kernels' vector (:mod:`bfio.engine.step_time`): empty for the paper's step,
    #: the coefficients' ``array()``, or a reference's (:func:`bfio.sim.pooled.step_vector`)
    step_coef: np.ndarray | None = None
    #: ``none``, ``balanced`` or ``divisible`` (:data:`bfio.sim.pooled.REFERENCES`)
    reference: str = "none"
    pooled_ranks: int = 1


def _check_cluster(workload, workers, slots, policy) -> tuple[int, int]:
    """The workload, ``G`` and ``B`` (whole, >= 1, ``G * B`` within the bound) and the policy's type."""
    if not isinstance(workload, Workload):
        raise ConfigError(f"workload: expected a bfio.workloads.workload.Workload (bfio.workloads.workload.draw_workload builds one), "
                          f"got {type(workload).__name__}")
    if len(workload) == 0:
        raise ConfigError("workload: no requests (an empty workload has no metrics)")
    workers, slots = whole_number("workers", workers), whole_number("slots", slots)
    if workers < 1:
        raise ConfigError(f"workers: must be >= 1, got {workers}")
    if slots < 1:
        raise ConfigError(f"slots: must be >= 1, got {slots}")
    if not isinstance(policy, (str, Policy)):
        raise ConfigError(f"policy: expected a policy name or a bfio.policies.Policy, got {type(policy).__name__}")
    if workers * slots > MAX_SLOTS:
        raise ConfigError(f"workers x slots: G * B = {workers} * {slots} = {workers * slots:,} exceeds the bound "
                          f"of {MAX_SLOTS:,} slots (bfio.ground.limits: keeps loads exact and memory bounded)")
    check_lengths(workload)
    return workers, slots


def _check_modes(workload, entry, dispatch, prefill, admission_mode) -> str:
    """The entry and dispatch modes and the prefill model; returns the entry mode
    (``admission_mode``, its former name, with a ``DeprecationWarning``)."""
    if admission_mode is not None:
        warnings.warn("simulate(admission_mode=...) is renamed entry=... ('admission' now means only BF-IO's "
                      "rule); admission_mode will be removed in the next release", DeprecationWarning, stacklevel=4)
        entry = admission_mode
    if entry not in ENTRY_MODES:
        raise ConfigError(f"entry: must be {' or '.join(map(repr, ENTRY_MODES))}, got {entry!r}")
    if dispatch not in DISPATCH_MODES:
        raise ConfigError(f"dispatch: must be {' or '.join(map(repr, DISPATCH_MODES))}, got {dispatch!r}")
    if prefill is not None and not isinstance(prefill, PrefillModel):
        raise ConfigError(f"prefill: expected a bfio.engine.prefill.PrefillModel or None, got {type(prefill).__name__}")
    if entry == "arrivals" and workload.arrival_s is None:
        raise ConfigError("entry: 'arrivals' needs a workload with arrival times (arrival column)")
    return entry


def _checked_policy(policy, seed, policy_options, dispatch, prefill, workload) -> Policy:
    """The policy object: built from its name, supporting ``dispatch``, with what it requires."""
    if isinstance(policy, str):
        policy = make_policy(policy, seed=seed, **(policy_options or {}))
    elif policy_options:
        raise ConfigError("policy_options: only valid with a policy name")
    if dispatch not in getattr(policy, "dispatch_modes", CENTRAL_ONLY):
        raise ConfigError(f"dispatch: policy '{policy.name}' does not support dispatch='{dispatch}' "
                          f"(it supports: {', '.join(policy.dispatch_modes)})")
    for need in getattr(policy, "requires", ()):
        if (need == "prefill" and prefill is None) or (need == "blocks" and workload.blocks is None):
            raise ConfigError(f"policy '{policy.name}' needs {REQUIREMENTS[need]}")
    return policy


def _check_step_model(step_model) -> StepModel:
    """The step model: ``None`` or ``"paper"`` the paper's, a name, or a :class:`StepModel`."""
    if step_model is None:
        return StepModel()
    if isinstance(step_model, str):
        return StepModel(step_model=step_model)
    if not isinstance(step_model, StepModel):
        raise ConfigError(f"step_model: expected a bfio.step_model.StepModel, a step model name or None, "
                          f"got {type(step_model).__name__}")
    return step_model


def setup(workload, workers, slots, policy, *, seed, constants, entry, policy_options, dispatch, admission_mode,
          prefill, step_model=None, queue_moves="none", rank_pause="none", rank_pause_options=None,
          migration="none", migration_options=None) -> Setup:
    """:func:`bfio.simulator.simulate`'s arguments checked, in its order (the
    first fault is the one reported), as a :class:`Setup` of the cluster (a
    reference's pooled rank: :func:`bfio.sim.pooled.reference_run` on it)."""
    workers, slots = _check_cluster(workload, workers, slots, policy)
    entry = _check_modes(workload, entry, dispatch, prefill, admission_mode)
    constants = constants or PaperConstants()
    step_model = _check_step_model(step_model)
    policy = _checked_policy(policy, seed, policy_options, dispatch, prefill, workload)
    queue_moves = check_queue_moves(queue_moves, dispatch, policy)
    rank_pause, rank_pause_options = check_rank_pause(rank_pause, rank_pause_options, dispatch, prefill,
                                                      step_model.barrier)
    migration, migration_options = check_migration(migration, migration_options, dispatch, prefill,
                                                   step_model.barrier, policy)
    coefficients = None if step_model.is_paper else step_model.coefficients()
    run = Setup(workload=workload, workers=workers, slots=slots, policy=policy, seed=seed, constants=constants,
                entry=entry, dispatch=dispatch, prefill=prefill, step_model=step_model, queue_moves=queue_moves,
                rank_pause=rank_pause, rank_pause_options=rank_pause_options, migration=migration,
                migration_options=migration_options, coefficients=coefficients,
                step_coef=np.zeros(0) if coefficients is None else coefficients.array())
    return run
