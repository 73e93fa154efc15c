"""The slurmrestd backend's own guarantees, on the real cluster with real daemons.

Who can reach a daemon (only the gateway), what a dead or hung daemon means
(SlurmUnavailable, never a rejected or failed job), supervision (restart, idle
stop, a bound on how many run), and that a script's #SBATCH lines queue the
same job through slurmrestd as through sbatch.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gateway.adapters.runner import LocalRunner
from gateway.adapters.slurm.cli import SlurmCLI
from gateway.core.slurm.parse import parse_kv_line
from gateway.errors import SlurmUnavailable, SubmitRejected
from tests.conftest import JOB_ROOT, unique_tag, wait_for
from tests.slurm.rest_world import (
    REST_ACCOUNT,
    REST_USER,
    ensure_rest_users,
    remove,
    rest_backend,
    socket_dir,
)

pytestmark = pytest.mark.slurm

HELD = (
    f"#!/bin/bash\n#SBATCH --account={REST_ACCOUNT}\n#SBATCH --time=1\n#SBATCH --mem=16M\n#SBATCH --hold\n"
    "#SBATCH --output=/dev/null\ntrue\n"
)


@pytest.fixture
def rest():
    ensure_rest_users()
    directory = socket_dir()
    backend = rest_backend(directory, start_timeout_s=10)
    yield backend
    backend.close()
    remove(directory)


def show_job(job_id: str) -> dict[str, str]:
    out = subprocess.run(["scontrol", "show", "job", job_id, "--oneliner"], capture_output=True, text=True)
    return parse_kv_line(out.stdout.strip())


def test_submission_runs_as_the_mapped_user_and_no_other_user_can_reach_the_socket(rest):
    job = rest.prepare_submit(tag=unique_tag(), as_user=REST_USER).send(HELD)
    try:
        assert show_job(job)["UserId"].startswith(f"{REST_USER}(")
        pid = rest.daemons.running()[REST_USER]
        assert Path(f"/proc/{pid}").stat().st_uid == pwd.getpwnam(REST_USER).pw_uid
        sock = rest.daemons.socket_path(REST_USER)
        assert sock.exists() and (rest.daemons.socket_dir.stat().st_mode & 0o777) == 0o700
        probe = f"import socket; socket.socket(socket.AF_UNIX).connect({str(sock)!r}); print('connected')"
        for other in ("gwtbob", "nobody"):
            tried = subprocess.run(
                ["runuser", "-u", other, "--", "python3", "-c", probe], capture_output=True, text=True
            )
            assert tried.returncode != 0 and "connected" not in tried.stdout, tried
            assert "PermissionError" in tried.stderr, tried.stderr
    finally:
        rest.cancel(job)


def test_root_is_refused_before_anything_is_sent(rest):
    with pytest.raises(SubmitRejected, match="will not run as root"):
        rest.prepare_submit(tag=unique_tag()).send(HELD)
    with pytest.raises(SubmitRejected, match="no OS user"):
        rest.prepare_submit(tag=unique_tag(), as_user="gwt-nosuchuser").send(HELD)


def test_a_dead_daemon_is_started_again_on_its_next_use(rest):
    first = rest.prepare_submit(tag=unique_tag(), as_user=REST_USER).send(HELD)
    pid = rest.daemons.running()[REST_USER]
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    second = rest.prepare_submit(tag=unique_tag(), as_user=REST_USER).send(HELD)
    try:
        assert rest.daemons.running()[REST_USER] != pid
        assert {s.job_id for s in rest.status([first, second])} == {first, second}
    finally:
        rest.cancel(first)
        rest.cancel(second)


def test_a_hung_daemon_is_slurm_unavailable_never_a_rejection(rest):
    tag = unique_tag()
    job = rest.prepare_submit(tag=tag, as_user=REST_USER).send(HELD)
    rest.status([job])  # the query daemon is up
    rest.submit_timeout_s = rest.query_timeout_s = 2.0
    hung = [rest.daemons.running()[REST_USER], rest.daemons.running()[rest.query_user]]
    for pid in hung:
        os.kill(pid, signal.SIGSTOP)
    in_flight = unique_tag()
    try:
        started = time.monotonic()
        with pytest.raises(SlurmUnavailable) as info:
            rest.prepare_submit(tag=in_flight, as_user=REST_USER).send(HELD)
        assert not isinstance(info.value, SubmitRejected)
        with pytest.raises(SlurmUnavailable, match="did not answer"):
            rest.status([job])
        assert time.monotonic() - started < 10
    finally:
        for pid in hung:
            os.kill(pid, signal.SIGCONT)
        rest.submit_timeout_s = rest.query_timeout_s = 10
    assert rest.find_by_tag(tag) == [job]
    rest.cancel(job)
    # The unanswered submission reached the daemon: once it wakes, the job exists, and is found by
    # its tag, as reconciliation expects of a submission whose outcome was unknown.
    late = wait_for(lambda: rest.find_by_tag(in_flight), timeout_s=20, what="the in-flight submission")
    for job_id in late:
        rest.cancel(job_id)
    assert len(late) == 1


def test_a_daemon_that_cannot_start_is_slurm_unavailable(tmp_path):
    ensure_rest_users()
    broken = rest_backend(tmp_path / "socks", slurmrestd="/nonexistent/slurmrestd")
    with pytest.raises(SlurmUnavailable, match="cannot start slurmrestd"):
        broken.prepare_submit(tag=unique_tag(), as_user=REST_USER).send(HELD)
    with pytest.raises(SlurmUnavailable):
        broken.partitions()


def test_daemons_are_bounded_and_stopped_when_idle(rest):
    rest.daemons.max_daemons = 2
    rest.partitions()  # the query user's daemon
    jobs = [rest.prepare_submit(tag=unique_tag(), as_user=REST_USER).send(HELD)]
    assert set(rest.daemons.running()) == {rest.query_user, REST_USER}
    try:
        with pytest.raises(SubmitRejected, match="Invalid account"):  # gwtbob is not in gwtrest
            rest.prepare_submit(tag=unique_tag(), as_user="gwtbob").send(HELD)
        assert len(rest.daemons.running()) == 2 and "gwtbob" in rest.daemons.running()
        pids = rest.daemons.running()
        rest.daemons.idle_stop_s = 0.05
        time.sleep(0.1)
        assert rest.daemons.stop_idle() == 2
        assert rest.daemons.running() == {}
        for pid in pids.values():  # ended (and reaped)
            assert not Path(f"/proc/{pid}").exists()
    finally:
        for job in jobs:
            rest.cancel(job)


SAME_JOB = f"""#!/bin/bash
#SBATCH --job-name="same job"
#SBATCH --partition=cpu
#SBATCH --account={REST_ACCOUNT}
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=2
#SBATCH --mem=96M
#SBATCH --time=1:30
#SBATCH --exclude=c2
#SBATCH --output=/dev/null
#SBATCH --error=/dev/null
#SBATCH --no-requeue
#SBATCH --signal=USR1@30
#SBATCH --hold
true
"""
COMPARED = (
    "JobName", "Partition", "Account", "NumNodes", "NumCPUs", "MinMemoryNode", "TimeLimit", "ExcNodeList",
    "Requeue", "Priority", "StdOut", "StdErr", "Comment", "UserId", "CPUs/Task", "ReqTRES",
)  # fmt: skip


def test_the_same_script_queues_the_same_job_through_both_backends(rest):
    tag = unique_tag()
    cli = SlurmCLI(LocalRunner())
    through_rest = rest.prepare_submit(tag=tag, as_user=REST_USER).send(SAME_JOB)
    through_cli = cli.prepare_submit(tag=tag, as_user=REST_USER).send(SAME_JOB)
    try:
        a, b = show_job(through_rest), show_job(through_cli)
        assert {k: a.get(k) for k in COMPARED} == {k: b.get(k) for k in COMPARED}
        assert a["JobName"] == "same job" and a["ExcNodeList"] == "c2" and a["TimeLimit"] == "00:02:00"
    finally:
        rest.cancel(through_rest)
        rest.cancel(through_cli)


def test_a_directive_slurmrestd_cannot_carry_is_refused_by_name(rest):
    before = rest.daemons.starts
    with pytest.raises(SubmitRejected, match=r"#SBATCH line 2: --exclusive .*CLI backend"):
        rest.prepare_submit(tag=unique_tag(), as_user=REST_USER).send(
            "#!/bin/bash\n#SBATCH --exclusive\ntrue\n"
        )
    with pytest.raises(SubmitRejected, match="B: or R: prefix"):
        rest.prepare_submit(tag=unique_tag(), as_user=REST_USER).send(
            "#!/bin/bash\n#SBATCH --signal=B:USR1@60\ntrue\n"
        )
    assert rest.daemons.starts == before  # refused before any daemon was asked


@pytest.fixture
def unreachable_cluster(monkeypatch):
    """A copy of slurm.conf whose controller and accounting ports nothing listens on."""
    directory = JOB_ROOT / f"conf-{uuid.uuid4().hex[:8]}"
    directory.mkdir(parents=True)
    directory.chmod(0o755)
    for name in ("cgroup.conf", "gres.conf", "plugstack.conf"):
        shutil.copy(f"/etc/slurm/{name}", directory / name)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    text = Path("/etc/slurm/slurm.conf").read_text()
    for key in ("SlurmctldPort", "AccountingStoragePort"):
        text = re.sub(rf"^{key}=\d+", f"{key}={port}", text, flags=re.MULTILINE)
    (directory / "slurm.conf").write_text(text)
    (directory / "slurm.conf").chmod(0o644)
    monkeypatch.setenv("SLURM_CONF", str(directory / "slurm.conf"))
    yield
    shutil.rmtree(directory, ignore_errors=True)


def test_an_unreachable_controller_or_database_is_slurm_unavailable(unreachable_cluster, rest):
    rest.query_timeout_s = rest.submit_timeout_s = 20
    since = datetime.now(UTC) - timedelta(hours=1)
    calls = {
        "status": lambda: rest.status(["1"]),  # an HTTP 500, errno -1 (each controller call waits ~9 s)
        "accounting": lambda: rest.accounting(["1"]),  # "Unable to connect to database"
        "usage": lambda: rest.usage([REST_ACCOUNT], since=since),
        "cancel": lambda: rest.cancel("1"),  # "Unable to contact slurm controller"
        "submit": lambda: rest.prepare_submit(tag=unique_tag(), as_user=REST_USER).send(HELD),
    }
    for name, call in calls.items():
        with pytest.raises(SlurmUnavailable) as info:
            call()
        assert not isinstance(info.value, SubmitRejected), name


def test_concurrent_first_uses_start_one_daemon_and_all_submit(rest):
    from concurrent.futures import ThreadPoolExecutor

    rest.partitions()
    before = rest.daemons.starts
    with ThreadPoolExecutor(8) as pool:
        jobs = list(
            pool.map(lambda _: rest.prepare_submit(tag=unique_tag(), as_user=REST_USER).send(HELD), range(8))
        )
    try:
        assert rest.daemons.starts == before + 1  # gwtalice's daemon, once
        assert len(set(jobs)) == 8 and {s.user for s in rest.status(jobs)} == {REST_USER}
    finally:
        for job in jobs:
            rest.cancel(job)
