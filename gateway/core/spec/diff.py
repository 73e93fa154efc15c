"""Changing a spec by dotted paths (``--set resources.mem_gb=2``) and diffing two specs."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from gateway.core.yaml_input import MAX_DEPTH, VALUE_LIMITS, load_yaml
from gateway.errors import SpecError, SpecIssue

MAX_PATH_CHARS = 1024


def parse_assignment(text: str) -> tuple[str, Any]:
    """``key.path=value`` -> (path, value); the value is read as YAML (``2`` -> 2, ``[a, b]`` -> list).

    Bounded like every document the gateway reads (``gateway.core.yaml_input``):
    the value by ``VALUE_LIMITS``, and the path plus the value's own nesting
    by ``MAX_DEPTH`` levels in all. Raises SpecError at the path.
    """
    path, sep, raw = text.partition("=")
    path = path.strip()
    if not sep or not path:
        raise SpecError([SpecIssue("set", "give KEY.PATH=VALUE, e.g. resources.mem_gb=2", text[:100])])
    parts = path.split(".")
    if len(parts) >= MAX_DEPTH:
        raise SpecError(
            [SpecIssue("set", f"KEY.PATH has {len(parts)} levels; at most {MAX_DEPTH - 1}", path[:100])]
        )
    if len(path) > MAX_PATH_CHARS:
        raise SpecError([SpecIssue("set", f"KEY.PATH is {len(path)} characters; at most {MAX_PATH_CHARS}")])
    if not all(parts):
        raise SpecError([SpecIssue("set", "KEY.PATH has an empty key; give e.g. params.lr", path)])
    if not raw.strip():
        return path, ""
    # The spec's mapping is level 1 and each key of the path one more: the value's lists and mappings
    # have what is left.
    room = MAX_DEPTH - len(parts)
    try:
        value = load_yaml(raw, limits=replace(VALUE_LIMITS, max_depth=room), path=path)
    except SpecError as exc:
        issues = [SpecIssue(i.path, _whole_spec(i.message, room), raw[:100]) for i in exc.issues]
        raise SpecError(issues) from None
    return path, value


def _whole_spec(message: str, room: int) -> str:
    said = f"at most {room}"
    if room < MAX_DEPTH and said in message:
        return message.replace(said, f"{said} below this path ({MAX_DEPTH} in the whole spec)")
    return message


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
