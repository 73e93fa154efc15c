"""Approvals are re-checked when an alias moves (issue 26, item 3): an approver who lost the role,
left the project or was disabled no longer counts, and the move (or its refusal) says so.

Runs are written straight to the store (``registry_world``); both database backends.
"""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest

from gateway.core.access.values import User
from gateway.core.projects import Member, Quota
from gateway.errors import Conflict
from gateway.settings import Settings
from gateway.wiring import build_services
from tests.service.registry_world import add_project, ended_run, principals


@pytest.fixture(scope="module")
def world(database_url, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("approvals")
    services = build_services(
        Settings(database_url=database_url, runs_dir=tmp / "runs", audit_anchor_path=tmp / "anchors.jsonl")
    )
    yield services
    services.close()


def fresh(services):
    """A project of its own (its members as ``principals`` names them), a model with one release, and
    prod protected: a lead moves it, with one approval."""
    project = f"apr{uuid.uuid4().hex[:8]}"
    add_project(services, project)
    who = principals(project)
    name = f"m{uuid.uuid4().hex[:6]}"
    services.releases.register_model(project, name, principal=who["member"], description="tiny")
    _, sha = ended_run(services, project)
    services.releases.create_release(project, name, sha, principal=who["member"], notes="n")
    services.alias_policies.set_policy(
        project, name, "prod", principal=who["lead"], roles=["lead"], approvals=1
    )
    return project, name, who


def set_role(services, project: str, user: str, role: str | None) -> None:
    """``user``'s role in ``project`` becomes ``role`` (None: removed from the project)."""
    found = services.access.project(project)
    members = [m for m in found.members if m.user != user]
    if role is not None:
        members.append(Member(user, role, Quota()))
    services.access.put_project(replace(found, members=members))


@pytest.mark.parametrize(
    "change",
    ["removed", "demoted", "disabled"],
)
def test_an_approval_by_a_reviewer_who_lost_the_role_no_longer_counts(world, change):
    services = world
    project, name, who = fresh(services)
    request = services.promotions.request(project, name, 1, "prod", principal=who["lead"], reason="ship")
    approved = services.promotions.decide(request.id, "approve", principal=who["reviewer"], note="ok")
    assert approved.status == "approved"
    reviewer = who["reviewer"].user
    if change == "removed":
        set_role(services, project, reviewer, None)
        why = f"{reviewer} is no longer a member of project {project}"
    elif change == "demoted":
        set_role(services, project, reviewer, "viewer")
        why = f"{reviewer} is now viewer in project {project}, which may not approve"
    else:
        services.access.put_user(User(reviewer, None, False, True))
        why = "the user is disabled"
    with pytest.raises(Conflict) as refused:
        services.promotions.promote(project, name, 1, "prod", principal=who["lead"], reason="go")
    message = str(refused.value)
    assert "1 approval(s) by someone other than the requester; 0 given" in message
    assert f"the approval by {reviewer} no longer counts: {why}" in message
    assert services.promotions.aliases(project, name, principal=who["lead"]) == []


def test_a_move_counts_only_current_approvers_and_records_the_one_it_did_not_count(world):
    services = world
    project, name, who = fresh(services)
    request = services.promotions.request(project, name, 1, "prod", principal=who["lead"], reason="ship")
    services.promotions.decide(request.id, "approve", principal=who["reviewer"])
    services.promotions.decide(request.id, "approve", principal=who["lead2"])
    set_role(services, project, who["reviewer"].user, None)
    move = services.promotions.promote(project, name, 1, "prod", principal=who["lead"], reason="go")
    assert move.approvals == (who["lead2"].user,)
    (event,) = [
        e
        for e in services.audit.events(who["lead"], project=project, action="alias.move").items
        if e.after["release"] == f"{project}/{name}@1"
    ]
    assert event.after["approvals"] == [who["lead2"].user]
    assert event.after["approvals_not_counted"] == [
        {
            "user": who["reviewer"].user,
            "why": f"{who['reviewer'].user} is no longer a member of project {project}",
        }
    ]


def test_an_approver_still_in_the_role_counts(world):
    services = world
    project, name, who = fresh(services)
    request = services.promotions.request(project, name, 1, "prod", principal=who["lead"], reason="ship")
    services.promotions.decide(request.id, "approve", principal=who["reviewer"])
    set_role(services, project, who["reviewer"].user, "lead")  # a promotion keeps the right to approve
    move = services.promotions.promote(project, name, 1, "prod", principal=who["lead"], reason="go")
    assert move.approvals == (who["reviewer"].user,)
