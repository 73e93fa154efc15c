"""The one submission path (docs/architecture.md): who may ask Slurm for a job and who writes job ids.

A static check over gateway/: ``prepare_submit`` is called by ``services/runs/submission.py`` alone
(and by the cache in front of a backend, passing it on); ``record_job_id``/``record_job_ids`` by
``submission.py`` and the refresh's reconcile alone; no backend has a ``submit`` of its own.
``tests/service/test_crash.py`` and ``test_batch.py`` check the path itself on the cluster.
"""

from __future__ import annotations

import ast
from pathlib import Path

GATEWAY = Path(__file__).resolve().parents[2] / "gateway"


def callers(method: str) -> set[str]:
    """Modules under gateway/ (paths relative to it) that call ``<something>.method(...)``."""
    found = set()
    for path in GATEWAY.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == method
            ):
                found.add(str(path.relative_to(GATEWAY)))
    return found


def test_a_submission_is_prepared_in_one_place():
    assert callers("prepare_submit") == {"services/runs/submission.py", "adapters/slurm/cached.py"}


def test_job_ids_are_written_by_the_submission_and_the_refresh_alone():
    assert callers("record_job_id") == {"services/runs/submission.py", "services/runs/refresh.py"}
    assert callers("record_job_ids") == {"services/runs/submission.py"}


def test_backends_have_one_way_to_submit():
    for path in (GATEWAY / "adapters" / "slurm").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                names = {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
                assert "submit" not in names, f"{path.name}: {node.name} has a submit besides prepare_submit"
