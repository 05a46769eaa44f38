"""Plugins: policies and studies that live outside this package (issue 28).

A plugin is a Python module that registers a policy
(:func:`bfio.policies.register`) or a study
(:func:`bfio.studies.registry.register_study`) when it is imported. The
registries import every plugin named in the environment variable
``BFIO_PLUGINS`` (module names, comma-separated, importable from
``PYTHONPATH``, never from the current directory implicitly) or declared by an installed package under the entry-point
group ``bfio.plugins``, before they are first read, in the command line, the
pipeline and its jobs alike (the variable is inherited by every job).
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from contextlib import contextmanager
from functools import lru_cache

from bfio.ground.errors import ConfigError

#: The environment variable naming plugin modules.
PLUGINS_ENV = "BFIO_PLUGINS"
#: The entry-point group of installed plugins.
ENTRY_POINT_GROUP = "bfio.plugins"
#: An absolute, dotted module name (``pkg.mod``); a relative one (``.mod``) is refused.
_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")

_loaded: set[str] = set()


def plugin_modules() -> list[str]:
    """The plugin modules: ``$BFIO_PLUGINS`` then the entry points, each once."""
    return list(dict.fromkeys(_env_names() + list(_entry_point_modules())))


@lru_cache(maxsize=None)
def _entry_point_modules() -> tuple[str, ...]:
    """The modules of the installed packages' entry points (read once a process:
    scanning every package's metadata costs tens of milliseconds)."""
    from importlib.metadata import entry_points

    return tuple(ep.value.split(":")[0] for ep in entry_points(group=ENTRY_POINT_GROUP))


def _env_names() -> list[str]:
    return [n.strip() for n in os.environ.get(PLUGINS_ENV, "").split(",") if n.strip()]


def _origin(name: str) -> str:
    """Where plugin ``name`` was named, as errors say it."""
    return f"${PLUGINS_ENV}" if name in _env_names() else f"entry point group '{ENTRY_POINT_GROUP}'"


def search_path() -> list[str]:
    """``sys.path`` without the entry Python put there implicitly for the current
    directory (``python -m bfio.cli`` makes ``sys.path[0]`` the working
    directory): a plugin is found on ``PYTHONPATH`` or among the installed
    packages, never in whatever directory a command happens to run in, unless
    ``PYTHONPATH`` names that directory."""
    if not sys.path:
        return []
    cwd = os.path.realpath(os.getcwd())
    explicit = {os.path.realpath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    first = sys.path[0]
    if os.path.realpath(first or ".") == cwd and cwd not in explicit:
        return list(sys.path[1:])
    return list(sys.path)


@contextmanager
def without_implicit_cwd():
    """Import with :func:`search_path` as ``sys.path`` (restored afterwards)."""
    saved = list(sys.path)
    sys.path[:] = search_path()
    try:
        yield
    finally:
        sys.path[:] = saved


def check_name(name: str) -> str:
    """``name`` if it is an absolute dotted module name, else a :class:`ConfigError`."""
    if not _MODULE_NAME.match(name):
        raise ConfigError(f"plugin '{name}' ({_origin(name)}): not an absolute module name (e.g. 'mypkg.policy'); "
                          "relative names and file paths are not accepted")
    return name


def load_plugins() -> None:
    """Import every plugin module not imported yet. A module that cannot be
    imported (missing, a syntax error, an exception while it runs, a policy or
    study name that is taken) is a :class:`ConfigError` naming it and where it
    was named, in one line."""
    for name in plugin_modules():
        if name in _loaded:
            continue
        check_name(name)
        try:
            with without_implicit_cwd():
                importlib.import_module(name)
        except ConfigError as e:
            raise ConfigError(f"plugin '{name}' ({_origin(name)}) cannot be loaded: {e}") from None
        except ImportError as e:
            raise ConfigError(f"plugin '{name}' ({_origin(name)}) cannot be imported: {e} (plugins are found on "
                              "PYTHONPATH or among the installed packages, not in the current directory)") from None
        except SyntaxError as e:
            raise ConfigError(f"plugin '{name}' ({_origin(name)}) cannot be imported: syntax error in "
                              f"{e.filename}, line {e.lineno}: {e.msg}") from None
        except Exception as e:  # noqa: BLE001 - any failure of a third-party module is reported by name
            raise ConfigError(f"plugin '{name}' ({_origin(name)}) failed while importing: "
                              f"{type(e).__name__}: {e}") from None
        _loaded.add(name)


__all__ = ["PLUGINS_ENV", "ENTRY_POINT_GROUP", "plugin_modules", "load_plugins", "search_path", "without_implicit_cwd", "check_name"]
