"""Study: the actions after binding (issue 45, ``docs/studies.md`` "Actions").

A request stays on the rank it was first bound to, unless an engine acts after
binding: SGLang's queue balancer moves queued, not yet prefilled requests
(:mod:`bfio.sim.moves`), vllm-ascend's DyntraLB pauses a rank's admissions by its
KV-block count (:mod:`bfio.sim.pause`), ROLL interrupts and migrates requests
(:mod:`bfio.sim.migration`), and BF-IO chooses its own moves and migrations
from its objective. For every setting of the config key ``actions`` (trace, N,
G, B) this study finds each router's goodput, with and without its engine's
actions: the rows of ``actions.central`` and ``actions.instant`` are row keys or
``actions.variants`` labels, and a variant declares its actions beside its
policy (``{policy: vllm_dp, rank_pause: dyntra_lb, rank_pause_options: {...}}``,
:func:`bfio.runs.run.variant_actions`). The goodput is the goodput study's
(:func:`bfio.studies.goodput_study.run_goodput`: per seed, the highest Poisson
rate meeting p99 TTFT and TPOT targets, bisected up to the model's capacity,
with the balanced bound beside the routers); a row with actions also gets, at
its goodput, its actions per 1,000 requests and the tokens they computed or
sent again (:func:`bfio.ground.metrics.action_metrics`). Each (setting, regime) is
one simulation job, as the goodput study's: the paper's step loop, or the
calibrated step with chunked prefill, KV memory and preemption, where the
goodput study finds headroom (in the paper's step loop no router has any on
the traces of issue 44: at the capacity, or every router above the TPOT
target). DyntraLB is not modelled with the prefill model
(:func:`bfio.sim.pause.check_rank_pause` refuses it by name), so its rows run
in the paper's regime only.
"""

from __future__ import annotations

from bfio.ground.errors import ConfigError
from bfio.runs.run import ACTION_RULES, variant_actions
from bfio.sim.migration import RULES as MIGRATION_RULES
from bfio.sim.moves import MOVES
from bfio.sim.pause import RULES as PAUSE_RULES
from bfio.studies.goodput_study import plan as goodput_plan, run_goodput, validate_section as validate_routers
from bfio.studies.goodput_summary import goodput_table
from bfio.studies.registry import Study, register_study

#: Each action rule field's rules (the simulator's registries), for the config's check.
RULE_REGISTRIES = {"queue_moves": MOVES, "rank_pause": PAUSE_RULES, "migration": MIGRATION_RULES}


def validate_section(section: dict, config: dict) -> None:
    """The regimes and routers check (as the goodput study's, keys under
    ``actions``), and every variant's actions name known rules, on an
    instant-dispatch row; errors name the key. Whether a rule runs in a regime
    (DyntraLB without the prefill model) is checked when its run is built."""
    validate_routers(section, config, key="actions")
    variants = section.get("variants") or {}
    for dispatch in ("central", "instant"):
        for i, row in enumerate(section.get(dispatch) or []):
            try:
                actions = variant_actions(row, variants)
            except ConfigError as e:
                raise ConfigError(f"config key 'actions.{e}") from None
            for field in ACTION_RULES:
                rule = actions.get(field)
                if rule is None:
                    continue
                if dispatch != "instant":
                    raise ConfigError(f"config key 'actions.variants.{row}.{field}': actions need instant dispatch; "
                                      f"'{row}' is listed under actions.central")
                if rule not in RULE_REGISTRIES[field]:
                    raise ConfigError(f"config key 'actions.variants.{row}.{field}': unknown rule {rule!r} "
                                      f"(known: {', '.join(RULE_REGISTRIES[field])})")


def plan(config: dict) -> dict:
    """One job per (setting, regime), as the goodput study's (:func:`bfio.studies.goodput_study.plan`)."""
    return goodput_plan(config, "actions")


STUDY = register_study(Study(
    name="actions", description="goodput with and without the engines' actions after binding",
    table="actions", figure="actions",
    simulate=lambda name, setting, section, seeds, slots, frame, defaults, log: run_goodput(
        name, setting, section, seeds, slots, frame, log=log, defaults=defaults),
    tabulate=goodput_table, plot="bfio.figures.actions:plot_actions",
    modules=("studies/actions_study.py", "studies/goodput_study.py", "studies/goodput.py", "engine/capacity.py", "sim"),
    table_modules=("studies/goodput_summary.py",), figure_modules=("figures/actions.py",),
    sim_keys=("central", "instant", "variants", "slo", "rel_tol", "regimes"), validate=validate_section,
    builds_on=("goodput", "online"), settings_groups=(), plan=plan,
    caption="""Goodput with and without the engines' actions after binding (issue 45,
``docs/studies.md``): per setting, each router's goodput (the highest Poisson rate
whose p99 TTFT and TPOT meet {{ config["actions"]["slo"] }}), mean over seeds
{{ config["seeds"] }} with 95% intervals, hatched when the row takes actions; the
dotted line is the balanced bound (no router or action removes more imbalance).""",
))

__all__ = ["RULE_REGISTRIES", "STUDY", "plan", "validate_section"]
