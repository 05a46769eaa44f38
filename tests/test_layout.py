"""The sizes issue 43 holds the package to: no module over 500 lines, no function
over 120 lines outside the numba kernels (whose phases are named and documented
where they are), and ``simulate()`` a short loop over the simulator's parts."""

from __future__ import annotations

import ast
from pathlib import Path

import bfio

PACKAGE = Path(bfio.__file__).resolve().parent
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 120
MAX_SIMULATE_LINES = 80
#: decorators that make a function a numba kernel (bfio.ground.jit)
KERNEL_DECORATORS = ("kernel", "helper", "njit", "jit")


def _modules():
    return sorted(PACKAGE.rglob("*.py"))


def _is_kernel(node: ast.FunctionDef) -> bool:
    for d in node.decorator_list:
        name = ast.unparse(d.func if isinstance(d, ast.Call) else d).split(".")[-1]
        if name in KERNEL_DECORATORS:
            return True
    return False


def _code_lines(node: ast.FunctionDef) -> int:
    """A function's lines, its docstring left out."""
    lines = node.end_lineno - node.lineno + 1
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        lines -= first.end_lineno - first.lineno + 1
    return lines


def test_no_module_over_500_lines():
    long = {str(p.relative_to(PACKAGE)): n for p in _modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_function_over_120_lines_outside_the_kernels():
    long = {}
    for p in _modules():
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _is_kernel(node):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long[f"{p.relative_to(PACKAGE)}:{node.name}"] = n
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (not numba kernels): {long}"


def test_simulate_is_a_short_loop_over_the_parts():
    tree = ast.parse((PACKAGE / "sim" / "loop.py").read_text(encoding="utf-8"))
    (simulate,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "simulate"]
    assert _code_lines(simulate) <= MAX_SIMULATE_LINES


def test_the_size_checks_can_fail():
    source = "def f():\n    '''doc\n    more'''\n" + "    x = 1\n" * 130 + "\n@kernel\ndef g():\n" + "    y = 2\n" * 130
    funcs = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)]
    f, g = funcs
    assert not _is_kernel(f) and _is_kernel(g)
    assert f.end_lineno - f.lineno + 1 > MAX_FUNCTION_LINES and _code_lines(f) == 131
