"""The interfaces reach the database only through service calls: a reach no import check sees.

``Services`` (gateway/services/__init__.py) still carries the ``Database`` (for ``close``) and the
``AccessStore`` (for tests and benchmarks); no route, page, command or scheduler job may use them,
nor a service's own store. This reads every interface module's code for such an attribute.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INTERFACES = [ROOT / "gateway" / p for p in ("api", "web", "cli", "scheduler.py")]
STORE_ATTRIBUTES = {"db", "access", "store", "engine"}  # Services.db, Services.access, a service's store


def store_reaches(source: str, filename: str) -> list[str]:
    """``file:line: .attr`` for each attribute access named like a store or database handle."""
    return [
        f"{filename}:{node.lineno}: .{node.attr}"
        for node in ast.walk(ast.parse(source, filename))
        if isinstance(node, ast.Attribute) and node.attr in STORE_ATTRIBUTES
    ]


def test_no_interface_reads_the_database_or_a_store_through_the_services_bag():
    found = []
    for place in INTERFACES:
        for path in [place] if place.is_file() else sorted(place.rglob("*.py")):
            found += store_reaches(path.read_text(), str(path.relative_to(ROOT)))
    assert found == []


def test_the_check_sees_a_reach_through_the_bag():
    code = "def page(services):\n    return services.access.principal('x'), services.runs.store.get('r')\n"
    assert store_reaches(code, "web/x.py") == ["web/x.py:2: .access", "web/x.py:2: .store"]
