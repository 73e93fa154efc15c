"""Comparing two runs side by side (``gw compare RUN RUN``). Pure: dicts in, a dict out.

A run comes in as a plain dict::

    {"id": ..., "name": ..., "params": {...},
     "datasets": [{"name": ..., "project": ..., "version": 3, "digest": "sha256:..."}],
     "metrics": {"val_loss": 1.93, ...},
     "code": {...} or None, "environment": {...} or None}

Missing keys are read as empty (no params, no datasets, no metrics, unknown code and
environment).
"""

from __future__ import annotations

from typing import Any, TypeGuard

ABSENT = "(absent)"  # how a value one run lacks is shown
_MISSING = object()  # how it is known inside, so that a param whose value is "(absent)" still compares


def compare_runs(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """What differs between run ``a`` and run ``b``, JSON-ready::

        {"runs": [a_id, b_id],
         "params": [{"key": "optimizer.lr", "a": 0.1, "b": 0.2}, ...],
         "datasets": [{"name": "project/name", "a": "v3 (0123456789ab)" or None, "b": ...,
                       "same": bool}, ...],
         "metrics": [{"name": "val_loss", "a": 1.9, "b": 1.7, "delta": b - a or None}, ...],
         "code": {"a": code or None, "b": ..., "same": bool},
         "environment": {"a": environment or None, "b": ..., "same": bool}}

    - ``params``: only the leaves that differ, sorted by dotted key. Nested objects are walked;
      a list, or an object facing a non-object, is one leaf. A key missing on one side shows
      as the string ``"(absent)"`` there (a JSON null stays None: it was given).
    - ``datasets``: every dataset in either run, sorted by ``project/name``; a side that does not
      use it is None; several versions of one dataset in a run are joined with ", ".
      ``same`` when both sides use the same versions with the same digests.
    - ``metrics``: the union of names, sorted; a side without the metric shows ``"(absent)"``
      and ``delta`` is then None.
    - ``code``, ``environment``: the recorded dicts; ``same`` only when both are known and
      equal (two unknowns are not "the same").
    """
    return {
        "runs": [a.get("id"), b.get("id")],
        "params": param_changes(a.get("params") or {}, b.get("params") or {}),
        "datasets": _datasets(a.get("datasets") or [], b.get("datasets") or []),
        "metrics": _metrics(a.get("metrics") or {}, b.get("metrics") or {}),
        "code": _side_by_side(a.get("code"), b.get("code")),
        "environment": _side_by_side(a.get("environment"), b.get("environment")),
    }


def param_changes(a: Any, b: Any, prefix: str = "") -> list[dict[str, Any]]:
    """Leaves that differ between ``a`` and ``b``: [{"key", "a", "b"}], sorted by key; ``"(absent)"``
    for a key one side lacks.

    Not ``gateway.core.spec.diff.diff``: it reads a missing key as None, which would show a
    param set to null and a param not given alike.
    """
    changes: list[dict[str, Any]] = []
    _walk(a, b, prefix, changes)
    return sorted(changes, key=lambda change: change["key"])


def _walk(a: Any, b: Any, path: str, out: list[dict[str, Any]]) -> None:
    a_dict, b_dict = isinstance(a, dict), isinstance(b, dict)
    if (a_dict or a is _MISSING) and (b_dict or b is _MISSING) and (a_dict or b_dict):
        a_map, b_map = a if a_dict else {}, b if b_dict else {}
        if not a_map and not b_map:  # {} against a missing key: still a difference
            out.append({"key": path, "a": _shown(a), "b": _shown(b)})
        for key in set(a_map) | set(b_map):
            sub = f"{path}.{key}" if path else str(key)
            _walk(a_map.get(key, _MISSING), b_map.get(key, _MISSING), sub, out)
        return
    if not _same_value(a, b):
        out.append({"key": path, "a": _shown(a), "b": _shown(b)})


def _shown(value: Any) -> Any:
    return ABSENT if value is _MISSING else value


def _same_value(a: Any, b: Any) -> bool:
    # 1 == 1.0 == True in Python, but a param changed from 1 to true changed: compare types too
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b


def _datasets(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[dict[str, Any]]:
    sides = (_dataset_versions(a), _dataset_versions(b))
    rows = []
    for name in sorted(set(sides[0]) | set(sides[1])):
        va, vb = sides[0].get(name), sides[1].get(name)
        rows.append(
            {
                "name": name,
                "a": _shown_versions(va),
                "b": _shown_versions(vb),
                "same": va is not None and va == vb,
            }
        )
    return rows


def _dataset_versions(datasets: list[dict[str, Any]]) -> dict[str, list[tuple[Any, str]]]:
    """Dataset key ("project/name") -> its sorted [(version, digest)]."""
    found: dict[str, set[tuple[Any, str]]] = {}
    for ds in datasets:
        name = str(ds.get("name", "?"))
        key = f"{ds['project']}/{name}" if ds.get("project") else name
        found.setdefault(key, set()).add((ds.get("version"), str(ds.get("digest") or "")))
    return {key: sorted(versions, key=lambda v: (str(v[0]), v[1])) for key, versions in found.items()}


def _shown_versions(versions: list[tuple[Any, str]] | None) -> str | None:
    if versions is None:
        return None
    return ", ".join(f"v{v} ({_short_digest(d)})" if d else f"v{v}" for v, d in versions)


def _short_digest(digest: str) -> str:
    return digest.partition(":")[2][:12] if digest.startswith("sha256:") else digest[:12]


def _metrics(a: dict[str, float], b: dict[str, float]) -> list[dict[str, Any]]:
    rows = []
    for name in sorted(set(a) | set(b)):
        va, vb = a.get(name, _MISSING), b.get(name, _MISSING)
        delta = vb - va if _is_number(va) and _is_number(vb) else None
        rows.append({"name": name, "a": _shown(va), "b": _shown(vb), "delta": delta})
    return rows


def _is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _side_by_side(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any]:
    return {"a": a, "b": b, "same": a is not None and b is not None and a == b}
