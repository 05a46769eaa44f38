"""The study protocol (issue 28): a study beyond the paper is one module that
registers a :class:`Study` plus one config section.

A :class:`Study` says how its config section's *settings* (one simulation job
each) become runs and a runs table (``simulate``), how the runs of every
setting become its table (``tabulate``) and its figure (``plot``). The
pipeline's generic rules (``workflow/rules/studies.smk``: ``study_simulate``,
``study_table``, ``study_figure``, with a ``{study}`` wildcard) and scripts
(``workflow/scripts/study_*.py``), the workflow profiles' resources, the
config's validation (trace references, policy variants) and the report read
this registry, never a hand list.

Files of a study (``name``):

- ``results/studies/<directory>/runs_<setting>.csv`` (rule ``study_simulate``);
- ``results/tables/<table>.csv`` and ``.md`` (rule ``study_table``);
- ``results/tables/<table>_<name>.json`` for each of ``extra_outputs`` (rule ``study_extra``);
- ``figures/<figure>.pdf`` and ``.png`` (rule ``study_figure``), when it has a figure.

The built-in studies register in their modules under :mod:`bfio.studies`
(read on first use of the registry); others are plugins (:mod:`bfio.plugins`).
Studies with stages of their own (the objective and generality studies, the
online study with its saturation runs) keep their rule files and register
their config section (``settings_groups``, ``variants``) only, with
``generic=False``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from bfio.errors import ConfigError


@dataclass(frozen=True)
class Study:
    """One study: its config section ``name``, where its files go and its three
    steps. ``simulate(setting_name, setting, section, seeds, slots, frame,
    defaults, log) -> DataFrame`` runs one setting (``section``: the config section;
    ``defaults``: the config's per-policy options, :func:`bfio.config.policy_defaults`);
    ``tabulate(runs, section, settings) -> (table, markdown)`` summarizes every
    setting's runs (``section``: the whole config section); ``extras(runs, section,
    settings) -> {name: JSON object}`` gives the files
    ``results/tables/<table>_<name>.json`` of ``extra_outputs``; ``plot(table) -> Figure``
    (a callable, or ``"module:function"`` read when the figure is drawn: a study
    module need not import its figure code, which sits above it);
    ``caption``: the figure's report caption (a Jinja template of ``config``).
    ``schema``: the JSON schema of the config section (a plugin's; the built-in
    studies' sections are in ``workflow/schemas/config.schema.yaml``).
    ``validate(section, config)``: cross-checks of the section run when the config
    loads. ``modules``, ``table_modules``, ``figure_modules``: the package modules (relative
    to ``src/bfio``) whose code the simulations, the table and the figure depend on
    (rerun triggers: editing a figure never reruns a simulation)."""

    name: str
    description: str
    directory: str = ""
    table: str = ""
    figure: str | None = None
    caption: str = ""
    simulate: Callable | None = None
    tabulate: Callable | None = None
    plot: Callable | str | None = None
    extras: Callable | None = None
    extra_outputs: tuple[str, ...] = ()
    settings_groups: tuple[str, ...] = ("settings",)
    schema: dict | None = None
    modules: tuple[str, ...] = ()
    table_modules: tuple[str, ...] = ()
    figure_modules: tuple[str, ...] = ()
    generic: bool = True
    #: ``validate(section, config)``: the section's own cross-checks when the config
    #: loads (raise :class:`ConfigError` naming the key); ``None``: the schema suffices
    validate: Callable | None = None

    def __post_init__(self):
        if self.generic and not (self.simulate and self.tabulate):
            raise TypeError(f"study {self.name}: a generic study needs simulate and tabulate")
        for attr in ("directory", "table"):
            if not getattr(self, attr):
                object.__setattr__(self, attr, self.name)

    def draw(self, table):
        """The study's figure of ``table`` (:attr:`plot`, imported now if named by path)."""
        plot = self.plot
        if isinstance(plot, str):
            import importlib

            module, name = plot.split(":")
            plot = getattr(importlib.import_module(module), name)
        return plot(table)

    def settings(self, config: dict) -> dict:
        """The section's settings by name (names unique, traces known;
        :func:`bfio.studies.report.check_settings`)."""
        from bfio.studies.report import check_settings

        return check_settings(config, self.name, self.settings_groups)

    def section(self, config: dict) -> dict:
        """The config section without its settings and description (what every
        setting's runs share)."""
        skip = {*self.settings_groups, "description"}
        return {k: v for k, v in (config.get(self.name) or {}).items() if k not in skip}


_REGISTRY: dict[str, Study] = {}
_loaded = False


def register_study(study: Study) -> Study:
    """Make ``study`` known to the pipeline (its config section, rules, profiles)."""
    if study.name in _REGISTRY and _REGISTRY[study.name] is not study:
        raise ConfigError(f"study '{study.name}' is registered twice")
    _REGISTRY[study.name] = study
    return study


def studies() -> dict[str, Study]:
    """Every registered study by config section name (built-ins, then plugins)."""
    _load()
    return dict(_REGISTRY)


def generic_studies() -> dict[str, Study]:
    """The studies run by the generic rules, by config section name."""
    return {k: s for k, s in studies().items() if s.generic}


def _generic_by(attr: str, value: str, where: str) -> Study:
    for s in generic_studies().values():
        if getattr(s, attr) == value:
            return s
    raise ConfigError(f"no generic study writes {where}")


def by_directory(directory: str) -> Study:
    """The generic study writing ``results/studies/<directory>/``."""
    return _generic_by("directory", directory, f"results/studies/{directory}/")


def by_table(table: str) -> Study:
    """The generic study writing ``results/tables/<table>.csv``."""
    return _generic_by("table", table, f"results/tables/{table}.csv")


def by_figure(figure: str) -> Study:
    """The generic study drawing ``figures/<figure>.png``."""
    return _generic_by("figure", figure, f"figures/{figure}.png")


#: Built-in study modules (registration order: the order of the report).
BUILTIN_MODULES = ("online", "predictor_study", "starvation", "generality", "objective_study", "prefix_study")


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib

    try:
        for mod in BUILTIN_MODULES:
            importlib.import_module(f"bfio.studies.{mod}")
        from bfio.plugins import load_plugins

        load_plugins()
    except BaseException:
        _loaded = False
        raise


__all__ = ["Study", "register_study", "studies", "generic_studies", "by_directory", "by_table", "by_figure"]
