"""The exploration notebook is committed with outputs stripped (CI executes it with nbmake)."""

from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]


def test_notebooks_have_no_outputs():
    books = sorted((REPO / "notebooks").glob("*.ipynb"))
    assert any(b.name == "explore.ipynb" for b in books)
    for book in books:
        nb = nbformat.read(book, as_version=4)
        nbformat.validate(nb)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, f"{book.name}: outputs not stripped"
