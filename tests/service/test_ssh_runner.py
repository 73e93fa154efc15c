"""The SSH runner against a real sshd on loopback: logins as each user, quoting, pooling, failures.

The server is Debian's OpenSSH (``tests/sshd.py``) with throwaway keys; the
users are real OS users (root, gwtalice, gwtbob, and gwtsvc, the service
account of the sudo mode). Nothing is faked: a refused host key is refused by
paramiko's real handshake, a drop is a SIGKILL of the real server.
"""

from __future__ import annotations

import pwd
import subprocess
import threading
import time
from pathlib import Path

import pytest

from gateway.adapters.runhost_ssh import SshRunHost
from gateway.adapters.runner_ssh import SshRunner
from gateway.adapters.slurm import SlurmCLI
from gateway.adapters.ssh import SshPool
from gateway.adapters.ssh_login import SshTarget
from gateway.errors import CommandError, CommandTimeout, RunHostError, SlurmUnavailable
from tests.conftest import JOB_ROOT, unique_tag, wait_for_accounting
from tests.service.conftest import ensure_os_users
from tests.sshd import SshServer, ensure_home, keygen

SERVICE = "gwtsvc"  # the sudo mode's service account: may sudo to gwtalice only
SUDOERS = Path("/etc/sudoers.d/gwt-ssh-tests")


def ensure_service_user() -> None:
    if subprocess.run(["id", "-u", SERVICE], capture_output=True, check=False).returncode != 0:
        subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/bash", SERVICE], check=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    ensure_os_users()
    ensure_service_user()
    for user in ("gwtalice", "gwtbob", SERVICE):
        ensure_home(user)
    srv = SshServer(JOB_ROOT / f"sshd-{time.monotonic_ns()}", ["root", "gwtalice", "gwtbob", SERVICE])
    srv.start()
    SUDOERS.write_text(f"{SERVICE} ALL=(gwtalice) NOPASSWD: ALL\n")
    SUDOERS.chmod(0o440)
    yield srv
    SUDOERS.unlink(missing_ok=True)
    srv.stop()


def make_runner(
    server: SshServer, *, login: str = "per_user_key", service: str = "root", **pool
) -> SshRunner:
    target = SshTarget("127.0.0.1", server.port, server.known_hosts, connect_timeout_s=5, keepalive_s=2)
    return SshRunner(
        SshPool(target, **pool),
        login_mode=login,  # type: ignore[arg-type]
        service_user=service,
        service_key=server.keys / service,
        user_keys=f"{server.keys}/{{user}}",
    )


@pytest.fixture
def runner(server):
    built = make_runner(server)
    yield built
    built.close()


def test_commands_run_as_the_mapped_user_with_their_own_key(runner):
    for user in ("gwtalice", "gwtbob", "root"):
        assert runner.run(["id", "-un"], as_user=user).stdout.strip() == user
    assert runner.run(["id", "-un"]).stdout.strip() == "root"  # no user: the service login


def test_hostile_words_reach_the_program_as_they_are_and_nothing_runs(runner, tmp_path):
    marker = tmp_path / "pwned"
    hostile = [
        f"a'; touch {marker}; echo '",
        f"$(touch {marker})",
        f"`touch {marker}`",
        f"x\ntouch {marker}",
        "--help",
        "* ? [a] ~ {a,b} \\ \" '",
        "ünïcødé ✓ 🚀",
        "",
    ]
    result = runner.run(["printf", "%s\\0", *hostile], as_user="gwtalice")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\0")[:-1] == hostile
    env = {"GW_VALUE": f"'; touch {marker}; '"}
    shown = runner.run(["printenv", "GW_VALUE"], env=env, as_user="gwtbob")
    assert shown.stdout == env["GW_VALUE"] + "\n"
    assert not marker.exists()


@pytest.mark.parametrize(
    ("argv", "env", "user"),
    [
        (["id"], {"A;touch /tmp/x": "1"}, None),  # a variable name that is not one
        (["A=1", "id"], None, None),  # env would read the program as a variable
        (["id", "a\0b"], None, None),
        (["id"], None, "alice; touch /tmp/x"),
        (["id"], None, "../../etc/passwd"),
        (["id"], None, "Root"),
    ],
)
def test_malformed_names_are_refused_before_anything_is_sent(runner, argv, env, user):
    with pytest.raises(CommandError):
        runner.run(argv, env=env, as_user=user)


def test_stdin_and_large_output_travel_whole(runner):
    script = "".join(f"line {i} {'x' * 100}\n" for i in range(20_000))  # about 2 MiB each way
    result = runner.run(["cat"], stdin=script, as_user="gwtalice", timeout_s=60)
    assert result.returncode == 0 and result.stdout == script
    noisy = runner.run(["sh", "-c", "echo out; echo err >&2; exit 3"], as_user="gwtalice")
    assert (noisy.returncode, noisy.stdout, noisy.stderr) == (3, "out\n", "err\n")


def test_a_program_that_exits_before_reading_its_stdin_is_no_error(runner):
    result = runner.run(["sh", "-c", "exit 4"], stdin="x" * (8 << 20), as_user="gwtalice", timeout_s=30)
    assert result.returncode == 4


def test_a_slow_command_times_out_as_unknown(runner):
    started = time.monotonic()
    with pytest.raises(CommandTimeout, match="within 1 s"):
        runner.run(["sleep", "30"], as_user="gwtalice", timeout_s=1)
    assert time.monotonic() - started < 5
    assert runner.run(["true"], as_user="gwtalice").returncode == 0  # the connection is still usable


def test_connections_are_pooled_and_reused(server):
    runner = make_runner(server)
    try:
        for _ in range(20):
            runner.run(["true"], as_user="gwtalice")
        assert runner.pool.logins() == ["gwtalice"]
        assert len(runner.pool._connections) == 1  # twenty commands, one handshake
    finally:
        runner.close()


def test_the_pool_is_bounded_and_closes_an_idle_login_to_make_room(server):
    runner = make_runner(server, max_connections=2)
    try:
        for user in ("gwtalice", "gwtbob", "root", "gwtalice"):
            assert runner.run(["id", "-un"], as_user=user).stdout.strip() == user
            assert len(runner.pool._connections) <= 2
    finally:
        runner.close()


def test_an_unknown_host_key_is_refused_with_its_fingerprint(server, tmp_path):
    (tmp_path / "known_hosts").write_text("")
    target = SshTarget("127.0.0.1", server.port, tmp_path / "known_hosts", connect_timeout_s=5)
    runner = SshRunner(
        SshPool(target), login_mode="per_user_key", service_user="root", service_key=server.keys / "root"
    )
    printed = subprocess.run(
        ["ssh-keygen", "-l", "-f", str(server.dir / "host_key.pub")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[1]
    with pytest.raises(CommandError, match="not in") as refused:
        runner.run(["true"])
    assert printed in str(refused.value) and printed.startswith("SHA256:")


def test_a_changed_host_key_is_refused_naming_both_keys(server, tmp_path):
    keygen(tmp_path / "other")
    other = (tmp_path / "other.pub").read_text().split()
    (tmp_path / "known_hosts").write_text(f"[127.0.0.1]:{server.port} {other[0]} {other[1]}\n")
    target = SshTarget("127.0.0.1", server.port, tmp_path / "known_hosts", connect_timeout_s=5)
    runner = SshRunner(
        SshPool(target), login_mode="per_user_key", service_user="root", service_key=server.keys / "root"
    )
    with pytest.raises(CommandError, match="CHANGED") as refused:
        runner.run(["true"])
    expected = subprocess.run(
        ["ssh-keygen", "-l", "-f", str(tmp_path / "other.pub")], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    assert expected in str(refused.value)


def test_a_refused_login_and_an_open_key_file_are_errors_that_say_so(server, tmp_path):
    runner = make_runner(server)
    try:
        stranger = tmp_path / "keys"
        stranger.mkdir()
        keygen(stranger / "gwtalice")
        (stranger / "gwtalice").chmod(0o600)
        runner.user_keys = f"{stranger}/{{user}}"
        with pytest.raises(CommandError, match="refused the login of gwtalice"):
            runner.run(["true"], as_user="gwtalice")
        (stranger / "gwtalice").chmod(0o644)
        with pytest.raises(CommandError, match="readable by others"):
            runner.run(["true"], as_user="gwtalice")
        with pytest.raises(CommandError, match="cannot read the SSH key file"):
            runner.run(["true"], as_user="gwtnobody")
    finally:
        runner.close()


def test_sudo_mode_runs_as_the_user_through_the_service_account(server):
    runner = make_runner(server, login="sudo", service=SERVICE)
    try:
        assert runner.run(["id", "-un"], as_user="gwtalice").stdout.strip() == "gwtalice"
        assert runner.run(["id", "-un"]).stdout.strip() == SERVICE
        assert runner.pool.logins() == [SERVICE]  # one login for every user
        allowed, refused = runner.check_login("gwtalice"), runner.check_login("gwtbob")
        assert allowed.ok and "sudo" in allowed.detail
        assert not refused.ok and "password is required" in refused.detail  # no sudoers rule for bob
    finally:
        runner.close()


def test_a_dropped_server_is_an_error_and_the_pool_reconnects_when_it_is_back(server):
    runner = make_runner(server)
    try:
        assert runner.run(["true"], as_user="gwtalice").returncode == 0
        server.kill()
        with pytest.raises(CommandError) as down:
            runner.run(["true"], as_user="gwtalice")
        assert not isinstance(down.value, CommandTimeout)  # nothing was started: safe to say so
        server.start()
        assert runner.run(["id", "-un"], as_user="gwtalice").stdout.strip() == "gwtalice"
    finally:
        runner.close()


def test_a_drop_while_a_command_runs_means_unknown(server):
    runner = make_runner(server)
    try:
        runner.run(["true"], as_user="gwtalice")
        killer = threading.Timer(0.5, server.kill)
        killer.start()
        with pytest.raises(CommandTimeout, match="unknown"):
            runner.run(["sleep", "20"], as_user="gwtalice", timeout_s=15)
    finally:
        killer.join()
        runner.close()
        server.start()


def test_slurm_commands_over_ssh_submit_as_the_user_and_time_out_as_unavailable(server, run_dir):
    runner = make_runner(server)
    try:
        slurm = SlurmCLI(runner, query_timeout_s=10, submit_timeout_s=20)
        directory = run_dir("ssh")
        tag = unique_tag("gwssh")
        script = (
            f"#!/bin/bash\n#SBATCH --time=1\n#SBATCH --mem=16M\n#SBATCH --output={directory}/out-%j.log\n"
            "id -un\n"
        )
        job = slurm.prepare_submit(tag=tag, as_user="gwtalice").send(script)
        (record,) = wait_for_accounting(slurm, job, tag=tag)
        assert record.user == "gwtalice" and record.slurm_state == "COMPLETED"
        assert Path(f"{directory}/out-{job}.log").read_text().strip() == "gwtalice"
        server.kill()
        with pytest.raises(SlurmUnavailable):
            slurm.status([job])
    finally:
        runner.close()
        if server.proc is None:
            server.start()


def test_the_run_host_works_through_sudo_too(server):
    runner = make_runner(server, login="sudo", service=SERVICE)
    try:
        host = SshRunHost(runner, timeout_s=20)
        place = JOB_ROOT / f"sudo-{time.monotonic_ns()}"
        place.mkdir(parents=True)
        place.chmod(0o1777)
        run_dir = place / "r-sudo"
        host.make_run_dir(str(run_dir), owner="gwtalice")
        alice = pwd.getpwnam("gwtalice")
        assert run_dir.stat().st_uid == alice.pw_uid and run_dir.stat().st_mode & 0o777 == 0o700
        host.write_file(str(run_dir / "x.txt"), b"hi", as_user="gwtalice")
        assert host.read_file(str(run_dir / "x.txt"), as_user="gwtalice", max_bytes=10).data == b"hi"
        assert host.account("gwtalice").uid == alice.pw_uid and host.account("gwt-nobody") is None
        with pytest.raises(RunHostError, match="password is required"):  # no sudoers rule for bob
            host.read_file(str(run_dir / "x.txt"), as_user="gwtbob", max_bytes=10)
    finally:
        runner.close()


def test_a_revoked_host_key_line_is_a_clean_refusal_naming_the_file_and_line(server, tmp_path):
    """Issue 26 item 8: paramiko raised InvalidHostKey out of connect() (and left the socket open) on an
    @revoked line; now it is a CommandError naming the file and line, before any login."""
    good = (server.dir / "host_key.pub").read_text().split()
    known = tmp_path / "known_hosts"
    known.write_text(
        f"# the submit host\n[127.0.0.1]:{server.port} {good[0]} {good[1]}\n"
        f"@revoked [127.0.0.1]:{server.port} {good[0]} {good[1]}\n"
    )
    target = SshTarget("127.0.0.1", server.port, known, connect_timeout_s=5)
    runner = SshRunner(
        SshPool(target), login_mode="per_user_key", service_user="root", service_key=server.keys / "root"
    )
    with pytest.raises(CommandError, match="line 3 is a @revoked line") as refused:
        runner.run(["true"])
    assert str(known) in str(refused.value)
