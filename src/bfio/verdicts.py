"""The verdict of one paper cell against the print, and what each row must reach:
the rule, written once (the tables' Markdown quotes :data:`RULE` and
:data:`EXPECTATION_RULE`; ``docs/pipeline.md`` "Tables" repeats them).

A cell of the paper's Table 1 or Table 2 is a (row, metric) pair with a printed
value. Its verdict compares ours at the reference seed (42, the paper's seed)
with the printed value:

- ``reproduced``: ours, rounded to the printed number of decimals
  (:func:`bfio.runs.paper.round_like`), is the printed value, i.e. ours is within
  half a unit of the last printed digit (a printed ``1.25`` is reproduced by
  1.246 to 1.254; exact halves round as Python's ``format`` rounds them);
- otherwise ``better`` or ``worse``: in the metric's direction
  (:data:`bfio.runs.paper.HIGHER_IS_BETTER`: throughput higher, imbalance, TPOT and
  energy lower).

There is no other tolerance: the printed digits are the tolerance, and the
relative difference (``rel_diff``) says by how much a cell that is not
reproduced differs. What each kind of row must reach (:func:`expected`):
the baselines (FCFS, JSQ) ``reproduced``; BF-IO with the default objective
``reproduced`` or ``better``; BF-IO ``paper-literal`` (Eq. (IO) as printed)
nothing, it is reported beside the default.
"""

from __future__ import annotations

from bfio.runs.paper import compare_to_printed

REPRODUCED, BETTER, WORSE = "reproduced", "better", "worse"
VERDICTS = (REPRODUCED, BETTER, WORSE)

#: The verdict rule in words (the tables' Markdown header).
RULE = ("*reproduced*: ours at the reference seed, rounded to the printed number of decimals, is the printed "
        "value (within half a unit of the last printed digit; e.g. a printed 1.25 is reproduced by 1.246 to "
        "1.254); otherwise *better* or *worse* than the print in the metric's direction (throughput higher, "
        "imbalance, TPOT and energy lower), by *rel. diff*. No other tolerance.")

#: Row kinds (:func:`row_kind`) and the verdicts each must reach (empty: none, reported only).
BASELINE, DEFAULT, PAPER_LITERAL = "baseline", "default", "paper-literal"
EXPECTED = {BASELINE: (REPRODUCED,), DEFAULT: (REPRODUCED, BETTER), PAPER_LITERAL: ()}
#: :data:`EXPECTED` in words, as the tables' ``expected`` column says it.
EXPECTED_TEXT = {BASELINE: "reproduced", DEFAULT: "reproduced or better", PAPER_LITERAL: "none (reported only)"}
EXPECTATION_RULE = ("*expected*: what the project requires of the row: the baselines (FCFS, JSQ) *reproduced*, "
                    "BF-IO with the default objective *reproduced or better*, BF-IO *paper-literal* nothing "
                    "(reported beside the default); *met*: whether the verdict is one of them.")


def verdict(value: float, printed: str, scale: float, metric: str) -> str:
    """The verdict of our SI ``value`` against the ``printed`` string of a cell in
    units of ``scale`` (``value / scale`` is in the paper's unit): :data:`REPRODUCED`,
    :data:`BETTER` or :data:`WORSE` (the rule: module docstring, :data:`RULE`)."""
    # bfio.runs.paper holds the rounding (round_like) and the metric's direction (HIGHER_IS_BETTER); it
    # names the first outcome 'equal'. It is left as it is: every simulation's code fingerprint
    # includes bfio.runs.paper (bfio.pipeline.config imports it), so editing it would rerun the studies' runs.
    outcome = compare_to_printed(value, printed, scale, metric)
    return REPRODUCED if outcome == "equal" else outcome


def row_kind(objective: str | None) -> str:
    """The kind of a row from the BF-IO objective it stores (``None``: a baseline)."""
    if objective is None:
        return BASELINE
    if objective not in EXPECTED:
        raise ValueError(f"row_kind: no expectation for objective {objective!r} (expected one of "
                         f"{', '.join(k for k in EXPECTED if k != BASELINE)})")
    return objective


def expected(kind: str) -> str:
    """What a row of ``kind`` must reach, in words (:data:`EXPECTED_TEXT`)."""
    return EXPECTED_TEXT[kind]


def meets(outcome: str, kind: str) -> bool | None:
    """Whether ``outcome`` (a verdict) is what a row of ``kind`` must reach; ``None``
    when nothing is required (paper-literal)."""
    allowed = EXPECTED[kind]
    return (outcome in allowed) if allowed else None


__all__ = ["REPRODUCED", "BETTER", "WORSE", "VERDICTS", "RULE", "EXPECTATION_RULE", "BASELINE", "DEFAULT",
           "PAPER_LITERAL", "EXPECTED", "EXPECTED_TEXT", "verdict", "row_kind", "expected", "meets"]
