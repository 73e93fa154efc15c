"""gw poc's pure parts: the site file, a scenario's checks, the summary page; and the redaction fix
that keeps a bundle's schema name when a user (the operator) is called "gateway"."""

from __future__ import annotations

import pytest

from gateway.core.evidence.bundle import redact
from gateway.errors import SpecError
from gateway.poc.checks import Scenario, StepFailed
from gateway.poc.report import render
from gateway.poc.site import load_site
from gateway.poc.words import say


def test_a_site_file_with_an_unknown_key_or_a_bad_prefix_is_refused_with_the_key(tmp_path):
    bad = tmp_path / "site.yaml"
    bad.write_text("project: demo\nqueue: cpu\nprefix: 'No Spaces'\n")
    with pytest.raises(SpecError) as caught:
        load_site(bad)
    text = str(caught.value)
    assert "queue" in text and "prefix" in text
    good = tmp_path / "good.yaml"
    good.write_text("project: p1\ngpu_cap: 2\ncost: {rates: accounting/rates.yaml, currency: EUR}\n")
    site = load_site(good)
    assert (site.project, site.gpu_cap, site.cost.currency) == ("p1", 2, "EUR")
    assert load_site(None).project == "demo"


def test_a_failed_fatal_check_stops_the_scenario_and_a_cost_check_does_not():
    sc = Scenario(3, "failure")
    assert sc.check("cost", False, "a cost", "404", fatal=False, kind="cost") is False
    with pytest.raises(StepFailed) as caught:
        sc.check("classified", False, "class data_access", "user_code")
    assert "classified: expected class data_access; saw user_code" in str(caught.value)
    assert not sc.passed and [c.step for c in sc.failed_checks] == ["cost", "classified"]
    ok = Scenario(1, "normal")
    ok.check("x", True, "y", "y")
    ok.made("run", "r-1", "r-1", None)
    assert ok.passed and ok.ids == {"run": ["r-1"]}


def test_the_summary_page_escapes_what_it_shows_and_marks_failures():
    sc = Scenario(4, "regression <b>")
    sc.check("gate", True, "fail", "fail")
    sc.check("cost", False, "a cost", "<script>alert(1)</script>", fatal=False, kind="cost")
    data = {
        "passed": False,
        "gateway": "http://127.0.0.1:8000",
        "project": "poc-1",
        "seconds": 1.0,
        "scenarios": [sc.as_dict()],
        "failed_cost_steps": [{"scenario": 4, "step": "cost", "seen": "404"}],
        "cleanup": ["removed project poc-1"],
    }
    page = render(data)
    assert "<script>" not in page and "&lt;script&gt;" in page and "regression &lt;b&gt;" in page
    assert "FAIL" in page and "(cost)" in page and "id='s4'" in page and "href='http" not in page
    assert "<table class=overview>" in page and "0 of 1 scenarios passed" in page


def test_what_a_check_saw_is_written_in_words_not_as_a_python_repr():
    sc = Scenario(1, "words")
    sc.check(
        "a dict", True, "x", {"ingested": None, "pass": [], "ids": ["a", "b"], "n": 1.4722e-05, "ok": True}
    )
    sc.check("a tuple list", True, "x", [("g1", "ALLOCATED", "4/4 CPUs")])
    seen = [c.seen for c in sc.checks]
    assert seen == ["ingested nothing; pass none; ids a, b; n 0.0000147; ok yes", "g1 ALLOCATED 4/4 CPUs"]
    assert say({"a": {"b": 1}}) == "a (b 1)" and say("x" * 700).endswith("...") and len(say("x" * 700)) == 600


def test_redaction_keeps_the_schema_name_when_a_person_is_called_like_it():
    doc = {"schema": "gateway.evidence", "actor": "gateway", "note": "by gateway.evidence"}
    out = redact(doc)
    assert out["schema"] == "gateway.evidence" and out["actor"] == "<user-1>"
    assert out["note"] == "by <user-1>.evidence"


def test_the_rate_table_is_read_from_the_file_the_site_file_names_or_taken_inline(tmp_path):
    (tmp_path / "rates.yaml").write_text("accounting:\n  currency: EUR\n  rates: []\n")
    site = tmp_path / "site.yaml"
    site.write_text("cost: {rates: rates.yaml}\n")
    assert load_site(site).cost.rate_table(load_site(site).base) == {"currency": "EUR", "rates": []}
    site.write_text("cost: {rates: {currency: CHF}}\n")
    assert load_site(site).cost.rate_table(tmp_path) == {"currency": "CHF"}
    assert load_site(None).cost.rate_table(tmp_path) is None
    (tmp_path / "bad.yaml").write_text("- a list\n")
    site.write_text("cost: {rates: bad.yaml}\n")
    with pytest.raises(SpecError, match="mapping"):
        load_site(site).cost.rate_table(tmp_path)


def test_the_pocs_cost_checks_count_a_cancellation_apart_from_failures():
    from gateway.poc.cost import _cancelled, _failed

    # the gateway's own flags, else Slurm's state (an older gateway's answer without them)
    assert _cancelled({"cancelled": True, "failed": False}) and not _failed(
        {"cancelled": True, "failed": False}
    )
    assert _failed({"state": "FAILED"}) and not _cancelled({"state": "FAILED"})
    assert _cancelled({"state": "CANCELLED by 0"}) and not _failed({"state": "CANCELLED by 0"})
    assert not _failed({"state": "COMPLETED"}) and not _cancelled({"state": "COMPLETED"})


def test_the_pocs_clusters_keep_the_sites_own_first_and_a_cluster_neither_lists_is_named(tmp_path):
    from gateway.poc.placement import merged

    own = [{"name": "gwlocal"}]
    brought = [{"name": "gwnew"}, {"name": "gwlocal2", "slurm_conf": "/etc/slurm-gwlocal2/slurm.conf"}]
    # the site's own first (its default stays), then those it lacks; on a site that lists none, as brought
    assert [c["name"] for c in merged(own, brought, {"cpu": None, "gpu": "gwlocal2"})] == [
        "gwlocal",
        "gwnew",
        "gwlocal2",
    ]
    assert merged([], brought, {"cpu": None, "gpu": "gwlocal2"}) == brought
    assert merged(own, [], {"cpu": None, "gpu": None}) == own
    with pytest.raises(StepFailed) as caught:
        merged(own, [], {"cpu": None, "gpu": "gwlocal2"})
    text = str(caught.value)
    assert "cluster gwlocal2 (the POC's gpu queue goes on it)" in text and "the gateway lists gwlocal" in text
    site = tmp_path / "site.yaml"
    site.write_text("gpu_cluster: gwlocal2\nclusters: [{name: gwlocal2, slurm_conf: /etc/x/slurm.conf}]\n")
    loaded = load_site(site)
    assert loaded.gpu_cluster == "gwlocal2"
    assert loaded.clusters[0].entry()["slurm_conf"] == "/etc/x/slurm.conf"


def test_the_summary_page_names_each_runs_cluster_and_the_accounting_per_cluster():
    sc = Scenario(2, "waiting")
    sc.check("cap", True, "x", "x")
    sc.clusters = {"r-1": "gwlocal2"}
    sc.costs = [{"run_id": "r-1", "step": "cost", "total": 1.0, "failed_total": 0, "currency": "EUR"}]
    numbers = {"records": 2, "cpu_hours": 0.5, "gpu_hours": 0.25}
    accounting = {
        "period": "2026-12-04..2026-12-04",
        "account": "poc-1",
        "clusters": [
            {"cluster": "gwlocal2", "gateway": numbers, "sacct": numbers, "why": None},
            {"cluster": "gwlocal", "gateway": numbers, "sacct": None, "why": "no sacct here"},
        ],
        "checks": [
            {"step": "accounting on gwlocal2", "ok": True, "expected": "a", "seen": "a", "kind": "accounting"}
        ],
    }
    data = {
        "passed": True,
        "gateway": "http://127.0.0.1:8000",
        "project": "poc-1",
        "seconds": 1.0,
        "scenarios": [sc.as_dict()],
        "cleanup": [],
        "accounting": accounting,
    }
    page = render(data)
    assert "<th>runs on</th>" in page and "<td>gwlocal2</td>" in page and "id=accounting" in page
    assert "no sacct here" in page and "0.2500" in page and sc.as_dict()["clusters"] == {"r-1": "gwlocal2"}
