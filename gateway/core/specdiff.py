"""Changing a spec by dotted paths (``--set resources.mem_gb=2``) and diffing two specs."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from gateway.errors import SpecError, SpecIssue


def parse_assignment(text: str) -> tuple[str, Any]:
    """``key.path=value`` -> (path, value); the value is read as YAML (``2`` -> 2, ``[a, b]`` -> list)."""
    path, sep, raw = text.partition("=")
    if not sep or not path.strip():
        raise SpecError([SpecIssue("set", "give KEY.PATH=VALUE, e.g. resources.mem_gb=2", text)])
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise SpecError([SpecIssue(path, f"value is not valid YAML: {exc}", raw)]) from exc
    return path.strip(), value


def set_path(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``data`` with ``path`` (dots between keys, digits index lists) set to ``value``."""
    result = copy.deepcopy(data)
    parts = path.split(".")
    node: Any = result
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) > len(node):
                raise SpecError(
                    [SpecIssue(path, f"{part!r} is not an index of a {len(node)}-item list", value)]
                )
            index = int(part)
            if last:
                node[index : index + 1] = [value]
            else:
                node = node[index]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            else:
                if node.get(part) is None:
                    node[part] = {}
                node = node[part]
        else:
            raise SpecError(
                [SpecIssue(path, f"{'.'.join(parts[:i])} is a value, not a mapping or list", value)]
            )
    return result


def diff(before: Any, after: Any, path: str = "") -> list[dict[str, Any]]:
    """Leaf-level changes from ``before`` to ``after``: [{"path", "before", "after"}], sorted by path."""
    if isinstance(before, dict) and isinstance(after, dict):
        changes = []
        for key in sorted(set(before) | set(after)):
            sub = f"{path}.{key}" if path else str(key)
            changes += diff(before.get(key), after.get(key), sub)
        return changes
    if before != after:
        return [{"path": path, "before": before, "after": after}]
    return []
