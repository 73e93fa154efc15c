"""The layers hold: no import circles, and the import-linter contracts pass (and can fail)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def import_cycles(package: str) -> list[list[str]]:
    """Strongly connected components of more than one module (imports inside functions included)."""
    graph = grimp.build_graph(package)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:  # iterative Tarjan: a deep chain must not hit the recursion limit
        nonlocal counter
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return cycles


def test_no_import_circles():
    assert import_cycles("gateway") == []


def run_lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run(
        [str(LINT_IMPORTS), str(cwd / "pyproject.toml"), "--no-cache"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_contracts_hold():
    result = run_lint_imports(ROOT)
    assert result.returncode == 0, result.stdout[-3000:]


def test_a_wrong_way_import_breaks_a_contract(tmp_path):
    shutil.copytree(ROOT / "gateway", tmp_path / "gateway")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    names = tmp_path / "gateway" / "core" / "names.py"
    names.write_text(
        names.read_text() + "\nfrom gateway.services import runs  # noqa: E402, F401 - wrong way\n"
    )
    result = run_lint_imports(tmp_path)
    assert result.returncode != 0
    assert "BROKEN" in result.stdout and "gateway.core.names -> gateway.services.runs" in result.stdout
