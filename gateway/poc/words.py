"""Values written for the POC's reader: no Python reprs, no ``None``, no ``[]``.

``say`` writes what a check saw: a dict as ``key value; key value``, a list
comma-joined (``none`` when empty), nothing as ``nothing``, yes/no for
booleans and numbers without e-notation. A check's caller gives the words it
means where it can; ``say`` is the floor under every one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.core.evidence.html_parts import plain_number

LIMIT = 600


def say(value: Any, limit: int = LIMIT) -> str:
    """``value`` in words, at most ``limit`` characters (cut with ``...``)."""
    text = _say(value, 0)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _say(value: Any, depth: int) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return plain_number(value)
    if isinstance(value, str):
        return value if value else "(empty)"
    if isinstance(value, Mapping):
        if not value:
            return "nothing"
        inner = "; ".join(f"{k} {_say(v, depth + 1)}" for k, v in value.items())
        return f"({inner})" if depth else inner
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else list(value)
        if not items:
            return "none"
        if isinstance(value, tuple):
            return " ".join(_say(v, depth + 1) for v in items)
        return ", ".join(_say(v, depth + 1) for v in items)
    return str(value)


def money(value: Any, currency: Any) -> str:
    """A cost as ``0.0000147 EUR`` (``not priced`` without a number)."""
    if not isinstance(value, int | float):
        return "not priced"
    return f"{plain_number(float(value))} {currency or ''}".strip()


def duration(seconds: float | None) -> str:
    """Seconds as ``42 s``, ``3.5 min`` or ``1.20 h``."""
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"
