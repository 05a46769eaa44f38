"""The documentation a new user reads: commands that parse as written, and
every pipeline output listed in results/README.md and figures/README.md."""

from __future__ import annotations

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


def test_router_numbers_quoted_in_the_docs_are_the_tables():
    """Every cell of a table marked as checked against the routers table (README
    results, docs/online.md) is that table's paired p99 ratio, formatted as in
    results/tables/online_routers.md."""
    import pandas as pd

    from bfio.policies import policy_label, registered
    from bfio.studies.report import ci_cell

    quoted = {doc: list(_marked_tables(doc.read_text(), ROUTERS_MARK)) for doc in DOCS}
    quoted = {doc: tables for doc, tables in quoted.items() if tables}
    assert REPO / "README.md" in quoted and REPO / "docs" / "online.md" in quoted
    if not ROUTERS_CSV.exists():
        pytest.skip("results/tables/online_routers.csv not built (snakemake -c 2 results/tables/online_routers.md)")
    table = pd.read_csv(ROUTERS_CSV)
    assert set(table["reference"]) == {"bfio_h40"}  # the docs say "over BF-IO's (H=40)"
    inst = table[table["role"] == "instant"]
    by_label = {policy_label(p): p for p in registered()}
    for doc, tables in quoted.items():
        for rows in tables:
            head, body = rows[0], rows[1:]
            assert head[:2] == ["setting (load)", "router"] and all(h.startswith("k=") for h in head[2:]), head
            for cells in body:
                setting, load = re.fullmatch(r"(\w+) \(([\d.]+)\)", cells[0]).groups()
                policy = by_label[cells[1]]
                for h, quoted_cell in zip(head[2:], cells[2:]):
                    k = int(h[2:])
                    rec = inst[(inst["setting"] == setting) & (inst["load"].map(lambda x: f"{x:.3g}") == load)
                               & (inst["policy"] == policy) & (inst["report_interval"] == k)]
                    assert len(rec) == 1, (doc.name, cells[:2], k)
                    assert quoted_cell == ci_cell(rec.iloc[0].to_dict(), "vs_reference"), (doc.name, cells[:2], k)


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
