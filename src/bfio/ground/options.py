"""Policy options, each declared once (issue 28); the same :class:`Option` declares
the step model's options (:data:`bfio.step_model.OPTIONS`) and a run's cluster,
arrival and prefill parameters (:mod:`bfio.engine.run_parameters`, issue 43).

A policy class lists its options in ``options``, a tuple of :class:`Option`
(name, type, default, help, allowed values or range, when the option applies
and when it identifies a run). Everything else is derived from that one
declaration:

- the policy's own defaults and checks (:func:`resolve`, called by
  :class:`bfio.policies.base.Policy`);
- ``bfio simulate``'s flags, their help and the refusal of an option the
  chosen policy does not take or that would be ignored
  (:mod:`bfio.cli.simulate`, :func:`declared_options`);
- the config schema's options sections (``bfio`` and
  ``policy_options.<policy>``, :func:`schema_properties`, filled in by
  :func:`bfio.pipeline.config.validate_config`);
- ``describe()``, the policy's identity in results (:func:`identity`);
- BF-IO's rows of ``config/README.md`` (:mod:`bfio.pipeline.config_readme`: type, default
  and :attr:`Option.doc`).

Values of an option can depend on a registry (``choices`` given as a
callable, read when needed; a :class:`Registry` also names where they come
from), so names are never written twice.
"""

from __future__ import annotations

import importlib
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from bfio.ground.errors import ConfigError

#: When an option appears in a policy's identity (``describe()``, the run's
#: ``policy`` column): ``always``; ``applies``: when it applies
#: (:attr:`Option.applies_with`); ``non-default``: when it applies and differs
#: from its default (an option added later leaves earlier runs' identities as
#: they were); ``never``: it is reported some other way.
IDENTITY = ("always", "applies", "non-default", "never")
_TYPE_NAMES = {int: "integer", float: "number", str: "string"}


@dataclass(frozen=True)
class Registry:
    """An option's allowed values read from a registry when needed: the names of
    ``module.attribute`` (a tuple, or a mapping's keys); docs say where they come
    from by :meth:`__str__` (``bfio.predictors.PREDICTORS``)."""

    module: str
    attribute: str

    def __call__(self) -> tuple:
        return tuple(getattr(importlib.import_module(self.module), self.attribute))

    def __str__(self) -> str:
        return f"{self.module}.{self.attribute}"


@dataclass(frozen=True)
class Option:
    """One policy option: the single place its name, type, default and help are written.

    ``choices``: the allowed values (a tuple, or a callable returning them, for a
    registry); ``minimum``/``exclusive_minimum``/``maximum``: the range of a
    number; ``pattern``: a regular expression a string must match (with
    ``pattern_help`` saying it in words); ``default=None`` with ``derived``: the
    value comes from another option, or none is a value of its own (``derived``
    says which: ``the fitted value of --gpu and --model``, ``unbounded``).
    ``applies_with=(other, values)``: the option has an effect only when option
    ``other`` takes one of ``values`` (given otherwise, the command line refuses it:
    it would be ignored). ``identity``: see :data:`IDENTITY`."""

    name: str
    type: type
    default: Any
    help: str
    choices: tuple | Callable[[], Sequence] | None = None
    minimum: float | None = None
    exclusive_minimum: float | None = None
    maximum: float | None = None
    pattern: str | None = None
    pattern_help: str = ""
    derived: str = ""
    applies_with: tuple[str, tuple] | None = None
    identity: str = "always"
    metavar: str | None = None
    #: with ``identity="non-default"``: the value left out of a run's identity when it
    #: is not the default (an option whose default changed keeps earlier runs' identities;
    #: ``None``: the default)
    identity_omits: Any = None
    #: the command-line flag when it is not ``--<name>`` (a run parameter whose library
    #: name is short within its section: ``prefill.chunk_tokens`` is ``--prefill-chunk-tokens``)
    cli_flag: str = ""
    #: the meaning ``config/README.md`` gives (Markdown sentences; ``""``: :attr:`help`);
    #: not part of the option's equality (policies sharing an option may word it their way)
    doc: str = field(default="", compare=False)

    def __post_init__(self):
        if self.type not in _TYPE_NAMES:
            raise TypeError(f"option {self.name}: type must be int, float or str, got {self.type!r}")
        if self.identity not in IDENTITY:
            raise TypeError(f"option {self.name}: identity must be one of {IDENTITY}, got {self.identity!r}")

    # -- derived views ------------------------------------------------------------------
    @property
    def flag(self) -> str:
        """The command-line flag, ``--time-limit-s`` for ``time_limit_s`` (or :attr:`cli_flag`)."""
        return self.cli_flag or "--" + self.name.replace("_", "-")

    def allowed(self) -> tuple | None:
        """The allowed values (``None``: any value of the type within the range)."""
        if self.choices is None:
            return None
        return tuple(self.choices() if callable(self.choices) else self.choices)

    def describe_values(self) -> str:
        """The allowed values or range in words, for help texts and errors."""
        allowed = self.allowed()
        if allowed is not None:
            return " | ".join(map(str, allowed))
        if self.pattern_help:
            return self.pattern_help
        number = "{:d}" if self.type is int else "{:g}"  # an integer bound in full (2^52 + 2^45, not 4.5e+15)
        lo = (">= " + number.format(self.minimum) if self.minimum is not None else
              "> " + number.format(self.exclusive_minimum) if self.exclusive_minimum is not None else "")
        hi = "<= " + number.format(self.maximum) if self.maximum is not None else ""
        rng = " and ".join(x for x in (lo, hi) if x)
        return f"{'an' if self.type is int else 'a'} {_TYPE_NAMES[self.type]}" + (f" {rng}" if rng else "")

    def help_text(self) -> str:
        """The flag's help: the option's help, its values and its default."""
        default = self.derived or ("none" if self.default is None else f"{self.default}")
        values = "" if self.allowed() is not None else f"{self.describe_values()}; "  # choices are listed apart
        return f"{self.help} ({values}default {default})"

    def applies(self, values: dict) -> bool:
        """Whether the option has an effect given the policy's resolved ``values``."""
        if self.applies_with is None:
            return True
        other, among = self.applies_with
        return values.get(other) in among

    # -- checking -----------------------------------------------------------------------
    def check(self, value):
        """``value`` as the option's type, or a :class:`ConfigError` naming the option."""
        if value is None and self.derived:
            return None
        want = _TYPE_NAMES[self.type]
        if self.type is int:
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ConfigError(f"{self.name}: expected {self.describe_values()}, got {value!r}")
            value = int(value)
        elif self.type is float:
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                    or not math.isfinite(float(value)):
                raise ConfigError(f"{self.name}: expected a finite {want}, got {value!r}")
            value = float(value)
        elif not isinstance(value, str):
            raise ConfigError(f"{self.name}: expected a {want} ({self.describe_values()}), got {value!r}")
        allowed = self.allowed()
        if allowed is not None and value not in allowed:
            raise ConfigError(f"{self.name}: expected {' | '.join(map(str, allowed))}, got {value!r}")
        if self.pattern is not None and not re.fullmatch(self.pattern, value):
            raise ConfigError(f"{self.name}: expected {self.describe_values()}, got {value!r}")
        if ((self.minimum is not None and value < self.minimum)
                or (self.exclusive_minimum is not None and value <= self.exclusive_minimum)
                or (self.maximum is not None and value > self.maximum)):
            raise ConfigError(f"{self.name}: expected {self.describe_values()}, got {value!r}")
        return value

    def schema(self, default: bool = False) -> dict:
        """The option as a JSON-schema property (type, allowed values or range,
        description; no default: the policy's own is the only one; ``default=True``:
        the declared default, which the config's validation fills in)."""
        out: dict = {"type": [_TYPE_NAMES[self.type], "null"] if self.derived else _TYPE_NAMES[self.type],
                     "description": self.help_text()}
        if default:
            out["default"] = self.default
        allowed = self.allowed()
        if allowed is not None:
            out["enum"] = list(allowed) + ([None] if self.derived else [])
        for key in ("minimum", "exclusiveMinimum", "maximum", "pattern"):
            attr = {"exclusiveMinimum": "exclusive_minimum"}.get(key, key)
            if getattr(self, attr) is not None:
                out[key] = getattr(self, attr)
        return out


def declared(cls) -> tuple[Option, ...]:
    """The options of policy class ``cls`` (its own and its bases', in declaration order)."""
    return tuple(getattr(cls, "options", ()))


def resolve(cls, given: dict) -> dict:
    """Every option of policy class ``cls``: ``given`` checked (an unknown name
    is an error naming the policy and its options), the rest at their defaults."""
    options = {o.name: o for o in declared(cls)}
    unknown = sorted(set(given) - set(options))
    if unknown:
        names = ", ".join(options) or "none"
        raise ConfigError(f"{unknown[0]}: not an option of policy '{cls.name}' (its options: {names})")
    return {name: o.check(given[name]) if name in given else o.default for name, o in options.items()}


def identity(cls, values: dict) -> dict:
    """The options that identify a run of ``cls`` with resolved ``values``
    (``describe()``; :data:`IDENTITY`)."""
    return identity_of(declared(cls), values)


def identity_of(options: Sequence[Option], values: dict) -> dict:
    """The ``options`` (any declarations: a policy's, a run parameter section's) that
    identify a run with resolved ``values`` (:data:`IDENTITY`)."""
    out = {}
    for o in options:
        if o.identity == "never":
            continue
        if o.identity != "always" and not o.applies(values):
            continue
        if o.identity == "non-default" and values[o.name] == (o.default if o.identity_omits is None
                                                               else o.identity_omits):
            continue
        out[o.name] = values[o.name]
    return out


def schema_properties(cls) -> dict:
    """The config schema's properties of ``cls``'s options (a closed section)."""
    return {o.name: o.schema() for o in declared(cls)}


def declared_options(classes) -> dict[str, tuple[Option, list[str]]]:
    """Option name -> (its declaration, the policies that take it), over policy
    classes ``classes`` (registration order). One name declared differently by two
    policies is an error: a flag must mean one thing."""
    out: dict[str, tuple[Option, list[str]]] = {}
    for cls in classes:
        for o in declared(cls):
            if o.name in out:
                first, names = out[o.name]
                if first != o:
                    raise TypeError(f"option '{o.name}' is declared differently by policies {names[0]} and "
                                    f"{cls.name}; declare it once and share it")
                names.append(cls.name)
            else:
                out[o.name] = (o, [cls.name])
    return out


__all__ = ["Registry", "Option", "IDENTITY", "declared", "resolve", "identity", "identity_of", "schema_properties",
           "declared_options"]
