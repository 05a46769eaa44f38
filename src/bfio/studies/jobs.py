"""What a study's table, extras, product and figure jobs need from the registry,
handed to them by the pipeline as import paths (issue 42).

Reading the registry (:func:`bfio.studies.registry.studies`) imports every
study module, and a study module imports what its simulations need: the
simulator, the solvers and numba, about half a second of every job's start.
The jobs that only tabulate and draw need one function of one study, so the
workflow (which reads the registry once) passes each such job a description
(:func:`table_job`, :func:`extras_job`, :func:`product_job`,
:func:`figure_job`) naming its function by ``"module:function"``
(:func:`import_path`), and the job imports that module alone
(:func:`bfio.studies.registry.load_function`). A study's table, extras, product and plot functions are
therefore module-level functions, kept in modules that do not import the
simulator (its summary and figure modules; ``tests/test_job_imports.py``
checks every registered one). :func:`batched_settings` says which study settings
share a simulation job when the config runs several to a job
(:mod:`bfio.studies.setting_jobs` runs them).
"""

from __future__ import annotations

from bfio.ground.errors import ConfigError
from bfio.studies.registry import Study, by_directory, by_figure, by_table, load_function


def import_path(func, what: str) -> str:
    """``"module:function"`` naming ``func`` (``func`` itself when already such a
    path), checked to import back to the same object; a lambda, a nested function
    or any other object a job could not import by name is a :class:`ConfigError`
    naming ``what``."""
    if isinstance(func, str):
        return func
    module, name = getattr(func, "__module__", None), getattr(func, "__qualname__", "")
    if module and name and "<" not in name and load_function(f"{module}:{name}") is func:
        return f"{module}:{name}"
    raise ConfigError(f"{what}: {func!r} is not a module-level function; the pipeline's job imports it by "
                      "name ('module:function'), so define it at the top level of a module")


def table_job(table: str) -> dict:
    """The job of ``results/tables/<table>.csv``: its ``tabulate`` function, whether
    it takes ``inputs=`` (the study's :attr:`~bfio.studies.registry.Study.table_inputs`)
    and the keywords of its products, in input order."""
    study = by_table(table)
    spec = study.table_named(table)
    return {"tabulate": import_path(spec.tabulate, f"study '{study.name}', table '{table}' (tabulate)"),
            "inputs": study.table_inputs is not None, "products": [kw for kw, _ in spec.products]}


def extras_job(table: str) -> dict:
    """The job of ``results/tables/<table>_<extra>.json``: the study's ``extras``
    function and whether it takes ``inputs=``."""
    study = by_table(table)
    return {"extras": import_path(study.extras, f"study '{study.name}' (extras)"),
            "inputs": study.table_inputs is not None}


def product_job(directory: str, file: str) -> dict:
    """The job of ``results/studies/<directory>/<file>``: the product's ``make``
    function (``None``: the runs in one file)."""
    study = by_directory(directory)
    make = study.product_named(file).make
    return {"make": None if make is None else import_path(make, f"study '{study.name}', product '{file}' (make)")}


def figure_job(figure: str) -> dict:
    """The job of ``figures/<figure>.png``: its ``plot`` function, whether it reads a
    table and the keywords of its products, in input order."""
    study = by_figure(figure)
    spec = study.figure_named(figure)
    return {"plot": import_path(spec.plot, f"study '{study.name}', figure '{figure}' (plot)"),
            "table": spec.table is not None, "products": [kw for kw, _ in spec.products]}


def _needs(study: Study, name: str, setting: dict) -> list[str]:
    return list(study.needs(name, setting)) if study.needs is not None else []


def batched_settings(studies: dict[str, Study], settings: dict[str, dict], per_job: int
                     ) -> list[tuple[tuple[str, str], ...]]:
    """``(study name, setting name)`` of every setting that needs nothing of another
    setting (:attr:`Study.needs` empty), in registry then settings order,
    ``per_job`` to a job (the last may hold fewer); ``per_job`` 1: none (every
    setting its own ``study_simulate`` job). A setting whose runs file the
    unbatched rule's wildcard constraints would also match (its file stem is
    the stem of a setting with needs, in a study with such settings) keeps its
    own job, so no file has two rules."""
    if per_job <= 1:
        return []
    needing = {(n, k) for n, s in studies.items() for k, v in settings[n].items() if _needs(s, k, v)}
    stems = {studies[n].run_stem(k, settings[n][k]) for n, k in needing}
    directories = {studies[n].directory for n, _ in needing}
    units = [(n, k) for n, s in studies.items() for k, v in settings[n].items()
             if (n, k) not in needing and not (s.directory in directories and s.run_stem(k, v) in stems)]
    return [tuple(units[i:i + per_job]) for i in range(0, len(units), per_job)]


__all__ = ["import_path", "table_job", "extras_job", "product_job", "figure_job", "batched_settings"]
