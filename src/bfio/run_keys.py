"""Run keys: a row's typed identity (:class:`RowSpec`) and the one function that
writes its *row key* (the ``row`` of a results table and the ``<row>`` of a run
path such as ``longbench/n80000-g256-b72/bfio_h40/seed42``). Issue 43: the key
is a display and path name only; it is made by :func:`row_key` and never parsed
back. Where only a key is at hand (a config list, a table's ``row`` column) its
spec is *looked up* (:func:`row_spec`, :func:`declared_spec`) among the rows
that were declared: no regular expression reads a key.

A row key is

- a baseline's policy name (``fcfs``, ``jsq_tokens``, ...; the policy registry,
  :func:`bfio.policies.baselines`);
- ``bfio_h<H>``: BF-IO with lookahead ``H`` and the default objective
  (Section 4; ``docs/bfio.md``);
- ``bfio_h<H>_literal``: the same with Eq. (IO) as printed (objective
  ``paper-literal``: ``delta = 1``, new requests persist);
- ``bfio_h<H>_<admission>`` (``bfio_h40_aging200``): the starvation study's
  BF-IO rows with an admission rule.

The BF-IO rows of the paper experiments (``bfio_h<H>[_literal]``, ``0 <= H <=``
:data:`MAX_KEY_HORIZON`) are the BF-IO policy's declared keyed rows
(:func:`keyed_row`); study rows with an admission rule and study variants are
declared by their study sections (:func:`declare_rows`, from the config:
:func:`bfio.studies.declared_rows.declare_config_rows`). Tables and figures read the
``horizon`` and ``objective`` columns a run stores (:func:`bfio.runs.experiments.run_one`;
:func:`bfio.runs.tables.stored_keys`) where the table has them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Callable, Iterable, Mapping

from bfio.lookahead.admission import parse_admission
from bfio.lookahead.discount import OBJECTIVES
from bfio.ground.errors import ConfigError

#: Suffix of a paper-literal BF-IO row key (``bfio_h40_literal``).
LITERAL_SUFFIX = "_literal"
#: Regular expression of a BF-IO row key: the config schema's *validation* pattern
#: for rows given by key (:data:`bfio.policies.KEYED_ROWS`, :func:`bfio.policies.row_pattern`);
#: nothing parses a key with it.
BFIO_ROW_PATTERN = "bfio_h([0-9]+)(" + LITERAL_SUFFIX + ")?"
#: The longest lookahead a BF-IO row key names (its declared keyed rows, :func:`keyed_row`).
MAX_KEY_HORIZON = 10_000


@dataclass(frozen=True, order=True)
class RowSpec:
    """A row's identity: its registry ``policy`` and, for BF-IO, the lookahead
    ``horizon``, the ``objective`` (``default`` | ``paper-literal``,
    :data:`bfio.lookahead.discount.OBJECTIVES`) and the starvation study's ``admission`` rule
    (``None``: the config's). Its row key is :attr:`key`."""

    policy: str
    horizon: int | None = None
    objective: str = "default"
    admission: str | None = None

    def __post_init__(self):
        if self.policy != "bfio":
            if self.horizon is not None or self.objective != "default" or self.admission is not None:
                raise ConfigError(f"row of policy {self.policy!r}: only BF-IO rows carry a horizon, "
                                  "an objective or an admission")
            return
        if self.horizon is None or not 0 <= int(self.horizon) <= MAX_KEY_HORIZON:
            raise ConfigError(f"horizon: a BF-IO row needs 0 <= H <= {MAX_KEY_HORIZON} "
                              f"(bfio.lookahead.run_keys.MAX_KEY_HORIZON), got {self.horizon!r}")
        object.__setattr__(self, "horizon", int(self.horizon))
        if self.objective not in OBJECTIVES:
            raise ConfigError(f"objective: expected {' | '.join(OBJECTIVES)}, got {self.objective!r}")
        if self.admission is not None:
            parse_admission(self.admission)

    @property
    def key(self) -> str:
        """``bfio_h40``, ``bfio_h40_literal``, ``bfio_h40_aging200``; any other policy: its name."""
        return self.policy if self.policy != "bfio" else _bfio_key(self.horizon, self.objective, self.admission)

    def options(self) -> dict:
        """Policy options the row fixes: BF-IO's horizon, for ``paper-literal`` its
        objective's (``delta = 1``, persisting new requests), its admission rule."""
        if self.policy != "bfio":
            return {}
        out = {"horizon": self.horizon}
        if self.objective == "paper-literal":
            out.update({"objective": self.objective, **OBJECTIVES[self.objective]})
        if self.admission is not None:
            out["admission"] = self.admission
        return out

    def paper(self) -> "RowSpec":
        """The printed row a run row is compared with (``bfio_h40_literal`` -> ``bfio_h40``)."""
        return replace(self, objective="default") if self.policy == "bfio" else self

    def label(self, policy_label: Callable[[str], str] = str) -> str:
        """``BF-IO (H=40)``, ``BF-IO (H=40, paper-literal)``, ``BF-IO (H=40, aging:200)``;
        another policy: ``policy_label(policy)``."""
        if self.policy != "bfio":
            return policy_label(self.policy)
        extra = [x for x in (None if self.objective == "default" else self.objective, self.admission) if x]
        return f"{policy_label('bfio')} (H={', '.join([str(self.horizon), *extra])})"


def _bfio_key(horizon: int, objective: str, admission: str | None) -> str:
    """The one writer of a BF-IO row key (:attr:`RowSpec.key`, :func:`keyed_row`)."""
    key = f"bfio_h{horizon}" + (LITERAL_SUFFIX if objective == "paper-literal" else "")
    return key if admission is None else f"{key}_{admission_label(admission)}"


def row_key(policy: str, horizon: int | None = None, objective: str = "default", admission: str | None = None) -> str:
    """``('bfio', 40)`` -> ``'bfio_h40'``; ``('bfio', 40, 'paper-literal')`` -> ``'bfio_h40_literal'``;
    ``('bfio', 40, admission='aging:200')`` -> ``'bfio_h40_aging200'``; any other policy -> its
    name (:attr:`RowSpec.key`)."""
    if policy != "bfio":
        return policy
    return RowSpec(policy, horizon, objective, admission).key


def admission_label(admission: str) -> str:
    """Path- and label-safe form of a BF-IO admission rule: ``'aging:200'`` -> ``'aging200'``
    (raises :class:`~bfio.ground.errors.ConfigError` for an unknown rule)."""
    parse_admission(admission)
    return admission.replace(":", "")


@lru_cache(maxsize=1)
def _keyed_index() -> Mapping[str, tuple[int, str]]:
    return {_bfio_key(h, objective, None): (h, objective) for objective in OBJECTIVES
            for h in range(MAX_KEY_HORIZON + 1)}


def keyed_row(key: str) -> RowSpec | None:
    """A row among the BF-IO policy's declared keyed rows: ``bfio_h<H>`` and
    ``bfio_h<H>_literal`` for ``0 <= H <=`` :data:`MAX_KEY_HORIZON` (the rows an
    experiment's ``horizons`` and ``literal_horizons`` declare, and a config may name),
    by its key (a dictionary lookup, built by the key's one writer); else ``None``."""
    found = _keyed_index().get(key)
    return None if found is None else RowSpec("bfio", *found)


#: Rows declared by label (:func:`declare_rows`): study variants and admission rows.
_DECLARED: dict[str, RowSpec] = {}


def declare_rows(rows: Mapping[str, RowSpec] | Iterable[RowSpec]) -> None:
    """Declare rows: ``{label: spec}`` (a study variant's label and its spec) or specs
    (each under its :attr:`RowSpec.key`). A label declared again takes the new spec
    (the config a process read last)."""
    items = rows.items() if isinstance(rows, Mapping) else ((s.key, s) for s in rows)
    _DECLARED.update(items)


def declared_spec(label: str) -> RowSpec | None:
    """The spec of a row by its label: a declared row or variant (:func:`declare_rows`),
    else a BF-IO keyed row (:func:`keyed_row`), else ``None``."""
    return _DECLARED.get(label) or keyed_row(label)


def row_spec(key: str) -> RowSpec | None:
    """The BF-IO row a key names (its :attr:`RowSpec.key` is ``key``): a keyed row
    (:func:`keyed_row`) or a declared one (an admission row); ``None`` otherwise
    (a baseline, a variant named otherwise, unknown text)."""
    key = str(key)
    spec = _DECLARED.get(key)
    if spec is not None and spec.policy == "bfio" and spec.key == key:
        return spec
    return keyed_row(key)


def paper_row_spec(key: str) -> RowSpec | None:
    """A paper experiment's BF-IO row by its key (``bfio_h<H>[_literal]``, no admission), else ``None``."""
    spec = row_spec(key)
    return spec if spec is not None and spec.admission is None else None


def row_label(row: str, policy_label: Callable[[str], str] = str) -> str:
    """Paper-style label of a row key: ``BF-IO (H=40)``, ``BF-IO (H=40, paper-literal)``;
    another key is shown by ``policy_label(key)`` (the policy registry's label,
    :func:`bfio.policies.policy_label`, passed in by the caller)."""
    spec = paper_row_spec(row)
    return spec.label(policy_label) if spec else policy_label(row)


__all__ = ["LITERAL_SUFFIX", "BFIO_ROW_PATTERN", "MAX_KEY_HORIZON", "RowSpec", "row_key", "admission_label",
           "keyed_row", "declare_rows", "declared_spec", "row_spec", "paper_row_spec", "row_label"]
