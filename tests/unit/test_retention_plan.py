"""The retention plan and policies as pure values (core/retention), and the site file's sections."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gateway.core.retention.plan import RunFiles, expired_note, inside, plan
from gateway.core.retention.policy import RetentionSpec, effective, stored
from gateway.core.site.schema import parse_site
from gateway.errors import SpecError

NOW = datetime(2027, 6, 1, tzinfo=UTC)
POLICY = RetentionSpec(logs_days=30, unreleased_outputs_days=60, failed_run_days=7)


def run(state: str = "succeeded", ended_days_ago: float = 100, **kw) -> RunFiles:
    values = {
        "run_id": "r-1",
        "project": "p",
        "submitter": "ann",
        "os_user": "ann",
        "state": state,
        "run_dir": "/runs/r-1",
        "ended_at": NOW - timedelta(days=ended_days_ago),
        "logs": ("/runs/r-1/stdout-1.log", "/runs/r-1/stderr-1.log", "/home/ann/elsewhere.log"),
        "outputs": (("model.bin", "a" * 64),),
    }
    return RunFiles(**{**values, **kw})


def rules(result) -> list[tuple[str, str]]:
    return [(d.rel, d.rule) for d in result.deletions]


def test_logs_and_outputs_go_by_their_own_days_and_a_log_outside_the_run_directory_never():
    assert rules(plan([run(ended_days_ago=100)], {"p": POLICY}, NOW)) == [
        ("model.bin", "outputs"),
        ("stderr-1.log", "logs"),
        ("stdout-1.log", "logs"),
    ]
    assert rules(plan([run(ended_days_ago=40)], {"p": POLICY}, NOW)) == [
        ("stderr-1.log", "logs"),
        ("stdout-1.log", "logs"),
    ]
    assert rules(plan([run(ended_days_ago=29)], {"p": POLICY}, NOW)) == []


def test_a_failed_run_loses_its_directory_and_nothing_is_listed_twice():
    assert rules(plan([run("cancelled", 8)], {"p": POLICY}, NOW)) == [(".", "failed-runs")]
    assert rules(plan([run("failed", 6)], {"p": POLICY}, NOW)) == []


def test_holds_and_releases_keep_everything_and_say_why():
    result = plan(
        [run(held="hold h-1 on run r-1 by lead: audit"), run(run_id="r-2", protected="release")], {}, NOW
    )
    assert result.deletions == []
    assert [k.reason for k in result.kept] == ["hold h-1 on run r-1 by lead: audit", "release"]


def test_no_policy_deletes_nothing_and_what_expired_is_not_listed_again():
    assert plan([run("failed")], {}, NOW).deletions == []
    assert rules(plan([run(expired=frozenset({"stdout-1.log", "model.bin"}))], {"p": POLICY}, NOW)) == [
        ("stderr-1.log", "logs")
    ]
    assert plan([run(expired=frozenset({"."}))], {"p": POLICY}, NOW).deletions == []


def test_a_member_who_left_with_expire_loses_the_run_directories_after_the_grace():
    policy = RetentionSpec(on_member_leave="expire", left_member_days=3)
    assert rules(plan([run(left_at=NOW - timedelta(days=4))], {"p": policy}, NOW)) == [(".", "member-left")]
    assert plan([run(left_at=NOW - timedelta(days=2))], {"p": policy}, NOW).deletions == []
    keep = RetentionSpec(on_member_leave="keep")
    assert plan([run(left_at=NOW - timedelta(days=400))], {"p": keep}, NOW).deletions == []


@pytest.mark.parametrize("path", ["/runs/r-1/../r-2/x", "/runs/r-1", "/runs/r-10/x", "relative/x"])
def test_inside_is_lexical_and_strict(path):
    assert inside("/runs/r-1", path) is None


def test_a_policy_that_deletes_nothing_says_so():
    assert not RetentionSpec().deletes() and not RetentionSpec(space_limit_gb=1).deletes()
    assert RetentionSpec(logs_days=0).deletes() and RetentionSpec(on_member_leave="expire").deletes()


def test_a_project_overrides_the_site_default_field_by_field():
    option = stored(RetentionSpec(logs_days=30, space_warn_percent=90), {"p": RetentionSpec(logs_days=5)})
    assert effective(option, "p").logs_days == 5 and effective(option, "p").space_warn_percent == 90
    assert effective(option, "q").logs_days == 30
    assert effective({}, "q") == RetentionSpec()
    assert expired_note(NOW, "logs") == "files expired on 2027-06-01 by rule logs"


def test_the_site_file_refuses_a_bad_policy_naming_the_field():
    with pytest.raises(SpecError, match="on_member_leave"):
        parse_site("retention: {on_member_leave: shred}\n")
    with pytest.raises(SpecError, match="logs_days"):
        parse_site("projects: [{name: p, retention: {logs_days: -1}}]\n")
    config = parse_site("retention: {logs_days: 3}\nprojects: [{name: p, retention: {space_limit_gb: 2}}]\n")
    assert config.retention_given and config.projects[0].retention.space_limit_bytes == 2 * 1024**3
