"""Pydantic's validation errors in the gateway's words: dotted field paths, and the valid fields
where an unknown one was given (for run specs, site files and API request bodies alike)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ValidationError

from gateway.core.spec.fields import secret_input
from gateway.errors import SpecIssue

_UNION_TAG = re.compile(r"(str|int|float|bool|none|list\[.*\]|dict\[.*\])")


def spec_issues(exc: ValidationError, root: type[BaseModel]) -> list[SpecIssue]:
    """Turn pydantic's errors into issues with dotted field paths (``root``: the model validated)."""
    issues = []
    for err in exc.errors(include_url=False):
        # pydantic names the union member it tried ("command.list[str].3"): drop it.
        loc = [p for p in err["loc"] if not (isinstance(p, str) and _UNION_TAG.fullmatch(p))]
        path = ".".join(str(part) for part in loc)
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = unknown_field_message(err["loc"][:-1], root)
        value = None if secret_input(message) else err.get("input")  # never echo a would-be secret
        issues.append(SpecIssue(path=path, message=message, value=value))
    return issues


def unknown_field_message(parent_loc: tuple[Any, ...], root: Any) -> str:
    """'unknown field; valid fields here: ...' for a field found under ``parent_loc`` of ``root`` (a
    pydantic model class; anything else gives the bare message)."""
    if not (isinstance(root, type) and issubclass(root, BaseModel)):
        return "unknown field"
    parent = _model_at(parent_loc, root)
    valid = ", ".join(parent.model_fields) if parent else ""
    return "unknown field" + (f"; valid fields here: {valid}" if valid else "")


def _model_at(loc: tuple[Any, ...], root: type[BaseModel]) -> type[BaseModel] | None:
    model: type[BaseModel] = root
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        target = field.annotation
        candidates = getattr(target, "__args__", (target,))
        # list[Model] and Model | None: look one level inside
        candidates = tuple(a for c in candidates for a in (getattr(c, "__args__", None) or (c,)))
        nxt = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if nxt is None:
            return None
        model = nxt
    return model
