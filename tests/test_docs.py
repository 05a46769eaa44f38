"""The documentation a new user reads: commands that parse as written, and
every pipeline output listed in results/README.md and figures/README.md."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md"), REPO / "results" / "README.md",
               REPO / "figures" / "README.md"])


def snakemake_commands(text: str):
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("#")[0].strip()
            if line.startswith("snakemake"):
                yield line
    for line in re.findall(r"`(snakemake [^`]*)`", text):
        yield line


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_no_target_after_configfile(doc):
    """``--configfile`` takes every following word up to the next option as a
    config file: a target written after it is read as a second config file."""
    for cmd in snakemake_commands(doc.read_text()):
        words = cmd.split()
        for i, w in enumerate(words):
            if w == "--configfile":
                rest = words[i + 2:]
                assert not rest or rest[0].startswith("-"), f"{doc.name}: target after --configfile in: {cmd}"


def _theory_outputs() -> set[str]:
    """The theory rule file's output paths (results/theory/..., figures/theory/...)."""
    text = (REPO / "workflow" / "rules" / "theory.smk").read_text()
    return set(re.findall(r'"((?:results|figures)/theory/[^"]+)"', text))


def _listed(readme: Path) -> str:
    return readme.read_text()


def test_theory_outputs_are_listed_in_the_output_readmes():
    outputs = _theory_outputs()
    assert outputs, "no theory outputs found in workflow/rules/theory.smk"
    results_doc, figures_doc = _listed(REPO / "results" / "README.md"), _listed(REPO / "figures" / "README.md")
    for out in sorted(outputs):
        top, rel = out.split("/", 1)
        stem = Path(rel).name.split(".")[0]
        doc = results_doc if top == "results" else figures_doc
        # a row names the file (or its {a,b} group / wildcard form) under theory/
        wildcard = re.sub(r"\{[^}]+\}", r"\\w+", re.escape(stem).replace(r"\{", "{").replace(r"\}", "}"))
        names = {m for entry in re.findall(r"`theory/([^`]+)`", doc) for m in _expand(entry)}
        assert any(re.fullmatch(wildcard, n) for n in names), f"{out} not listed in {top}/README.md"


def _expand(entry: str) -> list[str]:
    """``'{thm1,thm2}_cells.csv'`` -> ``['thm1_cells', 'thm2_cells']`` (stems)."""
    m = re.search(r"\{([^}]*)\}", entry)
    if m and "," in m.group(1):
        return [s for alt in m.group(1).split(",") for s in _expand(entry[:m.start()] + alt + entry[m.end():])]
    return [entry.split(".")[0]]


# --------------------------------------------------------------------------- quoted study numbers

ROUTERS_CSV = REPO / "results" / "tables" / "online_routers.csv"
ROUTERS_MARK = "<!-- checked against results/tables/online_routers.csv (vs_reference)"


def _marked_tables(text: str, mark: str):
    """The Markdown tables that follow ``mark`` (an HTML comment), as lists of cell rows."""
    for m in re.finditer(re.escape(mark) + r"[^\n]*-->\n((?:\|[^\n]*\|\n?)+)", text):
        lines = [ln for ln in m.group(1).strip().splitlines() if not re.fullmatch(r"\|[-| :]+\|", ln.strip())]
        yield [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines]


NUMBER = r"[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?"


def printed_unit(text: str) -> float:
    """The value of one unit in the last digit of a number as printed: ``'1.21'`` ->
    0.01, ``'3'`` -> 1, ``'1.2'`` -> 0.1, ``'4.5e-04'`` -> 1e-05."""
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def matches_printed(text: str, value) -> bool:
    """Whether ``value`` rounds to the number printed as ``text`` at the precision
    printed: a quoted ``1.21`` is any value in ``[1.205, 1.215]``, a quoted ``3``
    any in ``[2.5, 3.5]`` (``'n/a'`` only a missing value)."""
    if text == "n/a":
        return value is None or not math.isfinite(float(value))
    if value is None or not math.isfinite(float(value)):
        return False
    return abs(float(value) - float(text)) <= 0.5 * printed_unit(text) * (1 + 1e-9)


def ci_cell_matches(quoted: str, rec: dict, metric: str) -> bool:
    """Whether a quoted ``'mean [lo, hi]'`` (or a lone ``'mean'``) is ``metric``'s mean
    and 95% interval in ``rec``, each at the precision printed (:func:`matches_printed`)."""
    m = re.fullmatch(rf"({NUMBER}|n/a)(?: \[({NUMBER}), ({NUMBER})\])?", quoted)
    if m is None:
        return False
    mean, lo, hi = m.groups()
    values = [rec.get(f"{metric}_{k}") for k in ("mean", "ci_lo", "ci_hi")]
    if lo is None:  # a lone mean: the table has no interval either
        return matches_printed(mean, values[0]) and matches_printed("n/a", values[1])
    return all(matches_printed(t, v) for t, v in zip((mean, lo, hi), values))


def test_printed_precision_rule():
    assert matches_printed("1.21", 1.2149) and matches_printed("1.21", 1.205) and not matches_printed("1.21", 1.2151)
    assert matches_printed("3", 2.6) and not matches_printed("3", 3.6)
    assert matches_printed("4.5e-04", 4.54e-4) and not matches_printed("4.5e-04", 4.56e-4)
    assert matches_printed("n/a", float("nan")) and not matches_printed("n/a", 1.0)
    rec = {"x_mean": 2.951, "x_ci_lo": 2.6849, "x_ci_hi": 3.2449}
    assert ci_cell_matches("2.95 [2.68, 3.24]", rec, "x")
    assert not ci_cell_matches("2.95 [2.69, 3.24]", rec, "x")
    assert ci_cell_matches("2.95", {"x_mean": 2.95, "x_ci_lo": float("nan"), "x_ci_hi": float("nan")}, "x")


def test_router_numbers_quoted_in_the_docs_are_the_tables():
    """Every cell of a table marked as checked against the routers table (README
    results, docs/online.md) is that table's paired p99 ratio, mean [95% CI].

    The last digit: each quoted number is compared at the precision it is
    printed with (:func:`matches_printed`): a quoted ``1.21`` matches any table
    value that rounds to 1.21 at 2 decimals (``[1.205, 1.215]``), and each end
    of a quoted interval likewise; results/tables/online_routers.md prints 3
    significant digits (``bfio.studies.report.fmt``). docs/pipeline.md,
    "Numbers quoted in the docs", states the same rule."""
    import pandas as pd

    from bfio.policies import policy_label, registered

    quoted = {doc: list(_marked_tables(doc.read_text(), ROUTERS_MARK)) for doc in DOCS}
    quoted = {doc: tables for doc, tables in quoted.items() if tables}
    assert REPO / "README.md" in quoted and REPO / "docs" / "online.md" in quoted
    if not ROUTERS_CSV.exists():
        pytest.skip("results/tables/online_routers.csv not built (snakemake -c 2 results/tables/online_routers.md)")
    table = pd.read_csv(ROUTERS_CSV)
    assert set(table["reference"]) == {"bfio_h40_ps"}  # the docs say "over BF-IO's (H=40, ..., oracle-free"
    inst = table[table["role"] == "instant"]
    by_label = {policy_label(p): p for p in registered()}
    for doc, tables in quoted.items():
        for rows in tables:
            head, body = rows[0], rows[1:]
            assert head[:2] == ["setting (load)", "router"] and all(h.startswith("k=") for h in head[2:]), head
            for cells in body:
                setting, load = re.fullmatch(r"(\w+) \(([\d.]+)\)", cells[0]).groups()
                # a router's line, or its line with completions streamed (issue 44)
                name, streamed = re.fullmatch(r"(.+?)(, completions streamed)?", cells[1]).groups()
                policy = by_label[name]
                completions = inst["completions"] if "completions" in inst else pd.Series("reported", inst.index)
                for h, quoted_cell in zip(head[2:], cells[2:]):
                    k = int(h[2:])
                    rec = inst[(inst["setting"] == setting) & (inst["load"].map(lambda x: f"{x:.3g}") == load)
                               & (inst["policy"] == policy) & (inst["report_interval"] == k)
                               & ((completions == "streamed") == bool(streamed))]
                    assert len(rec) == 1, (doc.name, cells[:2], k)
                    assert ci_cell_matches(quoted_cell, rec.iloc[0].to_dict(), "vs_reference"), \
                        (doc.name, cells[:2], k, quoted_cell)


# --------------------------------------------------------------------------- README "Data"

DATA_MARK = "<!-- sizes and sources checked against bfio.traces.registry.KNOWN_TRACES"


def test_readme_data_table_is_the_trace_registry():
    """README "Data": one row per known trace with its file, size, pinned
    repository commit (or 'not downloadable'), and the total of what a clone
    without the trace directory downloads."""
    from bfio.traces.registry import KNOWN_TRACES

    text = (REPO / "README.md").read_text()
    tables = list(_marked_tables(text, DATA_MARK))
    assert len(tables) == 1, "README.md: the Data table (after its marker comment) is missing"
    head, *rows = tables[0]
    assert head[:4] == ["trace", "file", "size", "source (repository @ commit)"], head
    assert sorted(r[0] for r in rows) == sorted(KNOWN_TRACES)
    for name, relpath, size, source, *_ in rows:
        spec = KNOWN_TRACES[name]
        assert relpath == spec.relpath, name
        assert size == f"{spec.size / 1e3:,.0f} kB", (name, size)
        if spec.url:
            owner, repo, commit = spec.url.split("/")[3:6]
            assert source == f"{owner}/{repo} @ {commit[:7]}", (name, source)
        else:
            assert "not downloadable" in source, (name, source)
    public = [s for s in KNOWN_TRACES.values() if s.url]
    flat = " ".join(text.split())
    assert f"{len(public)} files, {sum(s.size for s in public) / 1e6:.1f} MB in all" in flat
