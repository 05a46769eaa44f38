"""BF-IO's admission rules (option ``admission``; ``../shared/spec/semantics.md``,
"BF-IO"): their names, their text form and its parser, and the defaults.

``free`` is the integer program (IO) of Section 4 as stated; ``fifo`` admits the
oldest; ``aging:N`` admits first the requests that waited ``N`` steps or more;
``drain:N`` (:mod:`bfio.solvers.drain`) reserves workers for them. What a rule
forces at one routing call is :func:`bfio.solvers.instance.forced_mask`.

Split from the solver's instance (issue 42) so that what only names a rule (the
run keys, the tables, the studies' summaries, the config's schema) does not
import the solvers and numba.
"""

from __future__ import annotations

import re

from bfio.ground.errors import ConfigError

#: The admission rules (BF-IO option ``admission``): the registry of their names. The
#: modes of :data:`STEPPED_ADMISSIONS` take a number of steps ``N`` (``aging:200``);
#: ``drain`` is :mod:`bfio.solvers.drain`'s.
ADMISSIONS = ("free", "fifo", "aging", "drain")
STEPPED_ADMISSIONS = ("aging", "drain")
#: A rule as text: ``free``, ``fifo`` or ``<mode>:<N>`` (N >= 1, ASCII digits).
ADMISSION_PATTERN = "|".join([a for a in ADMISSIONS if a not in STEPPED_ADMISSIONS]
                             + [f"({'|'.join(STEPPED_ADMISSIONS)}):[1-9][0-9]*"])
ADMISSION_HELP = " | ".join([a for a in ADMISSIONS if a not in STEPPED_ADMISSIONS]
                            + [f"{a}:N" for a in STEPPED_ADMISSIONS]) + " (N >= 1 steps)"


def parse_admission(text) -> tuple[str, int]:
    """``'free' | 'fifo' | 'aging:N' | 'drain:N'`` (:data:`ADMISSIONS`) -> ``(mode, N)``
    (``N = 0`` for the rules without steps)."""
    if isinstance(text, str) and re.fullmatch(ADMISSION_PATTERN, text):
        mode, _, tail = text.partition(":")
        return mode, int(tail) if tail else 0
    raise ConfigError(f"admission: expected {ADMISSION_HELP}, got {text!r}")


#: Default admission rule with the fast solver (issue 40): ``drain:100`` meets the rule
#: for a default admission (whole-run throughput at most 0.5% below ``free`` and the
#: longest wait at most 10x ``free``'s p99 wait, on every setting of the starvation and
#: online studies; ``results/tables/starvation.md``, docs/studies.md section 3).
DEFAULT_ADMISSION = "drain:100"
#: Default admission with an exact backend, which cannot drain (drain reserves workers
#: from the fast solver's predicted loads): ``aging:200``, the same bound on waits.
DEFAULT_EXACT_ADMISSION = "aging:200"


__all__ = ["ADMISSIONS", "STEPPED_ADMISSIONS", "ADMISSION_PATTERN", "ADMISSION_HELP", "parse_admission",
           "DEFAULT_ADMISSION", "DEFAULT_EXACT_ADMISSION"]
