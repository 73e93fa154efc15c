"""Strict JSON for request bodies: the rules of ``yaml_input``, for the API's JSON.

Python's ``json`` accepts what JSON (RFC 8259) does not, or does not define,
and the gateway must not take: ``NaN``, ``Infinity`` and ``-Infinity``
(and ``1e999``, which it reads as infinity), duplicate keys (the last one
silently wins), nesting as deep as the interpreter's stack, integers too
long for Python to read. ``load_json`` refuses each, naming the field path:

- text that is not UTF-8, or not JSON (with its line and column);
- nesting deeper than ``MAX_DEPTH`` (the top-level value is level 1);
- a non-finite number, a duplicate key, an integer of more than
  ``MAX_INT_DIGITS`` digits.

The C decoder does the parsing; the checks are one walk over the result (and
one hook per object, for duplicate keys). Refusals are a ``SpecError`` at
``location`` (``body``) listing up to ``MAX_ISSUES`` issues.
"""

from __future__ import annotations

import json
import math
from typing import Any

from gateway.core.yaml_input import MAX_DEPTH, MAX_INT_DIGITS
from gateway.errors import SpecError, SpecIssue

MAX_ISSUES = 20


class _WithDuplicates(dict):
    """An object whose text repeated keys (kept last-wins, as json does); the walk reports them."""

    duplicates: list[str]


class _BadNumber:
    """Stands in for an integer too long to read, so the walk can report it with its path."""

    def __init__(self, digits: int) -> None:
        self.digits = digits


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) == len(pairs):
        return value
    marked = _WithDuplicates(value)
    seen: set[str] = set()
    repeated: set[str] = set()
    for key, _ in pairs:
        (repeated if key in seen else seen).add(key)
    marked.duplicates = sorted(repeated)
    return marked


def _int(text: str) -> int | _BadNumber:
    digits = len(text.lstrip("-"))
    return _BadNumber(digits) if digits > MAX_INT_DIGITS else int(text)


def load_json(data: bytes | str, *, max_depth: int = MAX_DEPTH, location: str = "body") -> Any:
    """The value of a JSON text under the rules above; raises SpecError (at ``location``) otherwise."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")  # RFC 8259: JSON between systems is UTF-8
        except UnicodeDecodeError as exc:
            message = f"is not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start}"
            raise _refuse(message, location) from None
    else:
        text = data
    try:
        value = _decode(text, max_depth, location, parse_int=None)
    except ValueError:
        # An integer longer than int() reads: read again, marking it, to say where it is.
        value = _decode(text, max_depth, location, parse_int=_int)
    issues = _check(value, max_depth)
    if issues:
        raise SpecError(issues[:MAX_ISSUES], location=location, what="request body")
    return value


def _decode(text: str, max_depth: int, location: str, *, parse_int: Any) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_object, parse_int=parse_int)
    except json.JSONDecodeError as exc:
        message = f"not valid JSON: {exc.msg} (at line {exc.lineno}, column {exc.colno})"
        raise _refuse(message, location) from None
    except RecursionError:
        # The C decoder recurses per level; Python's recursion limit stops it near 1000 levels.
        raise _refuse(_too_deep(max_depth), location) from None


def _too_deep(limit: int) -> str:
    return f"nested more than {limit} levels of lists and objects; at most {limit}"


def _refuse(message: str, location: str) -> SpecError:
    return SpecError([SpecIssue("", message)], location=location, what="request body")


def _scalar_issue(value: Any, chain: Any) -> SpecIssue | None:
    if isinstance(value, float) and not math.isfinite(value):
        shown = "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
        return SpecIssue(
            _dotted(chain),
            f"{shown} is not a finite number; JSON has no NaN or Infinity and no field takes one",
        )
    if isinstance(value, _BadNumber):
        return SpecIssue(_dotted(chain), f"an integer of {value.digits} digits; at most {MAX_INT_DIGITS}")
    return None


def _check(value: Any, max_depth: int) -> list[SpecIssue]:
    """Every rule the decoder does not keep, in one walk (an explicit stack: no recursion).

    A container's path is kept as a chain (parent chain, key) and spelled out only for an issue.
    """
    if type(value) not in _CONTAINERS:
        root = _scalar_issue(value, None)
        return [root] if root is not None else []
    issues: list[SpecIssue] = []
    stack: list[tuple[Any, Any, int]] = [(value, None, 1)]
    while stack and len(issues) < MAX_ISSUES:
        node, chain, depth = stack.pop()
        if depth > max_depth:
            issues.append(SpecIssue(_dotted(chain), _too_deep(max_depth)))
            continue
        if type(node) is _WithDuplicates:
            keys = ", ".join(repr(k) for k in node.duplicates)
            issues.append(SpecIssue(_dotted(chain), f"duplicate key {keys}; give each key once"))
        for key, child in node.items() if type(node) is not list else enumerate(node):
            kind = type(child)
            if kind in _CONTAINERS:
                stack.append((child, (chain, key), depth + 1))
            elif kind in _SUSPECT and (issue := _scalar_issue(child, (chain, key))) is not None:
                issues.append(issue)
    return sorted(issues, key=lambda issue: issue.path)


_CONTAINERS = frozenset({dict, list, _WithDuplicates})
_SUSPECT = frozenset({float, _BadNumber})


def _dotted(chain: Any) -> str:
    parts = []
    while chain is not None:
        chain, key = chain
        parts.append(str(key))
    return ".".join(reversed(parts))
