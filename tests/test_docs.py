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
