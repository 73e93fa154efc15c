"""Pieces of the evidence report: the page's anchors and links, and how a value is written.

``Page`` knows every record the document holds, so a link is drawn only to
an element the page has (a gate's baseline that is not in the bundle is
named, not linked): every ``href='#...'`` of the report resolves inside the
file. Every value is escaped here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape
from typing import Any


def text(value: Any) -> str:
    """A value in words: ``-`` for nothing, lists comma-joined, numbers in short form."""
    if value is None or value == "" or value == [] or value == {}:
        return "<span class=muted>-</span>"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return escape(f"{value:.4g}")
    if isinstance(value, list | tuple):
        return ", ".join(text(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{escape(str(k))} {text(v)}" for k, v in value.items())
    return escape(str(value))


def short(digest: Any, n: int = 12) -> str:
    """The first ``n`` characters of a digest (the whole one is in the record's section)."""
    return escape(str(digest)[:n]) if digest else "-"


def when(value: Any) -> str:
    """An ISO time as ``YYYY-MM-DD HH:MM:SS UTC`` (times in evidence are UTC)."""
    if not value:
        return "<span class=muted>-</span>"
    raw = str(value)
    if len(raw) >= 19 and raw[10] == "T":
        return escape(raw[:10] + " " + raw[11:19] + " UTC")
    return escape(raw)


def seconds(value: Any) -> str:
    """A duration in seconds, written as s, min or h."""
    if not isinstance(value, int | float):
        return "<span class=muted>-</span>"
    if value < 120:
        return f"{value:g} s"
    if value < 7200:
        return f"{value / 60:.1f} min"
    return f"{value / 3600:.2f} h"


def money(value: Any, currency: Any) -> str:
    """A cost with three significant digits (small runs cost fractions of a cent)."""
    if not isinstance(value, int | float):
        return "<span class=muted>not priced</span>"
    return escape(f"{plain_number(value)} {currency or ''}".strip())


def plain_number(value: float) -> str:
    """Three significant digits, never in e-notation (0.0000147, not 1.47e-05)."""
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if value == 0 or abs(value) >= 1e-3:
        return f"{value:.3g}"
    decimals = 2 - math.floor(math.log10(abs(value)))
    return f"{value:.{decimals}f}"


def badge(verdict: Any) -> str:
    """A verdict as a coloured badge: pass green, fail red, anything else amber."""
    word = str(verdict)
    css = {"pass": "pass", "approve": "pass", "succeeded": "pass", "active": "pass"}.get(word)
    css = css or ("fail" if word in ("fail", "reject", "failed", "withdrawn") else "warn")
    return f"<span class='badge {css}'>{escape(word.replace('_', ' '))}</span>"


def facts(rows: list[tuple[str, str]]) -> str:
    """A two-column table of already-escaped (label, value) pairs."""
    body = "".join(f"<tr><th>{escape(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return f"<table class=facts>{body}</table>"


def table(head: list[str], rows: list[list[str]], empty: str = "none") -> str:
    """A table of already-escaped cells under ``head``; ``empty`` (in words) when there are no rows."""
    if not rows:
        return f"<p class=muted>{escape(empty)}</p>"
    top = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{top}</tr></thead><tbody>{body}</tbody></table>"


def check(what: str, items: list[str]) -> str:
    """The box that says what a reviewer checks in this section."""
    shown = "".join(f"<li>{i}</li>" for i in items)
    return f"<div class=check><b>{escape(what)}</b><ul>{shown}</ul></div>"


@dataclass
class Page:
    """The anchors the report will hold (one per record), and the dataset versions it names."""

    anchors: set[str] = field(default_factory=set)
    dataset_versions: dict[str, dict[str, Any]] = field(default_factory=dict)
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    used_shas: set[str] = field(default_factory=set)  # artifacts that were evaluated or released
    labels: dict[str, str] = field(default_factory=dict)  # a record id -> the name people know it by

    @classmethod
    def of(cls, doc: dict[str, Any]) -> Page:
        """The page of ``doc``: every record id that gets its own section."""
        page = cls()
        ev = doc.get("evaluations") or {}
        for run in doc.get("runs") or []:
            page.anchors.add(run["id"])
            page.labels[run["id"]] = f"{run.get('name') or 'run'} ({run['id']})"
            for d in run.get("datasets") or []:
                version = d.get("version")
                if version and version.get("id"):
                    page.dataset_versions.setdefault(version["id"], version)
        page.anchors.update(page.dataset_versions)
        page.artifacts = list(doc.get("artifacts") or [])
        page.anchors.update(page.artifact_anchor(a) for a in page.artifacts)
        for run in ev.get("eval_runs") or []:
            page.anchors.add(run["id"])
            page.used_shas.add(str(run.get("artifact_sha256")))
            if run.get("result"):
                page.anchors.add(run["result"]["id"])
                result = run["result"]
                file = str(run.get("artifact_path")).rsplit("/", 1)[-1]
                page.labels[result["id"]] = f"{result.get('suite_version')} on {file} ({result['id']})"
        for key in ("gates", "reviews"):
            page.anchors.update(r["id"] for r in ev.get(key) or [])
        for release in doc.get("releases") or []:
            page.anchors.add(release["id"])
            page.labels[release["id"]] = str(release.get("ref"))
            page.used_shas.add(str(release.get("artifact_sha256")))
        page.anchors.update(m["id"] for m in doc.get("alias_events") or [])
        page.anchors.update(q["id"] for q in doc.get("promotion_requests") or [])
        page.anchors.update({"artifacts", "audit"})
        return page

    @staticmethod
    def artifact_anchor(artifact: dict[str, Any]) -> str:
        """An artifact's anchor: its run and sha256 (one file can be written by several runs)."""
        return f"a-{artifact.get('run_id')}-{str(artifact.get('sha256'))[:16]}"

    def anchor_of_sha(self, sha: Any) -> str | None:
        """The anchor of the first artifact with ``sha``, or None when the bundle has none."""
        for artifact in self.artifacts:
            if artifact.get("sha256") == sha:
                return self.artifact_anchor(artifact)
        return None

    def chain_artifacts(self) -> list[dict[str, Any]]:
        """The artifacts the chain shows: those evaluated or released (all of them when none was)."""
        used = [a for a in self.artifacts if a.get("sha256") in self.used_shas]
        return used or self.artifacts[:4]

    def ref(self, record_id: Any, label: Any = None) -> str:
        """``label`` (or the id) linked to the record's section when the page holds it; plain text,
        marked as outside the bundle, when it does not."""
        if not record_id:
            return "<span class=muted>-</span>"
        known = self.labels.get(str(record_id), str(record_id))
        shown = escape(str(label if label is not None else known))
        if str(record_id) in self.anchors:
            return f"<a href='#{escape(str(record_id))}'>{shown}</a>"
        return f"{shown} <span class=muted>(not in this bundle)</span>"

    def link(self, record_id: str, title: str | None, detail: str, *, lead: str = "") -> str:
        """A chain box item: ``lead`` (escaped HTML), the title linked, and its detail."""
        target = escape(record_id)
        name = escape(title) if title is not None else escape(record_id)
        return f"{lead} <a href='#{target}'>{name}</a><br><span class=muted>{escape(detail)}</span>"


def nothing_of(what: str) -> str:
    """A section's body when the bundle holds no such record."""
    return f"<p class=muted>{escape(what)} in this bundle</p>"


def record_section(record_id: str, title: str, body: str) -> str:
    """One record's block, anchored by its id (links from other sections point at it)."""
    return f"<section class=obj id='{escape(record_id)}'><h3>{title}</h3>{body}</section>"
