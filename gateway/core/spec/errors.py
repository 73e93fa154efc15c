"""Pydantic's validation errors in the gateway's words: dotted field paths, and the valid fields
where an unknown one was given (for run specs, site files and API request bodies alike)."""

from __future__ import annotations

import difflib
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
            message = unknown_field_message(err["loc"][:-1], root, given=str(err["loc"][-1]))
        value = None if secret_input(message) else err.get("input")  # never echo a would-be secret
        issues.append(SpecIssue(path=path, message=message, value=value))
    return issues


def unknown_field_message(parent_loc: tuple[Any, ...], root: Any, *, given: str | None = None) -> str:
    """'unknown field; did you mean `command`?' for a field ``given`` under ``parent_loc`` of ``root``
    (a pydantic model class) that is close to a valid one (difflib), else 'unknown field; valid fields
    here: ...'; anything but a model class gives the bare message."""
    if not (isinstance(root, type) and issubclass(root, BaseModel)):
        return "unknown field"
    parent = _model_at(parent_loc, root)
    if parent is None:
        return "unknown field"
    fields = list(parent.model_fields)
    close = difflib.get_close_matches(given, fields, n=1, cutoff=0.6) if given else []
    if close:
        return f"unknown field; did you mean `{close[0]}`?"
    return "unknown field; valid fields here: " + ", ".join(fields)


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
