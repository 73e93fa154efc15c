"""The layers hold: no import circles, and the import-linter contracts pass (and can fail)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
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
    env = {**os.environ, "PYTHONPATH": str(cwd), "COLUMNS": "1000"}  # one line per contract
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


# One wrong import per contract (module, the line appended to it, the contract's id): each must break
# exactly the contract written for it, so a contract that cannot fail is found out; every contract has one
# (test_every_contract_has_a_wrong_import).
WRONG_IMPORTS = [
    ("adapters/slurm/restd.py", "import subprocess", "subprocess-runner"),
    ("adapters/runner_ssh.py", "import paramiko", "paramiko-ssh"),
    ("services/runs/logs.py", "from gateway.store.models import RunRow", "services-no-orm"),
    ("web/routes_pages.py", "from gateway.api import errors", "interfaces-independent"),
    ("cli/runs/sbatch_cmd.py", "from gateway import wiring", "client-side"),
    ("cli/eval/eval_view.py", "from gateway.cli.server import admin_cmds", "server-cli-apart"),
    ("client/api.py", "from gateway import wiring", "layers"),
    ("core/eval/domain.py", "from gateway.core.releases import domain", "core-eval-not-releases"),
    ("core/reports/periods.py", "from gateway.core.audit import entry", "core-topics-independent"),
    ("services/ops/health.py", "from gateway.services.site import projects", "services-apart-from-site"),
    ("services/site/projects.py", "from gateway.services.runs import logs", "services-site-apart"),
    ("cli/lineage/data_cmds.py", "import matplotlib", "matplotlib-plots"),
    ("core/eval/results.py", "from gateway.error_status import status_for", "status-table"),
    ("store/runs/runs.py", "import scipy", "stats-in-eval"),
    ("services/runs/logs.py", "from gateway.adapters.slurm import cli", "services-protocols"),
    ("adapters/evidence_key.py", "import cryptography", "cryptography-signing"),
    ("services/handoff/outbox.py", "import mlflow", "mlflow-one-module"),
    ("services/handoff/deliveries.py", "from gateway.adapters import webhook_http", "services-protocols"),
    ("core/names.py", "import socket", "core-pure"),
    ("api/deps.py", "from gateway.store import audit", "interfaces-no-store"),
    ("adapters/plots.py", "import prometheus_client", "prometheus-one-module"),
    ("api/app.py", "import fastapi_offline", "docs-assets-one-module"),
    ("core/reports/rows.py", "import numpy", "numpy-eval"),
    ("adapters/anchor.py", "import alembic", "sqlalchemy-store"),
    ("adapters/webhook_http.py", "import starlette", "web-framework"),
    ("web/svg.py", "import rich", "terminal-cli"),
    ("services/ops/background.py", "import apscheduler", "apscheduler-scheduler"),
    ("services/eval/gates.py", "import jinja2", "jinja2-templates"),
    ("adapters/webhook_http.py", "import httpx", "no-httpx"),
    ("services/eval/ingest.py", "import lm_eval", "no-lm-eval"),
    ("store/reports/reports.py", "import pynvml", "no-pynvml"),
]


def contract_names() -> dict[str, str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return {c["id"]: c["name"] for c in config["tool"]["importlinter"]["contracts"]}


def test_each_contract_breaks_on_its_wrong_import(tmp_path):
    shutil.copytree(ROOT / "gateway", tmp_path / "gateway", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for module, line, _ in WRONG_IMPORTS:
        path = tmp_path / "gateway" / module
        path.write_text(path.read_text() + f"\n{line}  # noqa: E402, F401 - wrong on purpose\n")
    result = run_lint_imports(tmp_path)
    assert result.returncode != 0
    names = contract_names()
    # "NAME BROKEN", or "NAME BROKEN (2 ignored imports)"
    broken = {line.partition(" BROKEN")[0] for line in result.stdout.splitlines() if " BROKEN" in line}
    assert {names[c] for _, _, c in WRONG_IMPORTS} <= broken, result.stdout[-4000:]


def test_every_contract_has_a_wrong_import():
    assert set(contract_names()) == {c for _, _, c in WRONG_IMPORTS}


def topic_of(module: str) -> str:
    """``gateway.core.eval.gate`` -> ``gateway.core.eval``; a module of a layer's top is its own topic."""
    return ".".join(module.split(".")[:3])


# The modules directly in core/ (docs/architecture.md, "Topics"): each is shared by several topics.
# json_input has one importer, api/body_limits.py, which reads every route's JSON body, of every topic.
SHARED_CORE = {"clock", "described", "json_input", "names", "projects", "yaml_input"}
SHARED_BY_ONE_IMPORTER = {"json_input"}


def test_core_and_services_keep_modules_in_topic_folders():
    assert sorted(p.stem for p in (ROOT / "gateway" / "services").glob("*.py")) == ["__init__"]
    flat = {p.stem for p in (ROOT / "gateway" / "core").glob("*.py")} - {"__init__"}
    assert flat == SHARED_CORE, "a new module in core/ goes into a topic folder, or is shared (say so here)"
    graph = grimp.build_graph("gateway")
    for name in sorted(flat - SHARED_BY_ONE_IMPORTER):
        module = f"gateway.core.{name}"
        topics = {topic_of(m) for m in graph.find_modules_that_directly_import(module)} - {module}
        assert len(topics) >= 2, f"{module} is imported by {sorted(topics)} only: move it into that topic"
