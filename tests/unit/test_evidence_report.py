"""The evidence bundle's index.html as a reviewer reads it, drawn from recorded real documents
(tests/fixtures/evidence): the chain at the top with every link resolving inside the file, one section
per record with what to check, the gate's statistics and the move's policy and override in words, no
JSON in a cell; self-contained and escaped."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gateway.core.evidence.html import CHAIN_STEPS, render_index

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "evidence"


def doc(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def ids_of(page: str) -> set[str]:
    return set(re.findall(r"id='([^']+)'", page)) | set(re.findall(r"\bid=([A-Za-z][\w-]*)", page))


@pytest.mark.parametrize("name", ["release-override.json", "run-rerun.json"])
def test_every_in_page_link_lands_on_an_element_and_nothing_leaves_the_file(name):
    page = render_index(doc(name))
    links = set(re.findall(r"href='#([^']+)'", page))
    assert links and links <= ids_of(page), links - ids_of(page)
    assert not re.search(r"(href|src)=['\"]?(https?:|//|[a-z]+:)", page)
    assert "<script" not in page and "<img" not in page
    assert "@media print" in page and "@page" in page


def test_the_chain_has_its_seven_steps_in_order_each_item_linking_to_its_record():
    d = doc("release-override.json")
    page = render_index(d)
    chain = page[page.index("<div class=chain") : page.index("<nav class=toc")]
    positions = [chain.index(f"</span> {step}</b>") for step in CHAIN_STEPS]
    assert positions == sorted(positions)
    gate = d["evaluations"]["gates"][0]["id"]
    move = d["alias_events"][-1]
    assert f"href='#{gate}'" in chain and f"href='#{move['id']}'" in chain and "OVERRIDE" in chain
    assert f"href='#{d['runs'][0]['id']}'" in chain


def test_the_gate_section_gives_what_a_reviewer_checks():
    d = doc("release-override.json")
    page = render_index(d)
    gate = next(g for g in d["evaluations"]["gates"] if g["decision"]["comparisons"])
    section = page[page.index(f"<section class=obj id='{gate['id']}'>") :]
    section = section[: section.index("</section>")]
    c = gate["decision"]["comparisons"][0]
    t = c["test"]
    assert "poc-" in section and "cloze@1" in section  # the suite version
    assert f"{t['delta']:+.4g} [{t['ci_low']:+.4g}, {t['ci_high']:+.4g}]" in section  # change with interval
    assert f"{t['method']}, n={t['n']}" in section and f"{c['p_adjusted']:.3g}" in section
    assert "&gt;= 0.5" in section  # the thresholds (escaped)
    assert "regression" in section and "badge fail" in section
    reviewer = gate["decided_by"].replace("<", "&lt;").replace(">", "&gt;")
    assert reviewer in section  # who decided
    for review in gate["review_ids"]:  # the reviews it counted, linked when the bundle holds them
        assert review in section


def test_the_move_says_the_policy_in_force_the_gate_it_counted_and_the_override_with_its_reason():
    d = doc("release-override.json")
    page = render_index(d)
    move = next(m for m in d["alias_events"] if m["override"])
    section = page[page.index(f"<section class=obj id='{move['id']}'>") :]
    section = section[: section.index("</section>")]
    assert "policy for staging: moved by lead, 0 approval(s) needed, a passing gate of" in section
    assert f"href='#{move['gate_id']}'" in section and "OVERRIDE" in section and move["reason"] in section


def test_no_json_in_any_cell_and_no_python_repr():
    for name in ("release-override.json", "run-rerun.json"):
        page = render_index(doc(name))
        cells = re.findall(r"<td>(.*?)</td>", page, re.S)
        assert cells
        for cell in cells:
            assert not re.search(r"\{&quot;|\{'|\[\]|\bNone\b", cell), cell


def test_a_run_outside_the_bundle_is_named_not_linked():
    d = doc("run-rerun.json")
    parent = d["runs"][0]["parent_run_id"]
    page = render_index(d)
    assert f"{parent} <span class=muted>(not in this bundle)</span>" in page
    assert f"href='#{parent}'" not in page


def test_values_are_escaped_everywhere():
    d = doc("run-rerun.json")
    d["runs"][0]["name"] = "<script>alert(1)</script>"
    d["runs"][0]["spec"]["command"] = "echo '<b>x</b>'"
    page = render_index(d)
    assert "<script>" not in page and "&lt;script&gt;" in page and "<b>x</b>" not in page
