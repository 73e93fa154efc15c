"""The runs list's time filter (``since`` <= created_at < ``until``) in the store, the service and
``GET /runs``, on SQLite and PostgreSQL; and the web list's "from"/"to" dates."""

from __future__ import annotations

from datetime import UTC, timedelta, timezone

import pytest
from fastapi.testclient import TestClient

from gateway.api import create_app
from gateway.core.runs.values import RunFilter
from gateway.web import mount_web
from tests.service.conftest import PROJECT, unique_tag
from tests.service.test_store import make_run
from tests.service.web_client import web_client

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def made(services):
    """Seven runs of project ``test`` recorded one after another (no Slurm jobs), oldest first."""
    tag = unique_tag()
    ids = [make_run(services.runs.store, PROJECT, n, tags=(tag,)) for n in range(7)]
    runs = [services.runs.store.get_run(i) for i in ids]
    assert len({r.created_at for r in runs}) == 7  # the bounds below fall between runs
    return tag, runs


def test_the_store_and_the_service_bound_created_at(services, principal, made):
    tag, runs = made
    since, until = runs[2].created_at, runs[5].created_at
    where = RunFilter(tag=tag, since=since, until=until)
    expected = [r.id for r in reversed(runs[2:5])]  # newest first; since included, until not
    assert [r.id for r in services.runs.store.list_runs(where).items] == expected
    assert [r.id for r in services.runs.list(principal=principal, where=where).items] == expected
    seen, cursor = [], None  # cursor pages stay inside the bounds
    for _ in range(5):
        page = services.runs.list(
            principal=principal, where=RunFilter(tag=tag, since=since, limit=2, cursor=cursor)
        )
        seen += [r.id for r in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == [r.id for r in reversed(runs[2:])]
    other_zone = until.astimezone(timezone(timedelta(hours=-5)))  # the same instant written elsewhere
    assert [
        r.id
        for r in services.runs.list(principal=principal, where=RunFilter(tag=tag, until=other_zone)).items
    ] == [r.id for r in reversed(runs[:5])]
    assert (
        services.runs.list(principal=principal, where=RunFilter(tag=tag, since=until, until=since)).items
        == []
    )


def test_get_runs_takes_since_and_until(services, tester_token, made):
    tag, runs = made
    with TestClient(mount_web(create_app(services=services))) as client:
        client.headers["Authorization"] = f"Bearer {tester_token}"
        naive_utc = runs[1].created_at.astimezone(UTC).replace(tzinfo=None).isoformat()
        params = {"tag": tag, "since": naive_utc, "until": runs[4].created_at.isoformat()}
        listed = client.get("/runs", params=params)
        assert listed.status_code == 200, listed.text
        assert [r["id"] for r in listed.json()["items"]] == [r.id for r in reversed(runs[1:4])]
        for bad_time in ("yesterday", "0.5", "1796013498"):  # not seconds since 1970 either
            bad = client.get("/runs", params={"since": bad_time, "until": bad_time})
            assert bad.status_code == 422, (bad_time, bad.text)
            assert {tuple(i["loc"]) for i in bad.json()["detail"]} == {("query", "since"), ("query", "until")}
            assert "ISO 8601" in bad.text
        spec_params = client.get("/openapi.json").json()["paths"]["/runs"]["get"]["parameters"]
        assert {"since", "until"} <= {p["name"] for p in spec_params}


def test_the_runs_page_filters_by_day(services, tester_token, made):
    tag, runs = made
    day = runs[0].created_at.astimezone(UTC).date()
    with web_client(services, tester_token) as client:

        def listed(**dates: str) -> set[str]:
            page = client.get("/ui/runs", params={"tag": tag, **dates})
            assert page.status_code == 200, page.text
            return {r.id for r in runs if r.id in page.text}

        everything = {r.id for r in runs}
        assert listed() == everything
        assert listed(since=day.isoformat(), until=day.isoformat()) == everything  # "to" includes its day
        assert listed(until=(day - timedelta(days=1)).isoformat()) == set()
        assert listed(since=(day + timedelta(days=1)).isoformat()) == set()
        assert client.get("/ui/runs", params={"since": "01/12/2026"}).status_code == 422
