"""What a scenario checked: each step with what was expected and what was seen.

A failed check that matters to the rest (``fatal``) ends its scenario with
``StepFailed``; the others (the cost steps) are recorded and the scenario goes
on. A scenario passes when every check it made passed and nothing raised.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from gateway.poc.words import say


class StepFailed(Exception):
    """A fatal check failed: the scenario stops at ``step``."""

    def __init__(self, step: str, expected: str, seen: str) -> None:
        super().__init__(f"{step}: expected {expected}; saw {seen}")
        self.step, self.expected, self.seen = step, expected, seen


@dataclass
class Check:
    """One step's check; ``kind`` is ``cost`` for the cost steps (``GET /runs/{id}/cost``)."""

    step: str
    ok: bool
    expected: str
    seen: str
    kind: str = "link"


@dataclass
class Scenario:
    """One scenario's record: its checks, the ids it made, its evidence bundle, how long it took."""

    number: int
    title: str
    checks: list[Check] = field(default_factory=list)
    ids: dict[str, list[str]] = field(default_factory=dict)
    done: list[str] = field(default_factory=list)  # what the scenario did, in order, in words
    shown: list[tuple[str, str]] = field(default_factory=list)  # (what, the platform's own words)
    costs: list[dict[str, Any]] = field(default_factory=list)  # each run's cost answer, in brief
    links: dict[str, str] = field(default_factory=dict)  # an id -> its anchor in the scenario's bundle
    clusters: dict[str, str | None] = field(default_factory=dict)  # run id -> its cluster (None: the one)
    evidence: str | None = None  # the bundle's path, relative to the output folder
    error: str | None = None  # what ended it early (a failed fatal check, an API error)
    started: float = field(default_factory=time.monotonic)
    seconds: float = 0.0

    def check(
        self, step: str, ok: bool, expected: str, seen: Any, *, fatal: bool = True, kind: str = "link"
    ) -> bool:
        """Record one check; a failed ``fatal`` one raises ``StepFailed``. Returns ``ok``."""
        shown = say(seen)
        self.checks.append(Check(step, bool(ok), expected, shown, kind))
        if not ok and fatal:
            raise StepFailed(step, expected, shown)
        return bool(ok)

    def did(self, what: str) -> None:
        """Note one thing the scenario did, in words (the summary's "what was done")."""
        self.done.append(what)

    def showed(self, what: str, words: Any) -> None:
        """Note what the platform showed (its explanation, the failure class ...), in its own words."""
        self.shown.append((what, say(words, 1200)))

    def made(self, kind: str, *values: str | None) -> None:
        """Note ids this scenario created (or reached), by kind: run, dataset, release ..."""
        bucket = self.ids.setdefault(kind, [])
        bucket.extend(v for v in values if v and v not in bucket)

    @property
    def passed(self) -> bool:
        """Every check passed and nothing ended the scenario early."""
        return self.error is None and all(c.ok for c in self.checks)

    @property
    def cost_total(self) -> float | None:
        """The sum of the costs of the runs the scenario priced (None when none was priced)."""
        priced = [c["total"] for c in self.costs if isinstance(c.get("total"), int | float)]
        return sum(priced) if priced else None

    @property
    def failed_checks(self) -> list[Check]:
        """The checks that failed, in order."""
        return [c for c in self.checks if not c.ok]

    def as_dict(self) -> dict[str, Any]:
        """The record as JSON-ready data (the summary's entry for this scenario)."""
        return {
            "number": self.number,
            "title": self.title,
            "passed": self.passed,
            "error": self.error,
            "seconds": round(self.seconds, 1),
            "ids": self.ids,
            "done": self.done,
            "shown": [{"what": w, "words": t} for w, t in self.shown],
            "costs": self.costs,
            "cost_total": self.cost_total,
            "links": self.links,
            "clusters": self.clusters,
            "evidence": self.evidence,
            "checks": [asdict(c) for c in self.checks],
        }
