"""One simulation run: its description (:class:`RunSpec`). Its workload and
its simulation are :mod:`bfio.runs.runner`'s (:func:`~bfio.runs.runner.build_workload`,
:func:`~bfio.runs.runner.simulate_run`), apart so that describing runs (the
pipeline's rules, the studies' registry and tables) never imports the
simulator (issue 42). The CLI, the paper experiments, every study and the
notebook describe a simulation through this module only.

A run is ``(trace, requests, workers, slots, row, seed)`` plus how requests
arrive (:class:`ArrivalSpec`) and are dispatched (``central``/``instant``).
``row`` is the paper's row key (``fcfs``, ``jsq_tokens``, ``bfio_h40``,
``bfio_h40_literal``, see :func:`bfio.lookahead.run_keys.row_key`) or the label of a study
*variant* (``{label: {policy: name, **options}}`` in the config, e.g.
``bfio_h40_noisy50: {policy: bfio, horizon: 40, predictor: noisy, ...}``);
:func:`resolve_row` turns it into a registered policy and its options. The row's
typed identity (:attr:`RunSpec.row_spec`, a :class:`bfio.lookahead.run_keys.RowSpec`) comes
from the declaration that made the run or is looked up among the declared rows;
a run path is mapped to its declared run by lookup (:meth:`RunSpec.from_path`),
never parsed (issue 43).

Arrival modes (``ArrivalSpec.mode``, :data:`bfio.ground.arrival_modes.ARRIVAL_MODES`):

- ``backlog``: the paper's convention (Section 6.2, ``../shared/spec/semantics.md``):
  ``N`` requests drawn with replacement, a pool of ``4 G`` kept topped up;
- ``poisson``: the same draw, arrival times of a Poisson process with ``rate``
  requests/s (seeded), requests enter the pool when the clock passes them;
- ``trace``: the trace's own rows replayed in timestamp order (a contiguous
  window of ``N`` rows at a seeded offset, or the whole trace when ``N`` is
  ``None``), times multiplied by ``time_scale`` (< 1 compresses time: more load).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from bfio.ground.errors import ConfigError
from bfio.lookahead.run_keys import RowSpec, paper_row_spec
from bfio.policies.base import DISPATCH_MODES
from bfio.ground.arrival_modes import ARRIVAL_MODES
from bfio.policies import baselines as registry_baselines, policy_class
from bfio.ground.options import resolve
from bfio.step_model import StepModel
from bfio.engine.run_parameters import ARRIVAL_OPTION

#: Snakemake wildcard constraint matching :attr:`RunSpec.cell`: a run path without
#: its seed (the pipeline simulates every seed of a cell in one job).
CELL_WILDCARD = r"[a-z][a-z0-9_]*/n\d+-g\d+-b\d+/[a-z][a-z0-9_]*"
#: Snakemake wildcard constraint matching :attr:`RunSpec.path`.
RUN_WILDCARD = CELL_WILDCARD + r"/seed\d+"


def baselines() -> tuple[str, ...]:
    """Baseline policy names (row key = policy name), from the policy registry
    (:func:`bfio.policies.baselines`), so a newly registered policy is one."""
    return tuple(registry_baselines())


def row_spec_of(row: str) -> RowSpec:
    """The spec of a paper row key, looked up (:func:`bfio.lookahead.run_keys.paper_row_spec`):
    ``'bfio_h40'`` -> ``RowSpec('bfio', 40)``, ``'fcfs'`` -> ``RowSpec('fcfs')``;
    anything else raises :class:`~bfio.ground.errors.ConfigError`."""
    spec = paper_row_spec(row)
    if spec is not None:
        return spec
    names = baselines()
    if row in names:
        return RowSpec(row)
    raise ConfigError(f"row: '{row}' is neither a baseline ({', '.join(names)}) nor bfio_h<H>[_literal]")


def policy_defaults(config: dict) -> dict[str, dict]:
    """Policy name -> the options the config sets for every row of that policy:
    ``policy_options.<name>`` and, for BF-IO, ``bfio`` (what :func:`resolve_row`
    starts a row's options from)."""
    return {**{k: dict(v) for k, v in (config.get("policy_options") or {}).items()},
            "bfio": dict(config.get("bfio") or {})}


def row_defaults(defaults: dict | None = None, bfio_defaults: dict | None = None) -> dict[str, dict]:
    """Policy name -> options every row of that policy starts from: ``defaults``
    (the config's, :func:`policy_defaults`) with ``bfio_defaults``
    (BF-IO's alone, the older form) over its ``bfio`` entry."""
    out = {k: dict(v) for k, v in (defaults or {}).items()}
    if bfio_defaults:
        out["bfio"] = {**out.get("bfio", {}), **bfio_defaults}
    return out


#: A study variant's keys that are its run's actions after binding (issue 45; the
#: :class:`RunSpec` fields of the same names), not options of its policy: e.g.
#: ``{policy: vllm_dp, rank_pause: dyntra_lb, rank_pause_options: {bubble_threshold: 500}}``.
#: The action rules' fields (each ``none`` when the action is off).
ACTION_RULES = ("queue_moves", "rank_pause", "migration")
ACTION_FIELDS = ("queue_moves", "rank_pause", "rank_pause_options", "migration", "migration_options")


def variant_actions(row: str, variants: dict | None = None) -> dict:
    """The actions after binding that the ``variants`` label ``row`` declares
    (:data:`ACTION_FIELDS`; a rule's options as sorted ``(name, value)`` pairs, as
    :class:`RunSpec` keeps them); empty for a row without any. The rules and their
    options are checked when the run is built (:func:`bfio.sim.setup.setup`)."""
    declared = (variants or {}).get(row) or {}
    out = {}
    for key in ACTION_FIELDS:
        if key not in declared:
            continue
        value = declared[key]
        if key.endswith("_options"):
            if not isinstance(value, dict):
                raise ConfigError(f"variants.{row}.{key}: expected a mapping of the rule's options, got {value!r}")
            value = tuple(sorted(value.items()))
        elif not isinstance(value, str):
            raise ConfigError(f"variants.{row}.{key}: expected a rule's name, got {value!r}")
        out[key] = value
    return out


def resolve_row(row: str, variants: dict | None = None, bfio_defaults: dict | None = None,
                defaults: dict | None = None) -> tuple[str, dict]:
    """``row`` -> ``(policy name, policy options)``.

    ``bfio_h<H>`` is BF-IO with its defaults and horizon ``H`` (``bfio_h<H>_literal``:
    with the paper-literal objective, :meth:`bfio.lookahead.run_keys.RowSpec.options`); a label in
    ``variants`` gives its ``policy`` and options over that policy's defaults (its
    actions, :func:`variant_actions`, are not among them); any
    other label is a registry policy name with its defaults. The defaults of a
    policy are ``defaults[policy]`` (and, for BF-IO, ``bfio_defaults``,
    :func:`row_defaults`); a policy's own declared defaults fill in the rest
    when it is built.
    """
    start = row_defaults(defaults, bfio_defaults)
    variants = variants or {}
    if row in variants:
        opts = {k: v for k, v in variants[row].items() if k not in ACTION_FIELDS}
        if "policy" not in opts:
            raise ConfigError(f"variants.{row}: needs a 'policy' key (a registry policy name)")
        policy = opts.pop("policy")
        return policy, {**start.get(policy, {}), **opts}
    spec = paper_row_spec(row)
    if spec is not None:
        return "bfio", {**start.get("bfio", {}), **spec.options()}
    return row, start.get(row, {})


@dataclass(frozen=True, order=True)
class ArrivalSpec:
    """How requests arrive: ``mode`` plus ``rate`` (poisson, req/s) or ``time_scale`` (trace)."""

    mode: str = ARRIVAL_OPTION["mode"].default  # declared in bfio.engine.run_parameters.ARRIVAL
    rate: float | None = ARRIVAL_OPTION["rate"].default
    time_scale: float = ARRIVAL_OPTION["time_scale"].default

    def __post_init__(self):
        if self.mode not in ARRIVAL_MODES:
            raise ConfigError(f"arrival.mode: expected one of {', '.join(ARRIVAL_MODES)}, got {self.mode!r}")
        if self.mode == "poisson" and not (self.rate is not None and self.rate > 0):
            raise ConfigError(f"arrival.rate: poisson arrivals need a rate > 0 requests/s, got {self.rate!r}")
        if not self.time_scale > 0:
            raise ConfigError(f"arrival.time_scale: must be > 0, got {self.time_scale!r}")

    @property
    def label(self) -> str:
        """Short, path-safe label: ``backlog``, ``poisson-r120``, ``trace-x0.05``."""
        if self.mode == "poisson":
            return f"poisson-r{self.rate:g}"
        if self.mode == "trace":
            return f"trace-x{self.time_scale:g}"
        return "backlog"

    @classmethod
    def from_config(cls, d) -> "ArrivalSpec":
        if isinstance(d, ArrivalSpec):
            return d
        if isinstance(d, str):
            return cls(mode=d)
        d = dict(d)
        return cls(mode=d.get("mode", "backlog"), rate=d.get("rate"), time_scale=float(d.get("time_scale", 1.0)))


@dataclass(frozen=True, order=True)
class RunSpec:
    """One simulation: a workload of ``requests`` drawn from (or replayed off)
    ``trace`` with ``seed``, on ``workers`` x ``slots``, routed by ``row``'s
    ``policy`` with ``options`` (sorted ``(name, value)`` pairs), arriving as
    ``arrival`` says and dispatched ``central`` (pool) or ``instant``.

    ``RunSpec(trace, N, G, B, row, seed)`` is a paper run (backlog, central;
    ``row`` a baseline or ``bfio_h<H>[_literal]``, options filled in later from
    the config's ``bfio`` section by :meth:`with_bfio_defaults`); :meth:`make`
    resolves study rows and variants."""

    trace: str
    requests: int | None
    workers: int
    slots: int
    row: str
    seed: int
    arrival: ArrivalSpec = field(default_factory=ArrivalSpec)
    dispatch: str = "central"
    policy: str = ""
    options: tuple = ()
    #: the prefill step model's parameters (sorted ``(name, value)`` pairs of
    #: :class:`bfio.engine.prefill.PrefillModel`); empty: the paper's step loop
    prefill: tuple = ()
    #: the step model's options (sorted ``(name, value)`` pairs of
    #: :class:`bfio.step_model.StepModel`); empty: the paper's step time
    step_model: tuple = ()
    #: the queue-move rule (issue 45, :mod:`bfio.sim.moves`): ``none`` (default),
    #: ``sglang_balancer`` or ``bfio``; instant dispatch only
    queue_moves: str = "none"
    #: the pause rule (issue 45, :mod:`bfio.sim.pause`): ``none`` (default) or
    #: ``dyntra_lb``; instant dispatch only; its options as sorted ``(name, value)`` pairs
    rank_pause: str = "none"
    rank_pause_options: tuple = ()
    #: the migration rule (issue 45, :mod:`bfio.sim.migration`): ``none`` (default), ``roll``
    #: or ``bfio``; instant dispatch only; its options as sorted ``(name, value)`` pairs
    migration: str = "none"
    migration_options: tuple = ()
    #: ``none`` (the cluster) or ``balanced``: the run's balanced reference, one pooled
    #: rank admitting FCFS (issue 44, :mod:`bfio.sim.pooled`)
    reference: str = "none"
    #: the row's typed identity (issue 43): a paper row's :class:`bfio.lookahead.run_keys.RowSpec`
    #: (its key is ``row``), given by the declaration that made the run
    #: (:func:`bfio.runs.experiments.experiment_runs`) or looked up among the declared rows;
    #: ``None`` for a study variant (its ``policy`` and ``options`` say what it runs)
    row_spec: RowSpec | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.dispatch not in DISPATCH_MODES:
            raise ConfigError(f"dispatch: expected one of {', '.join(DISPATCH_MODES)}, got {self.dispatch!r}")
        for key in ACTION_RULES:
            if getattr(self, key) != "none" and self.dispatch != "instant":
                raise ConfigError(f"{key}: {getattr(self, key)!r} needs dispatch 'instant' (got {self.dispatch!r})")
        if self.requests is None and self.arrival.mode != "trace":
            raise ConfigError(f"requests: needed for arrival mode {self.arrival.mode!r} (only 'trace' replays "
                              "the whole trace)")
        if self.row_spec is None:  # a paper row's spec; without a policy the row must be one (row_spec_of)
            object.__setattr__(self, "row_spec", paper_row_spec(self.row) if self.policy else row_spec_of(self.row))
        elif self.row_spec.key != self.row:
            raise ConfigError(f"row: {self.row!r} is not the key of its spec {self.row_spec} ({self.row_spec.key!r})")
        if not self.policy:
            object.__setattr__(self, "policy", self.row_spec.policy)

    @classmethod
    def make(cls, trace, requests, workers, slots, row, seed, arrival=None, dispatch="central",
             variants=None, bfio_defaults=None, defaults=None) -> "RunSpec":
        """A run whose ``row`` (a row key or a ``variants`` label) is resolved now
        (:func:`resolve_row`), with the actions after binding its variant declares
        (:func:`variant_actions`)."""
        policy, opts = resolve_row(row, variants, bfio_defaults, defaults)
        arrival = ArrivalSpec.from_config(arrival or "backlog")
        return cls(trace, None if requests is None else int(requests), int(workers), int(slots), row, int(seed),
                   arrival, dispatch, policy, tuple(sorted(opts.items())), **variant_actions(row, variants))

    def with_bfio_defaults(self, bfio_defaults: dict | None, defaults: dict | None = None) -> "RunSpec":
        """This run with its row's options resolved (:func:`resolve_row`) over the
        config's defaults, when it has none yet (a spec read from a path): a BF-IO
        row key takes ``bfio_defaults`` then its horizon and objective, any other
        row ``defaults[policy]``."""
        if self.options:
            return self
        if self.row_spec is None:
            return replace(self, options=tuple(sorted(resolve_row(self.row, None, bfio_defaults, defaults)[1].items())))
        start = row_defaults(defaults, bfio_defaults).get(self.row_spec.policy, {})
        return replace(self, options=tuple(sorted({**start, **self.row_spec.options()}.items())))

    @property
    def policy_options(self) -> dict:
        return dict(self.options)

    @property
    def resolved_options(self) -> dict:
        """Every option of the run's policy: its own, the rest at the policy's
        declared defaults (:func:`bfio.ground.options.resolve`); what a study
        reports as a run's option columns."""
        return resolve(policy_class(self.policy), self.policy_options)

    @property
    def horizon(self) -> int | None:
        """BF-IO's lookahead ``H`` of a ``bfio_h<H>`` row (else ``None``)."""
        bfio = self.row_spec is not None and self.row_spec.policy == "bfio"
        return self.row_spec.horizon if bfio else self.policy_options.get("horizon")

    @property
    def path(self) -> str:
        """Relative run directory of a paper run, e.g. ``longbench/n80000-g256-b72/bfio_h40/seed42``."""
        return f"{self.trace}/n{self.requests}-g{self.workers}-b{self.slots}/{self.row}/seed{self.seed}"

    @property
    def cell(self) -> str:
        """:attr:`path` without the seed, e.g. ``longbench/n80000-g256-b72/bfio_h40``:
        the runs of a cell differ only in their seed (one pipeline job each cell)."""
        return self.path.rsplit("/", 1)[0]

    @property
    def objective(self) -> str | None:
        """BF-IO's objective of a ``bfio_h<H>[_literal]`` row (else ``None``): what a run stores."""
        return self.row_spec.objective if self.row_spec is not None and self.row_spec.policy == "bfio" else None

    @classmethod
    def from_path(cls, path: str, declared) -> "RunSpec":
        """The declared run at ``path`` (``declared``: run path -> spec, e.g.
        :func:`bfio.runs.experiments.declared_runs`): a lookup, the path is not parsed."""
        spec = declared.get(str(path).strip("/"))
        if spec is None:
            raise ConfigError(f"run: '{path}' is not a declared run path (one of the config's runs, like "
                              "'longbench/n80000-g256-b72/bfio_h40/seed42')")
        return spec

    def ident(self) -> dict:
        """Flat identifying columns for result tables (``prefill_<name>`` only for runs
        with the prefill step model; ``step_model`` and ``step_<name>`` only for runs
        given a step model; ``queue_moves`` only for runs with moves; ``rank_pause`` and
        ``pause_<name>`` only for runs with pauses; ``migration`` and ``migrate_<name>``
        only for runs with migrations; ``reference`` only for a reference run)."""
        return {"trace": self.trace, "requests": self.requests, "workers": self.workers, "slots": self.slots,
                "row": self.row, "seed": self.seed, "arrival": self.arrival.label,
                "arrival_mode": self.arrival.mode, "arrival_rate": self.arrival.rate,
                "time_scale": self.arrival.time_scale, "dispatch": self.dispatch, "policy": self.policy,
                **{f"prefill_{k}": v for k, v in self.prefill},
                **{(k if k == "step_model" else f"step_{k}"): v for k, v in self.step_model},
                **({"queue_moves": self.queue_moves} if self.queue_moves != "none" else {}),
                **({"rank_pause": self.rank_pause} if self.rank_pause != "none" else {}),
                **{f"pause_{k}": v for k, v in self.rank_pause_options},
                **({"migration": self.migration} if self.migration != "none" else {}),
                **{f"migrate_{k}": v for k, v in self.migration_options},
                **({"reference": self.reference} if self.reference != "none" else {})}

    @property
    def step_model_spec(self):
        """The run's :class:`bfio.step_model.StepModel` (the paper's when :attr:`step_model` is empty)."""
        return StepModel.from_items(self.step_model)


__all__ = ["ACTION_FIELDS", "ACTION_RULES", "ARRIVAL_MODES", "DISPATCH_MODES", "RUN_WILDCARD", "CELL_WILDCARD", "ArrivalSpec", "RunSpec", "baselines",
           "row_spec_of", "resolve_row", "row_defaults", "variant_actions"]
