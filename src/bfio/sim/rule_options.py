"""The options of an action's rule (issue 45: :mod:`bfio.sim.pause`,
:mod:`bfio.sim.migration`): a rule declares its options by their defaults, and a
run's options are checked against them here, in one way for every action. Every
refusal is a :class:`~bfio.ground.errors.ConfigError` that names the argument (``where``,
e.g. ``rank_pause_options``) and the option."""

from __future__ import annotations

import numpy as np

from bfio.ground.errors import ConfigError


def typed_option(where: str, rule: str, key: str, value, default):
    """``value`` of option ``key`` as the type of its default (a CLI string too):
    a string, a whole number (``2.0`` is 2, ``2.5`` an error) or a finite number."""
    try:
        if isinstance(default, str):
            return str(value)
        if isinstance(default, int):
            as_float = float(value)
            if isinstance(value, bool) or not np.isfinite(as_float) or as_float != int(as_float):
                raise ValueError
            return int(as_float)
        out = float(value)
        if isinstance(value, bool) or not np.isfinite(out):
            raise ValueError
        return out
    except (TypeError, ValueError):
        kind = "a whole number" if isinstance(default, int) else "a number"
        raise ConfigError(f"{where}: {key} of '{rule}' must be {kind}, got {value!r}") from None


def out_of_range(where: str, rule: str, key: str, value, must: str):
    """Refuse option ``key`` of ``rule`` outside its range (``must``: the range in words)."""
    raise ConfigError(f"{where}: {key} of '{rule}' must be {must}, got {value!r}")


def rule_options(where: str, rule: str, given, defaults: dict) -> dict:
    """Rule ``rule``'s full options: ``given`` (a dict or ``None``) over ``defaults``,
    each typed as its default; an option the rule does not declare is refused by name."""
    if not isinstance(given, (dict, type(None))):
        raise ConfigError(f"{where}: expected a dict of option -> value, got {type(given).__name__}")
    unknown = sorted(set(given or {}) - set(defaults))
    if unknown:
        raise ConfigError(f"{where}: unknown option(s) {', '.join(map(str, unknown))} of {rule!r} "
                          f"(known: {', '.join(defaults)})")
    return {k: typed_option(where, rule, k, (given or {}).get(k, d), d) for k, d in defaults.items()}


def checked_rule(key: str, rule, rules: dict, given, dispatch: str, noun: str, acts: str) -> tuple[str, dict]:
    """An action's rule (the argument ``key``, e.g. ``rank_pause``) and its options
    (``key_options``, ``given``) checked: ``none`` or a name of ``rules`` (name -> class
    with ``defaults``), options only with a rule, a rule only with instant dispatch
    (``acts``: what it does that needs ranks' own queues). Returns the rule and its
    full options (``{}`` for ``none``)."""
    where = f"{key}_options"
    rule = "none" if rule is None else rule
    names = ("none", *rules)
    if rule not in names:
        raise ConfigError(f"{key}: must be one of {', '.join(names)}, got {rule!r}")
    if rule == "none":
        if given:
            raise ConfigError(f"{where}: {sorted(given)} given without a {noun} rule ({key} 'none')")
        return "none", {}
    if dispatch != "instant":
        raise ConfigError(f"{key}: {rule!r} {acts}, which only dispatch 'instant' has (got dispatch {dispatch!r})")
    return rule, rule_options(where, rule, given, rules[rule].defaults)
