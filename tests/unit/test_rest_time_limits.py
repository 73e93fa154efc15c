"""Every slurmrestd call ends within its time limit against a real stuck server (tests/stuck_restd.py).

A daemon that takes the connection and never answers, on a unix socket and on TCP, and one that
trickles its answer a byte at a time (each read short, the answer never complete): the request
ends within its limit with SlurmUnavailable (sent, so never NotSent: its effect is unknown), naming
the daemon and the limit. Through ``SlurmRest`` on a site-run daemon the same holds for a query.
The scheduler's stop waits its grace for a run that hangs, then returns, naming the job.
"""

from __future__ import annotations

import threading
import time

import pytest
from apscheduler.schedulers.background import BackgroundScheduler

from gateway.adapters.runner import LocalRunner
from gateway.adapters.slurm.cli import SlurmCLI
from gateway.adapters.slurm.rest import SlurmRest
from gateway.adapters.slurm.rest_http import NotSent, RestConnection
from gateway.adapters.slurm.restd_site import SiteRestd
from gateway.core.site.clusters import ClusterRestd
from gateway.errors import SlurmUnavailable
from gateway.scheduler import DaemonThreads, Periodic
from tests.stuck_restd import stuck_server


def _connection(address: object) -> RestConnection:
    if isinstance(address, tuple):
        return RestConnection(tcp=address, connect_timeout_s=1)
    return RestConnection(address, connect_timeout_s=1)  # type: ignore[arg-type]


@pytest.mark.parametrize("where", ["unix", "tcp"])
@pytest.mark.parametrize("trickle_s", [None, 0.05], ids=["silent", "trickling"])
def test_a_stuck_daemon_is_unavailable_within_the_limit(tmp_path, where, trickle_s):
    unix = tmp_path / "stuck.sock" if where == "unix" else None
    with stuck_server(unix, trickle_s=trickle_s) as server:
        connection = _connection(server.address)
        started = time.monotonic()
        with pytest.raises(SlurmUnavailable) as raised:
            connection.request("GET", "/slurm/v0.0.38/jobs", timeout_s=0.5)
        took = time.monotonic() - started
        connection.close()
    assert server.requests, "the request never reached the stuck server"
    assert not isinstance(raised.value, NotSent)  # it was sent: its effect is unknown
    assert 0.4 <= took < 3, f"the call took {took:.2f} s against a limit of 0.5 s"
    shown = f"the daemon's socket {unix}" if unix else server.url
    assert f"slurmrestd GET /slurm/v0.0.38/jobs: {shown} did not answer within 0.5 s" in str(raised.value)


def test_a_query_to_a_stuck_site_daemon_is_slurm_unavailable_naming_it(tmp_path):
    key = tmp_path / "jwt.key"
    key.write_bytes(b"k" * 32)
    with stuck_server(tmp_path / "site.sock") as server:
        site = SiteRestd(ClusterRestd(server.url, str(key)), cluster="stuck", connect_timeout_s=1)
        rest = SlurmRest(site, SlurmCLI(LocalRunner()), query_timeout_s=0.5)
        started = time.monotonic()
        with pytest.raises(SlurmUnavailable, match="did not answer within 0.5 s") as raised:
            rest.status(["4242"])
        took = time.monotonic() - started
        rest.close()
    assert took < 3, f"the query took {took:.2f} s against a limit of 0.5 s"
    assert str(tmp_path / "site.sock") in str(raised.value)


def test_a_full_backlog_is_not_sent_at_once(tmp_path):
    """A listener that never accepts, its backlog full: NotSent, without waiting (Linux refuses a unix
    connect to a full backlog at once, EAGAIN, on a socket with a timeout; a TCP connect would wait
    ``connect_timeout_s``)."""
    import socket

    path = tmp_path / "full.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(0)
    fillers = []
    try:
        for _ in range(8):  # fill the backlog: later connects block
            filler = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            filler.setblocking(False)
            try:
                filler.connect(str(path))
            except BlockingIOError:
                filler.close()
                break
            fillers.append(filler)
        started = time.monotonic()
        with pytest.raises(NotSent, match=rf"the daemon's socket {path} takes no connection"):
            RestConnection(path, connect_timeout_s=0.3).request("GET", "/ping", timeout_s=5)
        assert time.monotonic() - started < 1
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


def test_the_scheduler_stops_within_its_grace_while_a_run_hangs():
    executor = DaemonThreads()
    scheduler = BackgroundScheduler(executors={"default": executor}, job_defaults={"max_instances": 1})
    entered, release = threading.Event(), threading.Event()

    def hangs() -> None:
        entered.set()
        release.wait(60)

    scheduler.add_job(hangs, "interval", seconds=0.1, id="refresh")
    scheduler.add_job(lambda: None, "interval", seconds=0.1, id="quick")
    scheduler.start()
    try:
        assert entered.wait(10), "the job never started"
        started = time.monotonic()
        still = Periodic(scheduler, executor).stop(0.5)
        took = time.monotonic() - started
    finally:
        release.set()
    assert still == ["refresh"]
    assert 0.4 <= took < 3, f"stop took {took:.2f} s with a grace of 0.5 s"
    executor.shutdown(wait=True)  # APScheduler's own stop: until the released run has ended
    assert executor.wait(0) == []
