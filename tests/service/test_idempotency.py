"""A retried submission makes one run and one Slurm job: the Idempotency-Key.

Service, API and a real `gw serve` behind a proxy that cuts connections
after the gateway answered (the client never sees the answer and retries),
with a kill -9 of the server in the middle of the burst.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from gateway.api import create_app
from gateway.client.api import ApiError, GatewayClient
from gateway.client.settings import ClientSettings
from gateway.core.runs.values import RunFilter
from gateway.core.slurm.tags import parse_comment
from gateway.core.spec.run_spec import build_spec
from gateway.errors import Conflict, SubmitRejected
from gateway.settings import Settings
from gateway.wiring import build_services
from tests.conftest import wait_for
from tests.service.conftest import PROJECT, unique_tag
from tests.service.gw_serve import gw_serve

pytestmark = pytest.mark.slurm


def spec(tag: str, **changes):
    base = {
        "name": "idem",
        "project": PROJECT,
        "queue": "cpu",
        "command": "true",
        "workdir": "/tmp",
        "hold": True,
        "tags": [tag],
        "resources": {"mem_gb": 0.1, "walltime_min": 2},
    }
    return build_spec({**base, **changes})


_TAGS: list[str] = []  # the run tags this module's tests made; their jobs are cancelled after each test


def own_tag() -> str:
    """A fresh run tag whose runs' Slurm jobs ``_cancel_own_jobs`` cancels, even when a test fails."""
    tag = unique_tag()
    _TAGS.append(tag)
    return tag


@pytest.fixture(autouse=True)
def _cancel_own_jobs(request) -> Iterator[None]:
    yield
    tags = list(_TAGS)
    _TAGS.clear()
    if not tags or "services" not in request.fixturenames:
        return
    store = request.getfixturevalue("services").runs.store
    jobs = [
        a.job_id
        for tag in tags
        for run in store.list_runs(RunFilter(tag=tag, limit=500)).items
        for a in store.get_run(run.id).attempts
        if a.job_id
    ]
    cancel_jobs(jobs)


def cancel_jobs(job_ids: list[str]) -> None:
    """scancel exactly these jobs (none: nothing)."""
    if job_ids:
        subprocess.run(["scancel", *job_ids], check=False, capture_output=True)


def jobs_of_runs(run_ids: set[str]) -> list[str]:
    """The live Slurm jobs whose comment names one of ``run_ids`` (found without the gateway)."""
    out = subprocess.run(["squeue", "-h", "--all", "-o", "%i %k"], capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        job, _, comment = line.partition(" ")
        parts = parse_comment(comment)
        if parts is not None and parts.run_id in run_ids:
            found.append(job)
    return found


def key() -> str:
    return f"k-{uuid.uuid4()}"


def jobs_of(slurm, run) -> list[str]:
    return slurm.find_by_tag(run.attempts[0].tag)


def test_the_same_key_and_request_return_the_first_run(services, principal, slurm):
    tag, k = own_tag(), key()
    first = services.runs.submit_keyed(spec(tag), principal=principal, idempotency_key=k)
    again = services.runs.submit_keyed(spec(tag), principal=principal, idempotency_key=k)
    assert not first.replayed and again.replayed and again.run.id == first.run.id
    assert len(services.runs.store.list_runs(RunFilter(tag=tag)).items) == 1
    assert len(jobs_of(slurm, first.run)) == 1
    services.runs.cancel(first.run.id, principal=principal)


def test_the_same_key_with_another_request_is_a_conflict(services, principal):
    tag, k = own_tag(), key()
    first = services.runs.submit_keyed(spec(tag), principal=principal, idempotency_key=k)
    with pytest.raises(Conflict, match="another request"):
        services.runs.submit_keyed(spec(tag, command="false"), principal=principal, idempotency_key=k)
    assert len(services.runs.store.list_runs(RunFilter(tag=tag)).items) == 1
    services.runs.cancel(first.run.id, principal=principal)


def test_keys_are_per_user(services, principal):
    tag, k = own_tag(), key()
    mia = services.access.principal("mia", source="pytest")
    a = services.runs.submit_keyed(spec(tag), principal=principal, idempotency_key=k)
    b = services.runs.submit_keyed(spec(tag), principal=mia, idempotency_key=k)
    assert a.run.id != b.run.id and not b.replayed
    for run in (a.run, b.run):
        services.runs.cancel(run.id, principal=principal)


def test_concurrent_requests_with_one_key_make_one_run(services, principal, slurm):
    tag, k = own_tag(), key()
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(
            pool.map(
                lambda _: services.runs.submit_keyed(spec(tag), principal=principal, idempotency_key=k),
                range(6),
            )
        )
    assert len({r.run.id for r in results}) == 1 and sum(not r.replayed for r in results) == 1
    (run,) = services.runs.store.list_runs(RunFilter(tag=tag)).items
    assert len(jobs_of(slurm, run)) == 1
    services.runs.cancel(run.id, principal=principal)


def test_a_refused_submission_is_refused_again_on_replay(services, principal):
    tag, k = own_tag(), key()
    too_big = spec(
        tag, hold=False, slurm_options={"constraint": "nosuchfeature"}
    )  # a feature no node has: the gateway does not know features, sbatch refuses it
    with pytest.raises(SubmitRejected) as first:
        services.runs.submit_keyed(too_big, principal=principal, idempotency_key=k)
    with pytest.raises(SubmitRejected) as again:
        services.runs.submit_keyed(too_big, principal=principal, idempotency_key=k)
    assert again.value.run_id == first.value.run_id  # type: ignore[attr-defined]
    assert len(services.runs.store.list_runs(RunFilter(tag=tag)).items) == 1


def test_an_expired_key_starts_afresh(settings, services, principal):
    brief = build_services(Settings(**{**settings.model_dump(), "idempotency_ttl_s": 0.5}), upgrade=False)
    try:
        tag, k = own_tag(), key()
        first = brief.runs.submit_keyed(spec(tag), principal=principal, idempotency_key=k)
        time.sleep(0.8)
        later = brief.runs.submit_keyed(spec(tag), principal=principal, idempotency_key=k)
        assert later.run.id != first.run.id and not later.replayed
        assert brief.runs.store.forget_expired_keys() >= 0
        for run in (first.run, later.run):
            brief.runs.cancel(run.id, principal=principal)
    finally:
        brief.close()


def test_rerun_takes_a_key_too(services, principal):
    tag, k = own_tag(), key()
    parent = services.runs.submit(spec(tag), principal=principal)
    a = services.runs.rerun_keyed(
        parent.id, principal=principal, changes=["resources.mem_gb=0.2"], idempotency_key=k
    )
    b = services.runs.rerun_keyed(
        parent.id, principal=principal, changes=["resources.mem_gb=0.2"], idempotency_key=k
    )
    assert b.replayed and a.run.id == b.run.id and a.run.parent_run_id == parent.id
    for run_id in (parent.id, a.run.id):
        services.runs.cancel(run_id, principal=principal)


def test_the_api_says_when_it_replays(services, tester_token):
    with TestClient(create_app(services=services)) as api:
        api.headers["Authorization"] = f"Bearer {tester_token}"
        body = spec(own_tag()).model_dump(mode="json")
        headers = {"Idempotency-Key": key()}
        first = api.post("/runs", json=body, headers=headers)
        again = api.post("/runs", json=body, headers=headers)
        assert first.status_code == again.status_code == 201
        assert "Idempotent-Replayed" not in first.headers and again.headers["Idempotent-Replayed"] == "true"
        assert again.json()["id"] == first.json()["id"]
        other = api.post("/runs", json={**body, "command": "false"}, headers=headers)
        assert other.status_code == 409 and other.json()["error"] == "conflict"
        bad = api.post("/runs", json=body, headers={"Idempotency-Key": "no spaces allowed"})
        assert bad.status_code == 422
        api.post(f"/runs/{first.json()['id']}/cancel")


class CuttingProxy:
    """A loopback TCP proxy that drops every ``every``-th connection right after the server answered:
    the request was served, the client never hears back. Bounded: stops when closed."""

    def __init__(self, upstream_port: int, every: int = 3) -> None:
        self.upstream_port, self.every = upstream_port, every
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.cut = 0
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            cut = self.connections % self.every == 1
            threading.Thread(target=self._serve, args=(client, cut), daemon=True).start()

    def _serve(self, client: socket.socket, cut: bool) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=60)
        except OSError:
            client.close()  # the server is down (killed): the client sees a refused connection
            return
        client.settimeout(60)

        def pump(src: socket.socket, dst: socket.socket, cut_here: bool) -> None:
            try:
                while data := src.recv(65536):
                    if cut_here:
                        self.cut += 1
                        break  # the answer came: drop it and the connection
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                for sock in (src, dst):
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)
                    sock.close()

        threading.Thread(target=pump, args=(client, upstream, False), daemon=True).start()
        pump(upstream, client, cut)

    def close(self) -> None:
        self.closed = True
        self.listener.close()


def test_cut_connections_and_a_killed_server_leave_one_run_and_one_job_each(tmp_path, slurm):
    """15 submissions through `gw`'s own client; every third answer is cut, and gw serve is killed
    (-9) and restarted after the fifth: each submission is one run with one Slurm job."""
    with gw_serve(tmp_path, prefix="idem") as serve:
        port = int(serve.url.rsplit(":", 1)[1])
        proxy = CuttingProxy(port)
        settings = ClientSettings(
            url=f"http://127.0.0.1:{proxy.port}", token=serve.tokens["tester"], timeout_s=30
        )
        tag = unique_tag()
        made: list[dict] = []
        try:
            _burst(serve, proxy, settings, tag, made, slurm)
        finally:
            proxy.close()
            # exactly this test's jobs: those of the runs it made (by run id in the job's comment)
            ids = {r["id"] for r in made}
            with contextlib.suppress(ApiError):
                direct = GatewayClient(ClientSettings(url=serve.url, token=serve.tokens["tester"]))
                ids |= {r["id"] for r in direct.runs(tag=tag, limit=100)["items"]}
            cancel_jobs(jobs_of_runs(ids))


def _burst(serve, proxy: CuttingProxy, settings: ClientSettings, tag: str, made: list[dict], slurm) -> None:
    """The burst of the killed-server test: 15 submissions, gw serve killed after the fifth; each
    run made is appended to ``made`` as it comes back."""
    for i in range(15):
        if i == 5:
            serve.process.kill9()
            threading.Timer(1.0, serve.process.start).start()
        # ~48 s of retries in all: a gw serve restarted on a loaded machine took over 15 s to listen
        client = GatewayClient(settings, retry_pauses_s=(0.2, 0.5, 1, 2, 4, 8, 16, 16))
        body = spec(tag, name=f"idem-{i}").model_dump(mode="json")
        try:
            made.append(client.submit(body))
        except ApiError as exc:  # pragma: no cover - shown if the retries ever run out
            pytest.fail(f"submission {i} failed after retries: {exc}")
    proxy.close()
    assert proxy.cut >= 4, proxy.cut  # the cuts really happened
    direct = GatewayClient(ClientSettings(url=serve.url, token=serve.tokens["tester"]))
    runs = direct.runs(tag=tag, limit=100)["items"]
    assert len(runs) == 15 and len({r["id"] for r in made}) == 15
    assert {r["id"] for r in runs} == {r["id"] for r in made}
    for run in runs:
        assert len(slurm.find_by_tag(f"gw-{run['id']}-1")) == 1, run["id"]


def _account_jobs(account: str) -> set[str]:
    """The jobs Slurm holds under ``account`` (only this test's gw serve submits under it)."""
    out = subprocess.run(["squeue", "-h", "-A", account, "-o", "%i"], capture_output=True, text=True).stdout
    return set(out.split())


def test_a_batch_whose_gw_serve_is_killed_mid_send_leaves_one_job_or_none_per_run(tmp_path, slurm):
    """24 runs in one batch through `gw`'s client; gw serve is killed (-9) as soon as Slurm holds a
    first job of it, and started again; the client sends the batch again under its key and gets
    the same 24 runs. Once the restarted gateway has reconciled them, each run has exactly one Slurm
    job, or none and is never_submitted; a third send makes nothing new (the single path's
    killed-server test, for a batch)."""
    grace = {"GATEWAY_SUBMIT_GRACE_S": "8", "GATEWAY_SLURM_SUBMIT_TIMEOUT_S": "5"}
    with gw_serve(
        tmp_path, prefix="idemb", settings={**grace, "GATEWAY_BATCH_SUBMIT_PARALLEL": "2"}
    ) as serve:
        assert serve.process is not None
        tag, batch_key = unique_tag(), key()
        items = [{"spec": spec(tag, name=f"idemb-{i}").model_dump(mode="json")} for i in range(24)]
        settings = ClientSettings(url=serve.url, token=serve.tokens["tester"], timeout_s=60)
        client = GatewayClient(settings, retry_pauses_s=(0.5, 1, 2, 4, 8, 16, 16))
        answers: list[dict] = []
        sender = threading.Thread(
            target=lambda: answers.append(client.submit_batch(items, idempotency_key=batch_key)), daemon=True
        )
        ids: set[str] = set()
        try:
            sender.start()
            deadline = time.monotonic() + 60
            while not _account_jobs(serve.account) and time.monotonic() < deadline:
                time.sleep(0.02)
            serve.process.kill9()
            serve.process.start()
            sender.join(timeout=120)
            assert answers, "the client's retries got an answer from the restarted gw serve"
            ids = {i["run"]["id"] for i in answers[0]["items"]}
            direct = GatewayClient(ClientSettings(url=serve.url, token=serve.tokens["tester"], timeout_s=60))

            def settled() -> list[dict]:
                runs = direct.runs(tag=tag, limit=100)["items"]
                return runs if runs and all(r["state"] != "submitting" for r in runs) else []

            runs = wait_for(settled, timeout_s=120, what="the restarted gw serve to reconcile the batch")
            assert {r["id"] for r in runs} == ids and len(ids) == 24
            jobs = {r["id"]: jobs_of_runs({r["id"]}) for r in runs}
            for run in runs:
                assert len(jobs[run["id"]]) <= 1, (run["id"], jobs[run["id"]])
                if jobs[run["id"]]:
                    assert run["state"] in ("queued", "held") and run["job_id"] == jobs[run["id"]][0], run
                else:
                    assert run["state"] == "never_submitted" and run["job_id"] is None, run
            # replayed as the first request left them, all or none notwithstanding: a run never
            # submitted comes back with its error, a submitted one with its job
            again = direct.submit_batch(items, idempotency_key=batch_key)
            assert {i["run"]["id"] for i in again["items"]} == ids and again["replayed"] == 24
            never = {r["id"] for r in runs if r["state"] == "never_submitted"}
            assert {i["run"]["id"] for i in again["items"] if i["error"]} == never
            assert all(i["status"] == 200 for i in again["items"] if i["run"]["id"] not in never)
            assert {r: jobs_of_runs({r}) for r in ids} == jobs, "the third send made no job"
        finally:
            cancel_jobs(jobs_of_runs(ids) if ids else sorted(_account_jobs(serve.account)))
