"""A real OpenSSH server on a free loopback port, with throwaway host and user keys, for tests.

``SshServer`` writes a host key, one private key per user (the gateway's
copies, mode 0600) and an authorized_keys file per user (root included),
an sshd_config that listens on 127.0.0.1 only and allows public keys only,
and runs Debian's ``/usr/sbin/sshd -D``. ``kill()`` ends the listener and
every sshd process it forked (by pid), as a crash of the host would; ``start()``
brings it back on the same port with the same host key.

``scripts/sshd-ready`` (run by ``make test``) installs openssh-server.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

SSHD = Path("/usr/sbin/sshd")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def keygen(path: Path, kind: str = "ed25519") -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", path.name, "-f", str(path)], check=True)


class SshServer:
    def __init__(self, directory: Path, users: list[str]) -> None:
        if not SSHD.exists():
            raise RuntimeError("no /usr/sbin/sshd: run scripts/sshd-ready (make test does)")
        self.dir = directory
        self.port = free_port()
        self.users = users
        self.keys = directory / "keys"  # the gateway's private keys, one per user: keys/USER
        self.known_hosts = directory / "known_hosts"
        self.proc: subprocess.Popen | None = None
        directory.mkdir(parents=True, exist_ok=True)
        directory.chmod(0o755)
        (directory / "authorized").mkdir(mode=0o755, exist_ok=True)
        self.keys.mkdir(mode=0o700, exist_ok=True)
        keygen(directory / "host_key")
        for user in users:
            self.add_user(user)
        public = (directory / "host_key.pub").read_text().split()
        self.host_key_line = f"[127.0.0.1]:{self.port} {public[0]} {public[1]}\n"
        self.known_hosts.write_text(self.host_key_line)
        (directory / "sshd_config").write_text(
            f"""Port {self.port}
ListenAddress 127.0.0.1
HostKey {directory}/host_key
PidFile {directory}/sshd.pid
AuthorizedKeysFile {directory}/authorized/%u
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM yes
# the test files live under /tmp (mode 1777), which StrictModes would refuse
StrictModes no
MaxSessions 10
MaxStartups 100:30:200
PrintMotd no
LogLevel VERBOSE
Subsystem sftp internal-sftp
"""
        )

    def add_user(self, user: str) -> Path:
        """A new key pair for ``user``: the private half for the gateway, the public half authorized."""
        key = self.keys / user
        if not key.exists():
            keygen(key)
            key.chmod(0o600)
        authorized = self.dir / "authorized" / user
        authorized.write_text((self.keys / f"{user}.pub").read_text())
        authorized.chmod(0o644)
        return key

    def start(self, timeout_s: float = 20) -> None:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
        log = open(self.dir / "sshd.log", "a")  # noqa: SIM115 - the child keeps it
        self.proc = subprocess.Popen(
            [str(SSHD), "-D", "-e", "-f", str(self.dir / "sshd_config")], stdout=log, stderr=log
        )
        log.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                    if sock.recv(64).startswith(b"SSH-"):
                        return
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited: {(self.dir / 'sshd.log').read_text()[-2000:]}")
            time.sleep(0.1)
        raise RuntimeError(
            f"sshd did not listen on {self.port}: {(self.dir / 'sshd.log').read_text()[-2000:]}"
        )

    def kill(self) -> None:
        """SIGKILL the listener and every process it forked (connections, their sessions), by pid."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        for pid in [*descendants(proc.pid), proc.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def stop(self) -> None:
        self.kill()

    def ssh(self, user: str, command: str) -> subprocess.CompletedProcess:
        """OpenSSH's own client, as ``user``: what an operator would try by hand."""
        return subprocess.run(
            [
                "ssh", "-p", str(self.port), "-i", str(self.keys / user), "-o", "BatchMode=yes",
                "-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "StrictHostKeyChecking=yes",
                f"{user}@127.0.0.1", command,
            ],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip

    def settings(self, *, login: str = "per_user_key", service_user: str = "root") -> dict[str, str]:
        """The GATEWAY_* variables that point a gateway at this server."""
        return {
            "GATEWAY_SUBMIT_HOST": "127.0.0.1",
            "GATEWAY_SSH_PORT": str(self.port),
            "GATEWAY_SSH_KNOWN_HOSTS": str(self.known_hosts),
            "GATEWAY_SSH_LOGIN": login,
            "GATEWAY_SSH_SERVICE_USER": service_user,
            "GATEWAY_SSH_SERVICE_KEY": str(self.keys / service_user),
            "GATEWAY_SSH_USER_KEYS": f"{self.keys}/{{user}}",
            "GATEWAY_SSH_CONNECT_TIMEOUT_S": "5",
        }


def ensure_home(user: str) -> None:
    """A home directory for a test OS user (made without one), as a login user has: else sshd says
    "Could not chdir to home directory" on the stderr of every command."""
    import pwd

    entry = pwd.getpwnam(user)
    home = Path(entry.pw_dir)
    if not home.exists():
        home.mkdir(mode=0o700, parents=True)
        os.chown(home, entry.pw_uid, entry.pw_gid)


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (children first found by their parent pid in /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found
