"""The study protocol (issue 28): a study beyond the paper is one module that
registers a :class:`Study` plus one config section.

A :class:`Study` says how its config section's *settings* (one simulation job
each) become runs and a runs table (``simulate``), how the runs of every
setting become its tables (:class:`Table`: ``tabulate``) and its figures
(:class:`Figure`: ``plot`` of one table). The pipeline's generic rules
(``workflow/rules/studies.smk``: ``study_prepare``, ``study_simulate``,
``study_product``, ``study_table``, ``study_extra``, ``study_figure``, with a
``{study}`` wildcard naming the results directory and ``{table}``/``{figure}``
wildcards) and scripts (``workflow/scripts/study_*.py``), the workflow profiles'
resources, the config's validation (trace references, policy variants, the
study's own ``validate``) and the report read this registry, never a hand list.

Files of a study (``name``):

- ``results/studies/<directory>/<prepared>.json`` for each setting, when the study
  has a preparatory stage (``prepare``: e.g. the online study's saturation runs;
  rule ``study_prepare``; ``<prepared>`` is :attr:`prepare_file` of the setting name);
- ``results/studies/<directory>/<run>.csv`` for each setting (rule ``study_simulate``;
  ``<run>`` is ``runs_<setting>`` or :attr:`run_file` of the setting);
- ``results/studies/<directory>/<product>`` (``.csv`` or ``.json``) for each of its
  :class:`Product` files, made from the runs of some settings (rule ``study_product``;
  ``runs.csv``: every setting's runs in one file, when :attr:`merged_runs`);
- ``results/tables/<table>.csv`` and ``.md`` for each of its tables (rule ``study_table``);
- ``results/tables/<table>_<name>.json`` for each of ``extra_outputs`` (rule ``study_extra``;
  ``<table>``: the study's first table);
- ``figures/<figure>.pdf`` and ``.png`` for each of its figures (rule ``study_figure``).

A study's settings are its config section's lists ``settings_groups`` (entries
with a ``name`` and a ``trace``), or what :attr:`plan` derives from the config
(the generality study: every trace x G x arrival job). A setting's simulation may
read the runs of other settings or a product (:attr:`needs`: the generality
study's replays read the backlog runs of the same trace and G; the objective
study's confirm jobs read the recommendation made from every choose job) and the
result of its preparatory stage. So a study's stages are: an optional
preparatory stage per setting, the simulation of each setting (in the order its
``needs`` impose), the products (each a function of the runs of some settings),
the tables, the figures.

The built-in studies register in their modules under :mod:`bfio.studies`
(every module of the package is imported on first use of the registry, so a new
study module is found without being listed); others are plugins
(:mod:`bfio.ground.plugins`). The registry's order (of :func:`studies`: the config's
checks, whose first fault is the one reported, and the report's sections) is
fixed, whichever module a process imported first: the built-in studies by name,
each after the studies it declares it builds on (:attr:`Study.builds_on`), then
the plugins' in the order they registered (:func:`_ordered`).
A study with ``generic=False`` registers its config section only (validation,
variants) and brings its own rules.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from typing import Callable

from bfio.ground.errors import ConfigError
from bfio.ground.plugins import load_plugins
from bfio.studies.report import check_settings


def load_function(path):
    """The function named ``"module:function"`` (its module imported now; a dotted
    ``function`` is an attribute path, e.g. a class's method); a callable as given."""
    if not isinstance(path, str):
        return path
    import importlib

    module, _, name = path.partition(":")
    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def draw(plot, table, options: dict | None = None, products: dict | None = None):
    """The figure ``plot`` draws: ``plot(table, **products, **options)``, or
    ``plot(**products, **options)`` for a figure of products only (``table`` ``None``)."""
    kwargs = {**(products or {}), **(options or {})}
    return plot(**kwargs) if table is None else plot(table, **kwargs)


class _Wanted:
    """``wanted(section)``: a table or figure whose ``when(section)`` is unset or true."""

    when: Callable | None

    def wanted(self, section: dict) -> bool:
        return self.when is None or bool(self.when(section))


@dataclass(frozen=True)
class Table(_Wanted):
    """One table of a study: ``results/tables/<name>.csv`` and ``.md``.
    ``tabulate(runs, section, settings) -> (table, markdown)`` (``section``: the
    whole config section; with :attr:`Study.table_inputs`, also ``inputs=``: the
    paths of those files); ``when(section) -> bool``: written only then (``None``:
    always); ``caption``: its report caption; ``settings``: whose runs it reads;
    ``products``: :class:`Product` files given to ``tabulate`` as keywords."""

    name: str
    tabulate: Callable
    when: Callable | None = None
    #: its report caption (a Jinja template of ``config``; ``""``: the study's description)
    caption: str = ""
    #: ``settings(setting_name, setting) -> bool``: whose runs it reads (``None``: every setting's)
    settings: Callable | None = None
    #: ``((keyword, product file), ...)``: products (:class:`Product`) given to ``tabulate`` by keyword
    products: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Figure(_Wanted):
    """One figure of a study: ``figures/<name>.pdf`` and ``.png``, drawn by
    ``plot(table, **options(section))`` from the study's table ``table`` (``""``:
    its first). ``plot``: a callable, or ``"module:function"`` read when the
    figure is drawn (a study module need not import its figure code, which sits
    above it); ``caption``: its report caption (a Jinja template of ``config``);
    ``modules``: its figure modules (rerun triggers; default the study's
    ``figure_modules``); ``when(section) -> bool``: drawn only then; ``products``:
    :class:`Product` files given to ``plot`` as keywords (``table=None``: the
    figure reads products only, ``plot(**products, **options)``)."""

    name: str
    plot: Callable | str
    table: str | None = ""
    caption: str = ""
    options: Callable | None = None
    when: Callable | None = None
    modules: tuple[str, ...] = ()
    #: ``((keyword, product file), ...)``: products (:class:`Product`) given to ``plot`` by keyword
    products: tuple[tuple[str, str], ...] = ()

    def plot_options(self, section: dict) -> dict:
        """The keyword arguments of :attr:`plot` from the config section."""
        return dict(self.options(section)) if self.options is not None else {}

    def draw(self, table, options: dict | None = None, products: dict | None = None):
        """The figure of ``table`` (``options``: :meth:`plot_options`; ``products``:
        keyword -> the product's content; ``table`` ``None`` for a figure of products only)."""
        return draw(load_function(self.plot), table, options, products)


@dataclass(frozen=True)
class Product:
    """A stage after the simulations: the file ``results/studies/<directory>/<file>``
    (``.csv``: a data frame; ``.json``: a JSON object) made by ``make(runs,
    section)`` from the runs of the settings ``settings(setting_name, setting)``
    selects (``None``: every setting; ``make`` ``None``: those runs in one file).
    Tables and figures read products (``products=``), and a setting's simulation
    may need one (:attr:`Study.needs`): e.g. the objective study's recommendation,
    made from every choose run, read by every confirm run."""

    file: str
    make: Callable | None = None
    settings: Callable | None = None

    def __post_init__(self):
        if not self.file.endswith((".csv", ".json")):
            raise TypeError(f"product {self.file}: a product is a .csv or a .json file")

    def selects(self, setting_name: str, setting: dict) -> bool:
        return self.settings is None or bool(self.settings(setting_name, setting))

    def build(self, runs, section: dict):
        """The product's content (a data frame or a JSON object)."""
        return runs if self.make is None else self.make(runs, section)


@dataclass(frozen=True)
class Study:
    """One study: its config section ``name``, where its files go and its steps.

    ``simulate(setting_name, setting, section, seeds, slots, frame, defaults, log)
    -> DataFrame`` runs one setting (``section``: the config section without its
    settings; ``defaults``: the config's per-policy options,
    :func:`bfio.runs.run.policy_defaults`), with keyword ``prior={setting name:
    runs}`` when the study declares :attr:`needs` and ``prepared=<JSON object>``
    when it declares :attr:`prepare`. A study whose setting is one batch of runs
    declares them instead, ``runs(setting_name, setting, section, seeds, slots,
    defaults) -> [RunSpec]`` (same keywords): the pipeline runs them
    (:meth:`run_setting`), so its module need not import the simulator and may hold
    its table function too (a study of one module, a figure and a config section).
    ``tabulate``/``table`` and
    ``plot``/``figure``/``caption``: its first (or only) table and figure
    (:class:`Table`, :class:`Figure`); ``tables`` and ``figures``: more of them.
    ``extras(runs, section, settings) -> {name: JSON object}`` gives the files
    ``results/tables/<table>_<name>.json`` of ``extra_outputs``.

    Stages and files: ``plan(config) -> {setting name: setting}``: settings
    derived from the config instead of the lists ``settings_groups``;
    ``run_file(setting_name, setting) -> str``: the setting's runs file under
    ``results/studies/<directory>/`` without ``.csv`` (default
    ``runs_<setting>``); ``needs(setting_name, setting) -> [setting names]``:
    settings whose runs this setting's simulation reads; ``prepare(setting_name,
    setting, section, seeds, slots, frame, defaults, log) -> JSON object``: a
    preparatory stage per setting, written to ``prepare_file`` (``{setting}``
    replaced by its name) and given to ``simulate``; ``table_inputs(config) ->
    [paths]``: more inputs of its tables (``tabulate(..., inputs=paths)``);
    ``merged_runs``: also write every setting's runs to
    ``results/studies/<directory>/runs.csv`` (a :class:`Product`); ``products``:
    files made from the runs of some settings (:class:`Product`: a stage after the
    simulations, which tables, figures and other settings read; ``needs`` may
    name a product file); ``sim_keys``: the keys of the
    section the simulations (and the preparatory stage) read.

    ``schema``: the JSON schema of the config section, every key with a
    ``description`` (config/README.md's ``<study>.<key>`` row stands for them; the
    sections of the studies before issue 43 are in ``workflow/schemas/config.schema.yaml``).
    ``validate(section, config)``: cross-checks of the section run when the config
    loads (when the study has settings). ``modules``, ``table_modules``,
    ``figure_modules``: the package modules (relative to ``src/bfio``) whose code
    the simulations, the tables and the figures depend on (rerun triggers:
    editing a figure never reruns a simulation)."""

    name: str
    description: str
    directory: str = ""
    table: str = ""
    figure: str | None = None
    caption: str = ""
    simulate: Callable | None = None
    runs: Callable | None = None
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
    tables: tuple[Table, ...] = field(default=())
    figures: tuple[Figure, ...] = field(default=())
    plan: Callable | None = None
    run_file: Callable | None = None
    needs: Callable | None = None
    prepare: Callable | None = None
    prepare_file: str = "prepared_{setting}"
    table_inputs: Callable | None = None
    merged_runs: bool = False
    products: tuple[Product, ...] = field(default=())
    #: the keys of the config section the simulations read (``None``: every key but
    #: the settings and the description), so editing a table's or a figure's key
    #: reruns no simulation
    sim_keys: tuple[str, ...] | None = None
    #: the studies (config section names) this one builds on: whose functions its
    #: module imports or whose section or runs it reads. It comes after them in the
    #: registry's order (:func:`studies`), so their checks run first and the report
    #: shows them first (``tests/test_study_registry.py`` holds it to the imports)
    builds_on: tuple[str, ...] = ()
    #: ``schema_enums(properties)``: fills, in place, the values of its config
    #: section's schema (the section's ``properties``) that come from the package's
    #: registries (allowed names, patterns), so the schema never lists them twice;
    #: :func:`bfio.pipeline.config._registry_enums` calls it for every study with a section
    schema_enums: Callable | None = None

    def __post_init__(self):
        tables = tuple(self.tables)
        if self.tabulate is not None:
            tables = (Table(self.table or self.name, self.tabulate),) + tables
        if not self.table:
            object.__setattr__(self, "table", tables[0].name if tables else self.name)
        if not self.directory:
            object.__setattr__(self, "directory", self.name)
        figures = tuple(self.figures)
        if self.figure:
            figures = (Figure(self.figure, self.plot, self.table, self.caption),) + figures
        figures = tuple(f if f.table or f.table is None else replace(f, table=self.table) for f in figures)
        object.__setattr__(self, "tables", tables)
        object.__setattr__(self, "figures", figures)
        products = tuple(self.products)
        if self.merged_runs and not any(p.file == "runs.csv" for p in products):
            products = (Product("runs.csv"),) + products
        object.__setattr__(self, "products", products)
        files = {p.file for p in products}
        for what, kw in [*((f"table {t.name}", t.products) for t in tables),
                         *((f"figure {f.name}", f.products) for f in figures)]:
            missing = [file for _, file in kw if file not in files]
            if missing:
                raise TypeError(f"study {self.name}: {what} reads {missing}, not products of the study")
        if self.simulate is not None and self.runs is not None:
            raise TypeError(f"study {self.name}: declare its runs (runs) or simulate them (simulate), not both")
        if self.generic and not ((self.simulate or self.runs) and tables):
            raise TypeError(f"study {self.name}: a generic study needs simulate (or runs) and a table (tabulate)")
        names = {t.name for t in tables}
        for f in figures:
            if f.table is not None and f.table not in names:
                raise TypeError(f"study {self.name}: figure {f.name} reads table {f.table!r}, not one of its "
                                f"tables ({', '.join(sorted(names)) or 'none'})")

    def table_only_modules(self) -> tuple[str, ...]:
        """Its :attr:`table_modules` that are not also :attr:`modules` (a study of one
        module declares its runs and tabulates in it): what the rerun trigger of its
        simulations leaves out, with its figure modules."""
        return tuple(m for m in self.table_modules if m not in self.modules)

    def run_setting(self, batch: Callable, setting_name: str, setting: dict, section: dict, seeds, slots: int,
                    frame, defaults: dict, log=None, **extra):
        """One setting's runs table: :attr:`simulate`'s, or the :class:`~bfio.runs.run.RunSpec`
        list :attr:`runs` declares, run by ``batch`` (:func:`bfio.runs.runner.run_batch`,
        handed in: the registry does not import the simulator) with the setting's name
        as a first column ``setting``. ``extra``: ``prior=``, ``prepared=``."""
        if self.simulate is not None:
            return self.simulate(setting_name, setting, section, seeds, slots, frame, defaults, log, **extra)
        out = batch(self.runs(setting_name, setting, section, seeds, slots, defaults, **extra),
                    {setting["trace"]: frame}, show_progress=False, log=log)
        out.insert(0, "setting", setting_name)
        return out

    def draw(self, table):
        """The study's first figure of ``table`` (its plot imported now if named by path)."""
        return self.figures[0].draw(table)

    def product_named(self, file: str) -> Product:
        return next(p for p in self.products if p.file == file)

    def table_named(self, name: str) -> Table:
        return next(t for t in self.tables if t.name == name)

    def figure_named(self, name: str) -> Figure:
        return next(f for f in self.figures if f.name == name)

    def settings(self, config: dict) -> dict:
        """The section's settings by name (:attr:`plan`'s, or the lists
        ``settings_groups`` with names unique and traces known:
        :func:`bfio.studies.report.check_settings`)."""
        if self.plan is not None:
            return dict(self.plan(config))

        return check_settings(config, self.name, self.settings_groups)

    def active(self, config: dict) -> bool:
        """Whether the config gives the study anything to run."""
        if self.plan is not None:
            return bool(self.plan(config))
        section = config.get(self.name) or {}
        return any(section.get(g) for g in self.settings_groups)

    def run_stem(self, setting_name: str, setting: dict) -> str:
        """The setting's runs file under ``results/studies/<directory>/``, without ``.csv``."""
        return self.run_file(setting_name, setting) if self.run_file is not None else f"runs_{setting_name}"

    def prepared_stem(self, setting_name: str) -> str:
        """The setting's preparatory file under ``results/studies/<directory>/``, without ``.json``."""
        return self.prepare_file.format(setting=setting_name)

    def section(self, config: dict) -> dict:
        """The config section without its settings and description (what every
        setting's runs share; only :attr:`sim_keys` when given)."""
        skip = {*self.settings_groups, "description"}
        section = {k: v for k, v in (config.get(self.name) or {}).items() if k not in skip}
        return section if self.sim_keys is None else {k: v for k, v in section.items() if k in self.sim_keys}


_REGISTRY: dict[str, Study] = {}
#: study name -> the module that registered it (built-in: under :mod:`bfio.studies`)
_MODULES: dict[str, str] = {}
_loaded = False


def register_study(study: Study) -> Study:
    """Make ``study`` known to the pipeline (its config section, rules, profiles)."""
    if study.name in _REGISTRY and _REGISTRY[study.name] is not study:
        raise ConfigError(f"study '{study.name}' is registered twice")
    _REGISTRY[study.name] = study
    _MODULES.setdefault(study.name, sys._getframe(1).f_globals.get("__name__", ""))
    return study


def builtin(name: str) -> bool:
    """Whether study ``name`` registers in a module of :mod:`bfio.studies` (not a plugin)."""
    return _MODULES.get(name, "").startswith(f"{__package__}.")


def studies() -> dict[str, Study]:
    """Every registered study by config section name, in the registry's order
    (:func:`_ordered`: the built-ins by name, each after those it builds on, then
    the plugins'), whichever study module was imported first."""
    _load()
    return {name: _REGISTRY[name] for name in _ordered()}


def _ordered() -> list[str]:
    """The registry's order: a depth-first walk from the built-in studies by name,
    then the plugins' in registration order, that puts each study after the
    studies of its :attr:`Study.builds_on` (by name). A name there that no study
    registers, or a cycle, is a :class:`ConfigError` naming it."""
    roots = sorted(n for n in _REGISTRY if builtin(n)) + [n for n in _REGISTRY if not builtin(n)]
    out: list[str] = []
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in done:
            return
        if name in path:
            raise ConfigError(f"studies build on each other in a circle: {' -> '.join((*path, name))} "
                              f"(bfio.studies.registry.Study.builds_on)")
        for dep in sorted(_REGISTRY[name].builds_on):
            if dep not in _REGISTRY:
                raise ConfigError(f"study '{name}' builds on '{dep}', which no study registers "
                                  f"(registered: {', '.join(sorted(_REGISTRY))})")
            visit(dep, (*path, name))
        done.add(name)
        out.append(name)

    for name in roots:
        visit(name, ())
    return out


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
    """The generic study writing ``results/tables/<table>.csv`` (one of its tables)."""
    for s in generic_studies().values():
        if any(t.name == table for t in s.tables):
            return s
    raise ConfigError(f"no generic study writes results/tables/{table}.csv")


def by_figure(figure: str) -> Study:
    """The generic study drawing ``figures/<figure>.png`` (one of its figures)."""
    for s in generic_studies().values():
        if any(f.name == figure for f in s.figures):
            return s
    raise ConfigError(f"no generic study draws figures/{figure}.png")


def _load() -> None:
    """Import every module of :mod:`bfio.studies` (by name; the registry's order
    does not depend on it, :func:`_ordered`): a study module registers itself on
    import, so adding one is adding its module, not a name to a list here. Then
    the plugins (:mod:`bfio.ground.plugins`)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib
    import pkgutil

    import bfio.studies as package  # local: the package imports this module as it loads

    try:
        for mod in sorted(m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_")):
            importlib.import_module(f"bfio.studies.{mod}")

        load_plugins()
    except BaseException:
        _loaded = False
        raise


__all__ = ["Study", "Table", "Figure", "Product", "load_function", "draw", "register_study", "builtin", "studies", "generic_studies", "by_directory", "by_table", "by_figure"]
