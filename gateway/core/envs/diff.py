"""Dependency change records: two installed sets compared, package by package.

Versions are compared with ``packaging.version`` (PEP 440); a version that does not parse is
compared as text, and a change between two such versions counts as ``changed``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packaging.version import InvalidVersion, Version


def package_diff(old: Mapping[str, str], new: Mapping[str, str]) -> dict[str, Any]:
    """``{"added": [{name, version}], "removed": [...], "upgraded": [{name, from, to}], "downgraded":
    [...], "changed": [...], "unchanged": count}``, each list sorted by name."""
    out: dict[str, Any] = {"added": [], "removed": [], "upgraded": [], "downgraded": [], "changed": []}
    unchanged = 0
    for name in sorted(set(old) | set(new)):
        if name not in old:
            out["added"].append({"name": name, "version": new[name]})
        elif name not in new:
            out["removed"].append({"name": name, "version": old[name]})
        elif old[name] == new[name]:
            unchanged += 1
        else:
            out[_direction(old[name], new[name])].append({"name": name, "from": old[name], "to": new[name]})
    out["unchanged"] = unchanged
    return out


def is_empty(diff: Mapping[str, Any]) -> bool:
    """True when a ``package_diff`` found no change."""
    return not any(diff.get(k) for k in ("added", "removed", "upgraded", "downgraded", "changed"))


def diff_lines(diff: Mapping[str, Any]) -> list[str]:
    """A diff in words, one change a line: ``+ name 1.0``, ``- name 1.0``, ``^ name 1.0 -> 2.0``,
    ``v name 2.0 -> 1.0``, ``~ name a -> b``."""
    lines = [f"+ {p['name']} {p['version']}" for p in diff.get("added", [])]
    lines += [f"- {p['name']} {p['version']}" for p in diff.get("removed", [])]
    for key, mark in (("upgraded", "^"), ("downgraded", "v"), ("changed", "~")):
        lines += [f"{mark} {p['name']} {p['from']} -> {p['to']}" for p in diff.get(key, [])]
    return lines


def _direction(old: str, new: str) -> str:
    try:
        a, b = Version(old), Version(new)
    except InvalidVersion:
        return "changed"
    if a == b:
        return "changed"  # 1.0 and 1.0.0: equal versions written differently
    return "upgraded" if b > a else "downgraded"
