"""Signed webhooks on release and promotion events, to a receiver on loopback (both database backends).

The receiver verifies every delivery's signature (``gateway.core.handoff.webhooks.verify``, the check
docs/handoff.md gives receivers) and answers the first try of each event with 500 (a forced retry), so
each event arrives twice; after de-duplication on X-Gateway-Event-Id it has seen each event once. The
deliveries are recorded per try, an admin's replay sends the same event again (de-duplicated too), and
the API, ``gw`` and the pages show them.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fastapi.testclient import TestClient

from gateway.api import create_app
from gateway.core.access.values import Principal
from gateway.core.handoff.webhooks import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    EVENT_ID_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    sign,
    verify,
)
from gateway.errors import Forbidden
from gateway.settings import Settings
from gateway.wiring import build_services
from tests.service.gw_serve import GW, serve_in_thread
from tests.service.registry_world import add_project, ended_run, principals
from tests.service.web_client import web_client

SECRET = "s3cret-" + "k" * 24
OPERATOR = Principal.operator()


class Receiver:
    """A webhook receiver on 127.0.0.1: verifies, records, de-duplicates; fails each event's first try."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.deliveries: list[dict] = []  # every request, verified or not
        self.seen: dict[str, dict] = {}  # event id -> event, after de-duplication
        self.failed_once: set[str] = set()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {
                    k: self.headers[k] for k in (TIMESTAMP_HEADER, SIGNATURE_HEADER) if self.headers[k]
                }
                problem = verify(SECRET, headers, body, now=time.time())
                event_id = self.headers[EVENT_ID_HEADER]
                with receiver.lock:
                    receiver.deliveries.append(
                        {
                            "problem": problem,
                            "event_id": event_id,
                            "delivery": self.headers[DELIVERY_HEADER],
                            "type": self.headers[EVENT_HEADER],
                            "path": self.path,
                        }
                    )
                    if problem is None:
                        receiver.seen.setdefault(event_id, json.loads(body))
                    first = event_id not in receiver.failed_once
                    receiver.failed_once.add(event_id)
                status = 401 if problem else 500 if first else 204
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/gateway"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def receiver():
    found = Receiver()
    yield found
    found.close()


@pytest.fixture(scope="module")
def world(database_url, tmp_path_factory, receiver):
    tmp = tmp_path_factory.mktemp("webhooks")
    project = f"wh{uuid.uuid4().hex[:8]}"
    hooks = [
        {"name": "deploy", "url": receiver.url, "secret": SECRET, "projects": [project]},
        {"name": "nobody", "url": "http://127.0.0.1:9/none", "secret": SECRET, "projects": [project],
         "events": ["alias.moved"]},
    ]  # fmt: skip
    services = build_services(
        Settings(
            database_url=database_url,
            runs_dir=tmp / "runs",
            audit_anchor_path=tmp / "anchors.jsonl",
            webhooks=hooks,
            webhook_timeout_s=3,
            handoff_backoff_s=0,  # the test drives the passes; a failed try is due again at once
            handoff_max_attempts=3,
            public_url="https://gateway.example.org",
        )
    )
    add_project(services, project)
    yield services, project, principals(project)
    services.close()


def test_each_event_is_signed_retried_and_seen_once_after_dedup(world, receiver):
    services, project, who = world
    name = f"m{uuid.uuid4().hex[:6]}"
    services.releases.register_model(project, name, principal=who["member"])
    _, sha = ended_run(services, project)
    release = services.releases.create_release(project, name, sha, principal=who["member"])
    move = services.promotions.promote(project, name, 1, "candidate", principal=who["member"], reason="try")
    for _ in range(3):
        services.handoff.process_due()
    mine = [d for d in receiver.deliveries if d["event_id"] in (f"ev-{release.id}", f"ev-{move.id}")]
    assert mine and all(d["problem"] is None for d in mine), mine  # every signature verified
    assert sorted(d["event_id"] for d in mine) == sorted([f"ev-{release.id}", f"ev-{move.id}"] * 2)
    assert len({d["delivery"] for d in mine}) == 4  # each try its own delivery id
    assert all(d["path"] == "/hooks/gateway" for d in mine)
    created, moved = receiver.seen[f"ev-{release.id}"], receiver.seen[f"ev-{move.id}"]
    assert created["type"] == "release.created" and created["release"]["artifact_sha256"] == sha
    assert (
        moved["type"] == "alias.moved"
        and moved["alias"] == "candidate"
        and moved["actor"] == who["member"].user
    )
    assert moved["from"] is None and moved["to"]["version"] == 1 and moved["reason"] == "try"
    assert moved["links"]["evidence"] == f"https://gateway.example.org/evidence/releases/{project}/{name}/1"
    status = services.handoff.mirror_status(project, name, principal=who["viewer"])
    (hook,) = status["releases"][0]["webhooks"]
    assert hook["status"] == "done" and [t["status_code"] for t in hook["tries"]] == [500, 204]
    alias_hooks = {h["target"]: h for h in status["aliases"][0]["webhooks"]}
    assert alias_hooks["deploy"]["status"] == "done"
    dead = alias_hooks["nobody"]  # nothing listens there: three tries, then dead
    assert dead["status"] == "dead" and dead["attempts"] == 3
    assert all(t["status_code"] is None and "no answer" in t["error"] for t in dead["tries"])


def test_an_admin_replays_a_delivery_with_the_same_event_id(world, receiver):
    services, project, who = world
    name = f"m{uuid.uuid4().hex[:6]}"
    services.releases.register_model(project, name, principal=who["member"])
    _, sha = ended_run(services, project)
    release = services.releases.create_release(project, name, sha, principal=who["member"])
    for _ in range(2):
        services.handoff.process_due()
    (item,) = [
        i
        for i in services.handoff.items(principal=who["admin"], project=project)
        if i["subject"] == release.id
    ]
    assert item["status"] == "done"
    with pytest.raises(Forbidden, match="site admins"):
        services.handoff.replay(item["id"], principal=who["lead"])
    again = services.handoff.replay(item["id"], principal=who["admin"])
    assert again["status"] == "done" and again["attempts"] == 3 and again["event_id"] == f"ev-{release.id}"
    tries = [d for d in receiver.deliveries if d["event_id"] == f"ev-{release.id}"]
    assert len(tries) == 3 and all(d["problem"] is None for d in tries)
    assert list(receiver.seen).count(f"ev-{release.id}") == 1  # de-duplicated: still one event
    (audit,) = services.audit.events(who["admin"], project=project, action="handoff.replay").items
    assert audit.target_id == item["id"]


def test_the_signature_check_refuses_what_it_must():
    body = b'{"id":"ev-1"}'
    now = int(time.time())
    good = {TIMESTAMP_HEADER: str(now), SIGNATURE_HEADER: sign(SECRET, now, body)}
    assert verify(SECRET, good, body, now=now) is None
    assert "does not match" in verify(SECRET, good, body + b" ", now=now)
    assert "does not match" in verify("another-secret-16ch", good, body, now=now)
    assert "more than 300 s" in verify(SECRET, good, body, now=now + 301)
    assert "no X-Gateway-Timestamp" in verify(
        SECRET, {SIGNATURE_HEADER: good[SIGNATURE_HEADER]}, body, now=now
    )
    assert "no X-Gateway-Signature-256" in verify(SECRET, {TIMESTAMP_HEADER: str(now)}, body, now=now)
    replayed = {
        TIMESTAMP_HEADER: str(now + 5),
        SIGNATURE_HEADER: good[SIGNATURE_HEADER],
    }  # new stamp, old sig
    assert "does not match" in verify(SECRET, replayed, body, now=now)


def test_the_api_shows_deliveries_and_refuses_bad_input(world):
    services, project, who = world
    name = f"m{uuid.uuid4().hex[:6]}"
    services.releases.register_model(project, name, principal=who["member"])
    run_id, sha = ended_run(services, project)
    services.releases.create_release(project, name, sha, principal=who["member"])
    services.handoff.process_due()
    tokens = {
        k: services.auth.issue_token(OPERATOR, who[k].user, name="pytest")[0]
        for k in ("viewer", "admin", "lead")
    }
    with TestClient(create_app(services=services)) as client:

        def call(user, method, path, **kwargs):
            return client.request(method, path, headers={"Authorization": f"Bearer {tokens[user]}"}, **kwargs)

        shown = call("viewer", "GET", f"/models/{project}/{name}/mirror")
        assert shown.status_code == 200, shown.text
        body = shown.json()
        assert body["mlflow"] is None and body["problem"].startswith("no MLflow server")
        (hook,) = body["releases"][0]["webhooks"]
        assert hook["target"] == "deploy" and hook["tries"][0]["status_code"] == 500
        listed = call("viewer", "GET", "/handoff/items", params={"project": project, "kind": "webhook"})
        assert listed.status_code == 200 and hook["id"] in {i["id"] for i in listed.json()}
        assert call("viewer", "GET", "/handoff/items", params={"status": "sideways"}).status_code == 422
        assert call("viewer", "GET", f"/models/{project}/nope/mirror").status_code == 404
        assert call("lead", "POST", f"/handoff/items/{hook['id']}/replay").status_code == 403
        assert call("admin", "POST", "/handoff/items/hx-nothex/replay").status_code == 422
        assert call("admin", "POST", f"/handoff/items/hx-{'0' * 16}/replay").status_code == 404
        run = call("viewer", "GET", f"/runs/{run_id}/handoff")
        assert run.status_code == 200 and run.json()["run_url"] is None
        sync = call("lead", "POST", f"/runs/{run_id}/handoff/mlflow")
        assert sync.status_code == 409 and "no MLflow server" in json.dumps(sync.json())
    with web_client(services, tokens["viewer"]) as browser:
        page = browser.get(f"/ui/models/{project}/{name}")
        assert page.status_code == 200 and 'id="handoff"' in page.text and hook["id"] in page.text
        assert "no MLflow server is configured" in page.text
        run_page = browser.get(f"/ui/runs/{run_id}")
        # no MLflow and nothing handed off for the run itself: the page has no hand-off section
        assert run_page.status_code == 200 and 'id="handoff"' not in run_page.text


def gw(url: str, token: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GW_URL": url, "GW_TOKEN": token, "GW_CONFIG": "/nonexistent.toml", "COLUMNS": "200"}
    return subprocess.run([*GW, *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def test_gw_shows_mirror_status_lists_and_replays(world, receiver):
    services, project, who = world
    name = f"m{uuid.uuid4().hex[:6]}"
    services.releases.register_model(project, name, principal=who["member"])
    _, sha = ended_run(services, project)
    release = services.releases.create_release(project, name, sha, principal=who["member"])
    for _ in range(2):
        services.handoff.process_due()
    tokens = {
        k: services.auth.issue_token(OPERATOR, who[k].user, name="pytest")[0] for k in ("viewer", "admin")
    }
    with serve_in_thread(create_app(services=services)) as url:
        shown = gw(url, tokens["viewer"], "release", "mirror-status", f"{project}/{name}")
        assert shown.returncode == 0, shown.stderr
        assert (
            "MLflow (none configured)" in shown.stdout
            and "webhook" in shown.stdout
            and "deploy" in shown.stdout
        )
        as_json = json.loads(
            gw(url, tokens["viewer"], "release", "mirror-status", f"{project}/{name}", "--json").stdout
        )
        (hook,) = as_json["releases"][0]["webhooks"]
        assert hook["subject"] == release.id and hook["status"] == "done"
        listed = gw(url, tokens["viewer"], "handoff", "list", "--project", project, "--kind", "webhook")
        assert listed.returncode == 0 and hook["id"] in listed.stdout
        bad = gw(url, tokens["viewer"], "handoff", "list", "--status", "sideways")
        assert bad.returncode == 2 and "one of pending, done, failed, dead" in bad.stderr
        refused = gw(url, tokens["viewer"], "handoff", "replay", hook["id"])
        assert refused.returncode == 77 and "site admins" in refused.stderr
        assert gw(url, tokens["admin"], "handoff", "replay", "hx-x").returncode == 2
        again = gw(url, tokens["admin"], "handoff", "replay", hook["id"], "--json")
        assert again.returncode == 0 and json.loads(again.stdout)["attempts"] == 3
        assert gw(url, tokens["viewer"], "release", "mirror-status", "not-a-ref").returncode == 2


def test_the_scheduler_job_works_the_outbox_on_the_leader(world, receiver, monkeypatch):
    services, project, who = world
    name = f"m{uuid.uuid4().hex[:6]}"
    services.releases.register_model(project, name, principal=who["member"])
    _, sha = ended_run(services, project)
    release = services.releases.create_release(project, name, sha, principal=who["member"])
    # The scheduler lease is the database's, shared by every test process: another one may hold it for
    # as long as this test runs. Only the leader works the outbox; that is this process here (the lease
    # itself has its own tests).
    monkeypatch.setattr(services.background, "lead", lambda: True)
    first = services.background.hand_off()  # the leader's periodic job (gateway/scheduler.py)
    assert first is not None and any(i for i in first.failed)  # the receiver fails each first try
    second = services.background.hand_off()
    assert second is not None
    (item,) = services.handoff.store.items(subjects=[release.id])
    assert item.status == "done" and item.id in second.done and item.attempts == 2


def test_an_item_of_an_endpoint_no_longer_configured_fails_and_ends_dead(world):
    services, project, who = world
    from gateway.core.handoff.outbox import NewOutboxItem

    name = f"m{uuid.uuid4().hex[:6]}"
    services.releases.register_model(project, name, principal=who["member"])
    _, sha = ended_run(services, project)
    release = services.releases.create_release(project, name, sha, principal=who["member"])
    (item,) = services.handoff.store.enqueue(
        [NewOutboxItem("webhook", "", project, target="gone", event_type="release.created").about(release.id)]
    )
    for _ in range(3):
        item = services.handoff.work(item)
    assert item.status == "dead" and "'gone' is no longer configured" in item.last_error
