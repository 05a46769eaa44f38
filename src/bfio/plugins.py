"""Plugins: policies and studies that live outside this package (issue 28).

A plugin is a Python module that registers a policy
(:func:`bfio.policies.register`) or a study
(:func:`bfio.studies.registry.register_study`) when it is imported. The
registries import every plugin named in the environment variable
``BFIO_PLUGINS`` (module names, comma-separated, importable from
``PYTHONPATH``) or declared by an installed package under the entry-point
group ``bfio.plugins``, before they are first read, in the command line, the
pipeline and its jobs alike (the variable is inherited by every job).
"""

from __future__ import annotations

import importlib
import os

from bfio.errors import ConfigError

#: The environment variable naming plugin modules.
PLUGINS_ENV = "BFIO_PLUGINS"
#: The entry-point group of installed plugins.
ENTRY_POINT_GROUP = "bfio.plugins"

_loaded: set[str] = set()


def plugin_modules() -> list[str]:
    """The plugin modules: ``$BFIO_PLUGINS`` then the entry points, each once."""
    from importlib.metadata import entry_points

    names = [n.strip() for n in os.environ.get(PLUGINS_ENV, "").split(",") if n.strip()]
    names += [ep.value.split(":")[0] for ep in entry_points(group=ENTRY_POINT_GROUP)]
    return list(dict.fromkeys(names))


def load_plugins() -> None:
    """Import every plugin module not imported yet; a module that cannot be
    imported is an error naming it and where it was named."""
    for name in plugin_modules():
        if name in _loaded:
            continue
        try:
            importlib.import_module(name)
        except ImportError as e:
            raise ConfigError(f"plugin '{name}' (${PLUGINS_ENV} or entry points '{ENTRY_POINT_GROUP}') cannot be "
                              f"imported: {e}") from None
        _loaded.add(name)


__all__ = ["PLUGINS_ENV", "ENTRY_POINT_GROUP", "plugin_modules", "load_plugins"]
