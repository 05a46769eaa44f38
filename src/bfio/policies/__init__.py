"""Routing policies behind a registry by name.

``make_policy("jsq_tokens")`` builds a policy; ``register`` adds one (the BF-IO
router registers itself as ``bfio``). The registry is the single source of policy
names and labels (a class's ``name`` and ``label``): the CLI help, the config
schema's enums and row pattern, the experiments' baselines and the table labels
read it, so a new baseline is one new module with a registered class: in this
package, or anywhere as a plugin (:mod:`bfio.ground.plugins`; modules are imported
when the registry is first read). Its options are declared once on the class
(:mod:`bfio.ground.options`). Baselines
pick from the pool oldest first (``../shared/spec/semantics.md``, "Baseline
policies"). Production baselines
with instant dispatch (``vllm_dp``, ``vllm_token_lb``, ``sglang_total_requests``,
``sglang_total_tokens``, ``least_tokens``, and the instant variants of
``jsq_requests``, ``round_robin``, ``power_of_two``, ``random``) derive from
:class:`~bfio.policies.base.InstantPolicy` (option ``report_interval``: load
reports that lag) and are described in ``docs/online.md``.
"""

from __future__ import annotations

import re

from bfio.ground.errors import ConfigError
from bfio.lookahead.run_keys import BFIO_ROW_PATTERN
from bfio.policies.base import CENTRAL_ONLY, DISPATCH_MODES, DispatchState, Policy, RoutingState
from bfio.ground.plugins import load_plugins, plugin_modules
from bfio.ground.options import declared_options
from bfio.policies.names import ROUTER_NAMES, router_label

_REGISTRY: dict[str, type[Policy]] = {}

#: Policies whose rows carry options in their key, with the regular expression
#: that validates those keys in the config schema (BF-IO: ``bfio_h<H>[_literal]``,
#: built by :func:`bfio.lookahead.run_keys.row_key` and looked up, never parsed, by
#: :func:`bfio.lookahead.run_keys.row_spec`).
#: Every other registered policy is a *baseline*: its row key is its name.
KEYED_ROWS = {"bfio": BFIO_ROW_PATTERN}


def register(cls: type[Policy]) -> type[Policy]:
    """Class decorator: make ``cls`` available under ``cls.name`` (to
    :func:`make_policy`, the CLI, the config schema, the experiments and the
    tables, which all read this registry).

    A name is registered once: a class of another module or name under a taken
    name (a plugin calling its policy ``fcfs``) is refused with an error naming
    both classes, so a plugin can never run in a built-in's place. The same
    class again, or the class of a re-imported module, is accepted. A policy
    registered outside this package first loads the built-ins, so it meets them
    whichever module is imported first."""
    if not cls.__module__.startswith(f"{__name__}."):
        _load_builtin()
    old = _REGISTRY.get(cls.name)
    if old is not None and old is not cls and _where(old) != _where(cls):
        raise ConfigError(f"policy '{cls.name}' is already registered by {_where(old)}; {_where(cls)} cannot "
                          f"register it again (a plugin's policy needs a name of its own; "
                          f"$BFIO_PLUGINS or entry points 'bfio.plugins' name the plugins)")
    _REGISTRY[cls.name] = cls
    return cls


def _where(cls: type) -> str:
    """``module.Class`` of a registered policy class, as errors name it."""
    return f"{cls.__module__}.{cls.__qualname__}"


def available() -> list[str]:
    """Names of the registered policies, sorted."""
    _load_builtin()
    return sorted(_REGISTRY)


def registered() -> list[str]:
    """Names of the registered policies in registration order (the built-in
    baselines first, in the paper's order, then BF-IO, then the package's other
    modules by name, then plugins), whichever module happened to be imported
    first (:func:`_registration_rank`)."""
    _load_builtin()
    return sorted(_REGISTRY, key=_registration_rank)


def _registration_rank(name: str) -> tuple:
    """Where policy ``name`` stands in :func:`registered`: its module's place
    (:data:`BUILTIN_MODULES`, then this package's other modules by name, then
    modules outside it), then its definition order within the module."""
    cls = _REGISTRY[name]
    module = cls.__module__.removeprefix(f"{__name__}.")
    order = list(_REGISTRY).index(name)
    if module in BUILTIN_MODULES:
        return 0, BUILTIN_MODULES.index(module), "", order
    if module != cls.__module__:
        return 1, 0, module, order
    return 2, 0, "", order


def baselines() -> list[str]:
    """Registered policies whose row key is their name (all but :data:`KEYED_ROWS`),
    in registration order."""
    return [n for n in registered() if n not in KEYED_ROWS]


def supporting(dispatch: str) -> list[str]:
    """Registered policies that support ``dispatch`` (``central`` or ``instant``),
    in registration order."""
    return [n for n in registered() if dispatch in getattr(_REGISTRY[n], "dispatch_modes", CENTRAL_ONLY)]


def _registered_class(name: str) -> type[Policy] | None:
    """The class registered as ``name``, or None, importing the policy modules
    only when the answer needs them: a built-in's name
    (:data:`bfio.policies.names.ROUTER_NAMES` names every built-in, and a plugin
    cannot take one: :func:`register`) or a run without plugins
    (:func:`bfio.ground.plugins.plugin_modules`) is answered without them. A table
    job labels its rows this way without importing numba and the solvers, a
    third of its start (issue 42)."""
    if name not in _REGISTRY and name not in ROUTER_NAMES and plugin_modules():
        _load_builtin()
    return _REGISTRY.get(name)


def is_registered(name: str) -> bool:
    """Whether ``name`` is a registered policy (built-in or plugin)."""
    return name in ROUTER_NAMES or _registered_class(name) is not None


def policy_label(name: str) -> str:
    """Display label of policy ``name``: its class's own ``label`` (a plugin's),
    else the built-in's (:data:`bfio.policies.names.ROUTER_NAMES`), else the name."""
    cls = _registered_class(name)
    # the class's own label only: a subclass registered under another name
    # without a label of its own is shown by its name, not by its parent's label
    own = cls.__dict__.get("label") if cls is not None else None
    return own or router_label(name)


def row_pattern() -> str:
    """Regular expression of every valid policy row key: a baseline name or a
    keyed row (``bfio_h<H>[_literal]``)."""
    names = [re.escape(n) for n in baselines()] + [KEYED_ROWS[n] for n in registered() if n in KEYED_ROWS]
    return "^(" + "|".join(names) + ")$"


def policy_class(name: str) -> type[Policy]:
    """The class registered as ``name`` (its ``options`` declare what it takes)."""
    _load_builtin()
    if name not in _REGISTRY:
        raise ConfigError(f"policy: unknown policy '{name}' (available: {', '.join(sorted(_REGISTRY))})")
    return _REGISTRY[name]


def policy_options() -> dict:
    """Option name -> ``(declaration, policies that take it)`` over every registered
    policy (:func:`bfio.ground.options.declared_options`): what the CLI's flags
    and the config's ``policy_options`` sections are made of."""
    return declared_options(policy_class(n) for n in registered())


def make_policy(name: str, seed: int = 0, **options) -> Policy:
    """Instantiate the policy registered as ``name`` with its options."""
    _load_builtin()
    if name not in _REGISTRY:
        raise ConfigError(f"policy: unknown policy '{name}' (available: {', '.join(sorted(_REGISTRY))})")
    return _REGISTRY[name](seed=seed, **options)


#: Built-in policy modules in registration order (the order of names in help
#: texts); any other module of this package is imported after them, by name.
BUILTIN_MODULES = ("fcfs", "jsq", "round_robin", "random_choice", "power_of_two", "vllm_dp", "least_tokens", "bfio")
_loaded = False


def _load_builtin() -> None:
    # Imported lazily (not at package import) so each policy module registers
    # itself exactly once, after bfio.policies.base is complete.
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib
    import pkgutil

    try:
        others = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name not in BUILTIN_MODULES)
        for mod in (*BUILTIN_MODULES, *others):
            importlib.import_module(f"{__name__}.{mod}")

        load_plugins()  # policies outside the package ($BFIO_PLUGINS, entry points)
    except BaseException:
        _loaded = False
        raise


def check_policy_options(key: str, policy: str, options: dict, dispatch: str | None = None) -> None:
    """Build ``policy`` with ``options`` as a job would, so the policy's own
    checks run when a config loads; errors name the config ``key`` (and the
    option), and a ``dispatch`` the policy does not support."""
    if policy not in available():
        raise ConfigError(f"config key '{key}': unknown policy '{policy}' (available: {', '.join(available())})")
    try:
        pol = make_policy(policy, **options)
    except TypeError as e:
        bad = [k for k in options if f"'{k}'" in str(e)]
        where = f"{key}.{bad[0]}" if bad else key
        raise ConfigError(f"config key '{where}': not an option of policy '{policy}' ({e})") from None
    except ConfigError as e:
        opt = str(e).split(":", 1)[0]
        where = f"{key}.{opt}" if opt in options else key
        raise ConfigError(f"config key '{where}': {e}") from None
    if dispatch is not None and dispatch not in getattr(pol, "dispatch_modes", ("central",)):
        raise ConfigError(f"config key '{key}': policy '{policy}' does not support {dispatch} dispatch "
                          f"(it supports: {', '.join(pol.dispatch_modes)})")


__all__ = ["DispatchState", "Policy", "RoutingState", "register", "available", "registered", "is_registered", "baselines",
           "supporting", "policy_label", "row_pattern", "make_policy", "policy_class", "policy_options", "KEYED_ROWS",
           "check_policy_options"]
