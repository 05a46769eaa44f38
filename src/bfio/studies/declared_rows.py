"""The rows a config declares by label (issue 43): study variants
(``<section>.variants``: ``{label: {policy, **options}}``) and the starvation
study's admission rows (``bfio_h<H>_<admission>`` for every horizon of a setting
and every admission rule). Each becomes a :class:`bfio.lookahead.run_keys.RowSpec` here,
once; labels are then looked up (:func:`bfio.lookahead.run_keys.row_spec`,
:func:`bfio.lookahead.run_keys.declared_spec`) by the tables and figures that only have a
table's ``row`` column, so no key is parsed. Light on purpose (no simulator, no
study registry): a figure job declares its config's rows and imports its figure
module alone.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import yaml

from bfio.lookahead.discount import OBJECTIVES
from bfio.ground.errors import ConfigError
from bfio.lookahead.run_keys import RowSpec, declare_rows


def starvation_row_specs(setting: dict, section: dict) -> list[RowSpec]:
    """The starvation study's BF-IO rows of one setting: every horizon of the setting
    and every admission rule of the study (config order; :func:`bfio.studies.starvation.starvation_variants`)."""
    return [RowSpec("bfio", int(h), admission=a) for h in setting["horizons"] for a in section["admissions"]]


def variant_spec(options: dict) -> RowSpec | None:
    """The spec of a study variant ``{policy, **options}``: its policy and, for BF-IO,
    its ``horizon``, ``objective`` and ``admission`` (``None``: no policy, or a BF-IO
    variant without a horizon or with options a row cannot carry; the config's
    validation reports those)."""
    policy = options.get("policy")
    if not isinstance(policy, str):
        return None
    if policy != "bfio":
        return RowSpec(policy)
    objective = options.get("objective", "default")
    if options.get("horizon") is None or objective not in OBJECTIVES:
        return None
    try:
        return RowSpec("bfio", options["horizon"], objective, options.get("admission"))
    except ConfigError:
        return None


def config_rows(config: dict) -> dict:
    """Label -> :class:`~bfio.lookahead.run_keys.RowSpec` of every row the config declares by label:
    every section's ``variants`` and the starvation study's admission rows. A label
    two sections declare differently is left out (it names no one row)."""
    out: dict = {}
    ambiguous: set = set()

    def add(label, spec):
        if spec is None:
            return
        if label in out and out[label] != spec:
            ambiguous.add(label)
        out.setdefault(label, spec)

    for section in config.values():
        if isinstance(section, dict) and isinstance(section.get("variants"), dict):
            for label, options in section["variants"].items():
                if isinstance(options, dict):
                    add(label, variant_spec(options))
    starvation = config.get("starvation") or {}
    settings = starvation.get("settings") or []
    for setting in (settings.values() if isinstance(settings, dict) else settings):
        if isinstance(setting, dict) and setting.get("horizons") and starvation.get("admissions"):
            for spec in starvation_row_specs(setting, starvation):
                add(spec.key, spec)
    return {k: v for k, v in out.items() if k not in ambiguous}


def declare_config_rows(config: dict) -> dict:
    """Declare the config's rows (:func:`config_rows`, :func:`bfio.lookahead.run_keys.declare_rows`); returns them."""
    rows = config_rows(config)
    declare_rows(rows)
    return rows


class UnreadConfigWarning(UserWarning):
    """A config file of the repository could not be read for its rows (the notebook's
    path, :func:`declare_run_rows`); the message names the file and why."""


def declare_run_rows(root, run_name: str | None) -> list[Path]:
    """Declare the rows of a pipeline run's config read from the repository ``root``
    (the notebook's tables, :mod:`bfio.pipeline.explore`, as the pipeline's jobs do):
    ``config/*.yaml`` whose ``run_name`` is ``run_name`` (``None``: the default run,
    the files without one). Returns the files read. A file that cannot be read or
    parsed, or that is not a mapping, is skipped with an :class:`UnreadConfigWarning`
    naming it and the error (its rows, if it declared any, show as their keys): the
    notebook still opens. The pipeline reads its config through Snakemake, which
    stops on such a file."""
    read = []
    for file in sorted((Path(root) / "config").glob("*.yaml")):
        try:
            config = yaml.safe_load(file.read_text()) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
            _unread(file, f"{type(e).__name__}: {e}")
            continue
        if not isinstance(config, dict):
            _unread(file, f"its top level is a {type(config).__name__}, not a mapping of config keys")
            continue
        if config.get("run_name") == run_name:
            declare_config_rows(config)
            read.append(file)
    return read


def _unread(file: Path, why: str) -> None:
    warnings.warn(f"config file {file}: not read for its declared rows ({why}); rows only it declares "
                  "are shown by their keys", UnreadConfigWarning, stacklevel=3)


__all__ = ["starvation_row_specs", "variant_spec", "config_rows", "declare_config_rows", "declare_run_rows",
           "UnreadConfigWarning"]
