"""The migration rules' options checked against a run (issue 45, :mod:`bfio.sim.migration`;
:func:`bfio.sim.setup.setup` calls :func:`check_migration` in its order): a known rule, its
options in range, instant dispatch, the KV's way against the prefill model, a lockstep
barrier, and with the other actions (queue moves, rank pauses) what they compose with."""

from __future__ import annotations

from bfio.ground.errors import ConfigError
from bfio.sim.migration import RULES
from bfio.sim.migration_kv import KV_MODES
from bfio.sim.rule_options import checked_rule, out_of_range


def check_roll_options(o: dict) -> None:
    """ROLL's options within their ranges."""
    if o["threshold"] < 1:
        out_of_range("migration_options", "roll", "threshold", o["threshold"], ">= 1 (in-flight requests)")
    if o["freeze_s"] < 0:
        out_of_range("migration_options", "roll", "freeze_s", o["freeze_s"], ">= 0 (seconds)")


def check_bfio_options(o: dict, policy) -> None:
    """BF-IO's migration options within their ranges, and a policy that plans migrations."""
    if not hasattr(policy, "plan_migrations"):
        raise ConfigError(f"migration: 'bfio' asks the policy which running requests to migrate; policy "
                          f"'{policy.name}' plans no migrations (use roll, or policy bfio)")
    if o["cost_weight"] < 0:
        out_of_range("migration_options", "bfio", "cost_weight", o["cost_weight"], ">= 0")
    if o["horizon"] < 0:
        out_of_range("migration_options", "bfio", "horizon", o["horizon"], ">= 0 (steps; 0: the policy's window)")
    for key in ("evaluations", "per_rank"):
        if o[key] < 1:
            out_of_range("migration_options", "bfio", key, o[key], ">= 1 (requests)")
    if o["freeze_s"] < 0:
        out_of_range("migration_options", "bfio", "freeze_s", o["freeze_s"], ">= 0 (seconds)")
    if o["queued"] not in (0, 1):
        out_of_range("migration_options", "bfio", "queued", o["queued"], "0 or 1")


def check_kv_options(o: dict, given: dict, rule: str, prefill) -> None:
    """The KV's way (``kv``, :mod:`bfio.sim.migration_kv`) and its link's options:
    ``recompute`` needs the prefill model, ``transfer`` runs with or without it,
    ``choose`` needs both the prefill model (a recompute to weigh) and the rule
    ``bfio`` (a planner that weighs costs); a link's option given with
    ``recompute`` would do nothing and is refused."""
    where = "migration_options"
    if o["kv"] not in KV_MODES:
        raise ConfigError(f"{where}: kv of {rule!r} must be one of {', '.join(KV_MODES)}, got {o['kv']!r}")
    for key in ("transfer_gbps", "kv_bytes_per_token"):
        if o[key] <= 0:
            raise ConfigError(f"{where}: {key} of {rule!r} must be > 0, got {o[key]!r}")
    if o["kv"] == "recompute":
        link = sorted(set(given or {}) & {"transfer_gbps", "kv_bytes_per_token"})
        if link:
            raise ConfigError(f"{where}: {', '.join(link)} apply to kv 'transfer' or 'choose'; kv 'recompute' "
                              "sends no KV")
    if o["kv"] != "transfer" and prefill is None:
        raise ConfigError(f"{where}: kv {o['kv']!r} of {rule!r} recomputes a migrated request's prompt and "
                          "generated tokens through the prefill model; give prefill=PrefillModel(...) (CLI: "
                          "--prefill-chunk-tokens N), or kv 'transfer'")
    if o["kv"] == "choose" and rule != "bfio":
        raise ConfigError(f"{where}: kv 'choose' weighs each migration's recompute against its transfer in BF-IO's "
                          f"planner; rule {rule!r} weighs no cost (use kv 'recompute' or 'transfer', or migration "
                          "'bfio')")


def check_migration(migration, options, dispatch: str, prefill, barrier: str, policy=None) -> tuple[str, dict]:
    """``migration`` and its options checked against the run: a known rule, its
    known options in range, instant dispatch, the KV's way against the prefill
    model, a lockstep barrier; for ``bfio`` a ``policy`` that plans migrations. It
    composes with ``queue_moves`` and ``rank_pause`` (:meth:`bfio.sim.migration.Migration.eligible`;
    a pause rule's own refusal of the prefill model leaves it ``kv`` ``transfer``).
    Returns the rule and its full options."""
    migration, full = checked_rule("migration", migration, RULES, options, dispatch, "migration",
                                   "re-queues requests on other ranks' queues")
    if migration == "none":
        return "none", {}
    if migration == "roll":
        check_roll_options(full)
    elif migration == "bfio":
        check_bfio_options(full, policy)
    check_kv_options(full, options, migration, prefill)
    if barrier == "independent":
        raise ConfigError(f"migration: {migration!r} evens out the ranks of a lockstep barrier; "
                          "step_model.barrier 'independent' has none")
    return migration, full
