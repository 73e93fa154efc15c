"""The reviewer role in the policy table, and gw's evaluation views (tables, trees, the HTML page) on
hostile values: nothing from the server becomes markup."""

from __future__ import annotations

import base64
import re

import pytest
from rich.console import Console

from gateway.cli.eval import eval_view
from gateway.cli.eval.eval_html import compare_page
from gateway.core.access.policy import ACTIONS, allowed, require, role_allows
from gateway.core.access.values import Principal
from gateway.errors import Forbidden

READS = {
    "run.read",
    "dataset.read",
    "env.read",
    "project.read",
    "eval.read",
    "release.read",
    "evidence.export",
    "report.read",
    "retention.read",
}
HOSTILE = '<script>alert(1)</script>[bold red]x[/bold red] & "q" $x$'


@pytest.mark.parametrize(
    ("role", "may"),
    [
        ("viewer", READS),
        ("reviewer", READS | {"eval.review", "release.approve"}),
        (
            "member",
            READS
            | {
                "run.submit",
                "run.cancel.own",
                "dataset.register",
                "env.register",
                "eval.suite.register",
                "eval.run",
                "eval.import",
                "eval.gate",
            }
            | {"release.create", "release.promote", "release.request"},
        ),
    ],
)
def test_what_each_role_may_do(role, may):
    assert {a for a in ACTIONS if role_allows(role, a)} == may


def test_a_lead_reviews_a_member_does_not_and_the_refusal_says_who_may():
    lead, member = (Principal(u, False, {"p": r}) for u, r in (("l", "lead"), ("m", "member")))
    assert allowed(lead, "eval.review", "p") and not allowed(member, "eval.review", "p")
    with pytest.raises(Forbidden, match=r"at least lead in project p \(or the reviewer role\)"):
        require(member, "eval.review", "p")
    assert not allowed(Principal("r", False, {"p": "reviewer"}), "eval.review", "other")


def _row(**over) -> dict:
    row = {
        "task": HOSTILE,
        "metric": HOSTILE,
        "higher_is_better": True,
        "a": 0.5,
        "a_stderr": 0.01,
        "b": 0.6,
        "b_stderr": 0.01,
        "delta": -0.1,
        "ci_low": -0.15,
        "ci_high": -0.05,
        "confidence": 0.95,
        "p_value": 0.001,
        "p_adjusted": 0.002,
        "mde": 0.03,
        "margin": 0.05,
        "method": "mcnemar",
        "n": 300,
        "verdict": "regressed",
        "reason": HOSTILE,
    }
    return row | over


def _compare(rows: list[dict]) -> dict:
    return {
        "a": HOSTILE,
        "b": "er-b",
        "suite_version": HOSTILE,
        "a_suite_version": "s@1",
        "b_suite_version": "s@1",
        "verdict": "fail",
        "comparable": True,
        "reasons": [HOSTILE],
        "notes": [HOSTILE],
        "rows": rows,
    }


def test_the_html_page_escapes_every_value_and_embeds_its_plot():
    page = compare_page(_compare([_row(), _row(task="t2", ci_low=None, ci_high=None, delta=None)]))
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert page.count("<tr>") == 3  # the header and both rows
    svg = base64.b64decode(re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', page).group(1))
    assert b"<svg" in svg and b"<script" not in svg  # glyphs are paths; the text only in an escaped comment
    untested = compare_page(_compare([_row(ci_low=None, ci_high=None)]))
    assert "No paired test: nothing to plot." in untested and "data:image" not in untested


def _text(renderable) -> str:
    console = Console(width=400, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_rich_views_show_hostile_text_as_text():
    table = _text(eval_view.compare_table(_compare([_row()])))
    assert "[bold red]x[/bold red]" in table  # printed literally, not taken as style markup
    review = {
        "id": "rv-1",
        "verdict": "approve",
        "reviewer": HOSTILE,
        "created_at": "2026-12-01T10:00:00+00:00",
        "target_type": "eval_result",
        "samples": [],
        "labels": {},
        "notes": HOSTILE,
        "current": True,
        "superseded_by": None,
    }
    assert _text(eval_view.review_line(review)).count("[bold red]x[/bold red]") == 2
    gate = {
        "id": "gd-1",
        "verdict": "fail",
        "candidate_id": "er-a",
        "baseline_id": None,
        "baseline_source": "none",
        "decided_by": "m",
        "decided_at": "2026-12-01T10:00:00+00:00",
        "decision": {"reasons": [HOSTILE], "notes": [], "thresholds": [], "comparisons": []},
    }
    assert "[bold red]x[/bold red]" in _text("\n".join(eval_view.gate_lines(gate)))
