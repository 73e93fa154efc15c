"""The registry's pure rules and the evidence bundle's pure parts, on plain values."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from gateway.core.evidence.bundle import redact, unzip_bytes, verify_files, zip_bytes
from gateway.core.evidence.html import render_index
from gateway.core.releases.domain import (
    AdvisoryCheck,
    AliasEvent,
    AliasPolicy,
    PromotionDecision,
    PromotionRequest,
    alias_at,
    check_alias,
    missing_for_move,
    parse_at,
    parse_release_ref,
)

T0 = datetime(2026, 11, 3, 12, 0, tzinfo=UTC)


def move(seq: int, minutes: int, to: int | None) -> AliasEvent:
    return AliasEvent(
        id=f"am-{seq}",
        model_id="md",
        alias="prod",
        seq=seq,
        from_release=None,
        to_release=f"rl-{to}",
        from_version=None,
        to_version=to,
        actor="a",
        at=T0 + timedelta(minutes=minutes),
        reason="",
    )


def test_alias_at_is_the_newest_move_at_or_before_the_time():
    moves = [move(1, 0, 1), move(2, 60, 2), move(3, 120, 3), move(4, 180, 1)]
    assert alias_at(moves, T0 - timedelta(seconds=1)) is None
    assert alias_at(moves, T0).to_version == 1  # a move counts from its own instant
    assert alias_at(moves, T0 + timedelta(minutes=119)).to_version == 2
    assert alias_at(list(reversed(moves)), T0 + timedelta(minutes=150)).to_version == 3
    assert alias_at(moves, T0 + timedelta(days=9)).to_version == 1


def test_release_refs_aliases_and_times_say_what_is_valid():
    assert parse_release_ref("demo/tiny-lm@v3").version == 3
    assert parse_release_ref("demo/tiny-lm@latest").version is None
    assert parse_release_ref("demo/tiny-lm", version=False).name == "tiny-lm"
    for bad, version, words in [
        ("tiny-lm@3", None, "PROJECT/NAME@VERSION"),
        ("demo/tiny-lm", True, "names no version"),
        ("demo/x@3", False, "names a version"),
        ("demo/x@0", None, "numbered from 1"),
        ("demo/x y@1", None, "not valid"),
    ]:
        with pytest.raises(ValueError, match=words):
            parse_release_ref(bad, version=version)
    for alias in ("Prod", "1st", "a" * 33, "pro d", "", "prod;rm"):
        with pytest.raises(ValueError, match="lower-case"):
            check_alias(alias)
    assert parse_at("2026-11-03T14:00") == datetime(2026, 11, 3, 14, tzinfo=UTC)
    assert parse_at("2026-11-03T15:00+01:00") == datetime(2026, 11, 3, 14, tzinfo=UTC)
    assert parse_at("2026-11-03T14:00Z") == datetime(2026, 11, 3, 14, tzinfo=UTC)
    with pytest.raises(ValueError, match="ISO 8601"):
        parse_at("yesterday")


def policy(**kw) -> AliasPolicy:
    fields = {
        "project": "p",
        "alias": "prod",
        "model_id": "md",
        "roles": ("lead",),
        "approvals": 1,
        "gate_suite": "p/suite",
        "updated_by": "x",
        "updated_at": T0,
    } | kw
    return AliasPolicy(**fields)


def test_a_move_lists_everything_it_misses_and_only_a_gate_can_be_overridden():
    full = missing_for_move(
        policy(), role="member", is_admin=False, approvers=[], gate_verdict="fail", release_status="active"
    )
    assert len(full.missing) == 3 and not full.gate_failed
    assert "needs lead" in full.missing[0] and "0 given" in full.missing[1] and "is fail" in full.missing[2]
    gate_only = missing_for_move(
        policy(), role="lead", is_admin=False, approvers=["b"], gate_verdict=None, release_status="active"
    )
    assert gate_only.gate_failed and "no gate decision recorded" in gate_only.missing[0]
    ok = missing_for_move(
        policy(), role="lead", is_admin=False, approvers=["b"], gate_verdict="pass", release_status="active"
    )
    assert ok.ok
    assert missing_for_move(
        None, role="member", is_admin=False, approvers=[], gate_verdict=None, release_status="active"
    ).ok
    withdrawn = missing_for_move(
        None, role="lead", is_admin=True, approvers=[], gate_verdict=None, release_status="withdrawn"
    )
    assert not withdrawn.ok and not withdrawn.gate_failed
    assert missing_for_move(
        policy(roles=("admin",)),
        role="lead",
        is_admin=False,
        approvers=["b"],
        gate_verdict="pass",
        release_status="active",
    ).missing


def test_the_advisory_rule_counts_its_severity_or_worse_and_an_override_stands_in_with_the_gate():
    found = AdvisoryCheck(
        "p/torch@3",
        (
            ("GHSA-1", "CRITICAL", "torch", "2.0"),
            ("GHSA-2", "MODERATE", "numpy", "1.0"),
            ("X-3", "UNKNOWN", "a", "1"),
        ),
    )
    rule = policy(gate_suite=None, approvals=0, advisory_severity="HIGH")
    move = dict(role="lead", is_admin=False, approvers=[], gate_verdict=None, release_status="active")
    high = missing_for_move(rule, advisories=found, **move)
    (missing,) = high.missing
    assert high.gate_failed and "GHSA-1 (CRITICAL) in torch 2.0" in missing and "GHSA-2" not in missing
    assert "p/torch@3 has 1" in missing and "HIGH or worse" in missing
    low = missing_for_move(
        policy(gate_suite=None, approvals=0, advisory_severity="LOW"), advisories=found, **move
    )
    assert "GHSA-2 (MODERATE) in numpy 1.0" in low.missing[0] and "X-3" not in low.missing[0]
    assert missing_for_move(rule, advisories=AdvisoryCheck("p/torch@4"), **move).ok
    assert missing_for_move(rule, advisories=AdvisoryCheck(None), **move).ok  # no environment named
    unchecked = missing_for_move(rule, advisories=AdvisoryCheck("p/t@1", unchecked="no advisory_dir"), **move)
    assert unchecked.gate_failed and "(no advisory_dir)" in unchecked.missing[0]
    assert "not checked" in missing_for_move(rule, **move).missing[0]
    # the gate and the rule together: still only what an override stands in for
    both = missing_for_move(
        policy(approvals=0, advisory_severity="CRITICAL"), advisories=found, **move | {"gate_verdict": "fail"}
    )
    assert len(both.missing) == 2 and both.gate_failed
    # with a role missing too, no override
    member = missing_for_move(rule, advisories=found, **move | {"role": "member"})
    assert len(member.missing) == 2 and not member.gate_failed
    assert policy(advisory_severity="HIGH").as_dict()["advisory_severity"] == "HIGH"


def test_the_requester_never_counts_and_a_later_decision_replaces_an_earlier_one():
    def d(who, what, minute):
        return PromotionDecision(f"pd-{who}{minute}", "pr", what, who, "", T0 + timedelta(minutes=minute))

    request = PromotionRequest(
        id="pr",
        model_id="md",
        project="p",
        model="m",
        alias="prod",
        release_id="rl",
        version=1,
        requested_by="alice",
        reason="",
        at=T0,
        status="open",
        decisions=(
            d("alice", "approve", 1),
            d("bob", "approve", 2),
            d("carol", "approve", 3),
            d("carol", "reject", 4),
        ),
    )
    assert request.approvers() == ["bob"] and request.rejected_by() == ["carol"]


DOC = {
    "schema": "gateway.evidence",
    "subject": {"type": "run", "label": "r-1"},
    "generated_by": "alice",
    "runs": [
        {
            "id": "r-1",
            "submitter": "alice",
            "os_user": "alice_os",
            "run_dir": "/home/alice_os/runs/r-1",
            "spec": {"env": {"API_KEY": "s3cret-value"}, "workdir": "/root"},
            "script": "cd /home/alice_os/proj\\nexport API_KEY=s3cret-value\\npython train.py # by alice",
            "attempt_history": [{"node_list": "gpu-node-7", "events": [{"source": "sacct"}]}],
            "datasets": [],
            "artifacts": [{"path": "outputs/model.json", "sha256": "ab" * 32, "size": 3}],
        }
    ],
    "audit": {
        "events": [{"actor": "bob", "source": "10.1.2.3", "after": {"note": "token gwt_ABCDEFGHIJKLMNOP"}}]
    },
}


def test_redaction_replaces_people_hosts_paths_env_values_and_tokens_with_stable_pseudonyms():
    out = redact(DOC, people=["carol"])
    text = json.dumps(out)
    for secret in ("alice", "bob", "/home", "/root", "s3cret-value", "gwt_ABC", "gpu-node-7", "10.1.2.3"):
        assert secret not in text, secret
    run = out["runs"][0]
    assert run["submitter"] == out["generated_by"] == "<user-1>"  # the same person, the same pseudonym
    assert run["spec"]["env"]["API_KEY"].startswith("<env-") and "API_KEY" in run["script"]
    assert run["artifacts"][0]["sha256"] == "ab" * 32 and run["artifacts"][0]["path"] == "outputs/model.json"
    assert out["redaction"]["applied"] and set(out["redaction"]["replaced"]) == {
        "env",
        "host",
        "path",
        "token",
        "user",
    }
    assert "s3cret" not in json.dumps(out["redaction"])


def test_the_manifest_catches_a_changed_missing_or_extra_file():
    from gateway.core.evidence.bundle import manifest_bytes

    files = {"evidence.json": b"{}", "index.html": b"<html></html>"}
    files["manifest.json"] = manifest_bytes(files, subject="r-1", generated_at="t")
    assert verify_files(files).ok and verify_files(unzip_bytes(zip_bytes(files))).ok
    assert zip_bytes(files) == zip_bytes(dict(reversed(files.items())))  # the same bundle, the same bytes
    changed = files | {"index.html": b"<html></html >"}
    assert "index.html: sha256" in verify_files(changed).problems[0]
    assert "missing" in verify_files({k: v for k, v in files.items() if k != "index.html"}).problems[0]
    assert "not in the manifest" in verify_files(files | {"extra.txt": b"x"}).problems[0]
    assert "cannot be read" in verify_files(files | {"manifest.json": b"{nope"}).problems[0]
    assert "not an evidence bundle" in verify_files({"a": b""}).problems[0]
    with pytest.raises(ValueError, match="zip"):
        unzip_bytes(b"PK\x03\x04 not really")


def test_the_page_is_self_contained_and_escapes_everything():
    doc = DOC | {"runs": [DOC["runs"][0] | {"name": "<script>alert(1)</script>"}]}
    page = render_index(doc)
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "http://" not in page and "https://" not in page and "src=" not in page


def test_a_gated_policy_records_its_suite_version_and_baseline_and_the_gateways_words():
    pinned = policy(gate_version=3)
    assert pinned.as_dict()["gate_version"] == 3 and pinned.as_dict()["gate_baseline"] == "prod"
    latest = policy(gate_baseline="staging")
    assert latest.as_dict()["gate_version"] == "latest" and latest.baseline_alias == "staging"
    assert "gate_version" not in policy(gate_suite=None).as_dict()
    check = missing_for_move(
        pinned,
        role="lead",
        is_admin=False,
        approvers=["b"],
        gate_verdict="fail",
        release_status="active",
        gate_detail="the gateway's gate gd-1 on p/suite@3 against p/m@1 (prod now) is fail: t: regressed",
    )
    assert check.gate_failed and "against p/m@1 (prod now) is fail" in check.missing[0]


def test_redaction_keeps_the_gateways_own_words_when_a_user_shares_one_of_them():
    """issue 26: a user called admin turned the note's `gw admin audit verify` into `gw <user-1> ...`."""
    doc = {
        "schema": "gateway.evidence",
        "runs": [{"submitter": "admin", "os_user": "root", "script": "#!/bin/bash\necho admin\n"}],
        "audit": {
            "note": "every audit event about these records; check the chain with `gw admin audit verify`",
            "events": [{"actor": "admin", "action": "run.submit"}],
        },
    }
    out = redact(doc, people=["admin", "root"])
    assert out["audit"]["note"] == doc["audit"]["note"]
    assert out["audit"]["events"][0]["actor"] == "<user-1>" and out["runs"][0]["submitter"] == "<user-1>"
    assert out["audit"]["events"][0]["action"] == "run.submit"
    assert "admin" not in out["runs"][0]["script"]  # machine text naming the user is still redacted


def test_redaction_hides_secret_looking_params_of_runs_stored_before_they_were_refused():
    doc = {
        "runs": [
            {
                "spec": {"params": {"password": "hunter22", "lr": 0.1}},
                "script": 'export GW_PARAMS=\'{"password":"hunter22"}\'\nexport GW_PARAM_PASSWORD=hunter22\n',
            }
        ]
    }
    out = redact(doc)
    assert "hunter22" not in json.dumps(out)
    assert out["runs"][0]["spec"]["params"]["lr"] == 0.1
