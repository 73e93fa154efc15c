"""One long-lived slurmrestd per OS user, started and supervised by the gateway.

slurmrestd's ``rest_auth/local`` mode acts as the user it runs as (``-u``),
so whoever can connect to a user's socket acts as that user. The sockets
therefore live in ``socket_dir`` (mode 0700, the gateway's own): only the
gateway can enter it. Each gateway process keeps its daemons in a directory
of its own, ``socket_dir/gw-PID`` (``gw serve --workers N`` runs N processes,
each with its daemons: none stops another's), and each user's daemon binds
its socket in its own sub-directory of that (owned by that user, 0700) by a
path relative to its working directory, because slurmrestd 22.05 binds after
it has dropped to the user, who cannot traverse ``socket_dir``. A process's
first start stops the daemons that processes no longer running left behind.

Supervision: a daemon that died is started again on its next use; one unused
for ``idle_stop_s`` is stopped; at most ``max_daemons`` run (the least
recently used one makes room). slurmrestd refuses to run as root.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket as socketlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from gateway.adapters.runner import Daemon, start_daemon
from gateway.adapters.slurm.rest_http import RestConnection
from gateway.core import names
from gateway.errors import CommandError, SlurmUnavailable, SubmitRejected

PLUGINS = "openapi/v0.0.38,openapi/dbv0.0.38"
SOCKET_NAME = "slurmrestd.sock"


@dataclass
class _Daemon:
    user: str
    proc: Daemon  # started by the runner (gateway.adapters.runner.start_daemon)
    connection: RestConnection
    last_used: float = field(default_factory=time.monotonic)


class RestDaemons:
    """The running slurmrestd daemons, one per OS user, each reached through a ``RestConnection``."""

    def __init__(
        self,
        socket_dir: Path,
        *,
        slurmrestd: str = "slurmrestd",
        max_daemons: int = 32,
        idle_stop_s: float = 900.0,
        start_timeout_s: float = 10.0,
        connect_timeout_s: float = 2.0,
        slurm_conf: str | None = None,
    ) -> None:
        self.socket_dir = socket_dir
        self.slurm_conf = slurm_conf  # a cluster's slurm.conf (docs/clusters.md); None: the gateway's
        self.slurmrestd = slurmrestd
        self.max_daemons = max_daemons
        self.idle_stop_s = idle_stop_s
        self.start_timeout_s = start_timeout_s
        self.connect_timeout_s = connect_timeout_s  # each request's connect (rest_http.RestConnection)
        self.starts = 0  # daemons started, restarts included (tests and metrics read it)
        self._daemons: dict[str, _Daemon] = {}
        self._starting: dict[str, threading.Lock] = {}  # per user: one start at a time
        self._lock = threading.Lock()  # guards the two dicts; never held while a process starts or stops
        self._swept = False  # the daemons of gateway processes gone have been stopped

    def process_dir(self) -> Path:
        """This gateway process's directory of daemons, below ``socket_dir``."""
        return self.socket_dir / f"gw-{os.getpid()}"

    def socket_path(self, user: str) -> Path:
        """Where ``user``'s daemon of this process listens (whether or not it runs now)."""
        return self.process_dir() / user / SOCKET_NAME

    def connection(self, user: str) -> RestConnection:
        """The connection to ``user``'s daemon, started (or restarted, if it died) first.

        Only the user's own start waits on a start: others' requests go on meanwhile.
        Raises SubmitRejected for a user slurmrestd cannot run as (none on this host, root),
        SlurmUnavailable when the daemon does not come up within ``start_timeout_s``.
        """
        with self._lock:
            now = time.monotonic()
            retired = self._take_idle(now, keep=user)
            daemon = self._daemons.get(user)
            if daemon is not None and daemon.proc.exit_status() is None:
                daemon.last_used = now
                _retire(retired)
                return daemon.connection
            starting = self._starting.setdefault(user, threading.Lock())
        _retire(retired)
        with starting:  # one start per user at a time; a second caller finds it running
            with self._lock:
                daemon = self._daemons.get(user)
                if daemon is not None and daemon.proc.exit_status() is None:
                    daemon.last_used = time.monotonic()
                    return daemon.connection
                retired = [d for d in [self._daemons.pop(user, None)] if d is not None]
                while len(self._daemons) >= self.max_daemons:  # the least recently used makes room
                    oldest = min(self._daemons.values(), key=lambda d: d.last_used)
                    retired.append(self._daemons.pop(oldest.user))
            _retire(retired)
            daemon = self._start(user)
            with self._lock:
                self._daemons[user] = daemon
            return daemon.connection

    def restart(self, user: str) -> RestConnection:
        """Stop ``user``'s daemon (it took no connection) and start a fresh one; as ``connection``."""
        with self._lock:
            retired = [d for d in [self._daemons.pop(user, None)] if d is not None]
        _retire(retired)
        return self.connection(user)

    def running(self) -> dict[str, int]:
        """{user: pid} of the daemons started and not yet stopped."""
        with self._lock:
            return {user: d.proc.pid for user, d in self._daemons.items()}

    def stop_idle(self) -> int:
        """Stop the daemons unused for ``idle_stop_s``; returns how many were stopped."""
        with self._lock:
            retired = self._take_idle(time.monotonic(), keep=None)
        _retire(retired)
        return len(retired)

    def close(self) -> None:
        """Stop every daemon (the gateway is shutting down) and remove this process's directory."""
        with self._lock:
            retired = list(self._daemons.values())
            self._daemons.clear()
        _retire(retired)
        _remove_tree(self.process_dir())

    def _take_idle(self, now: float, *, keep: str | None) -> list[_Daemon]:
        """Under the lock: remove the daemons unused for ``idle_stop_s`` (but ``keep``'s), to be stopped."""
        idle = [u for u, d in self._daemons.items() if u != keep and now - d.last_used > self.idle_stop_s]
        return [self._daemons.pop(u) for u in idle]

    def _start(self, user: str) -> _Daemon:
        """Start ``user``'s daemon and wait until it listens (outside the lock: it may take seconds)."""
        account = _account(user)
        home = self._user_dir(account)
        sock = home / SOCKET_NAME
        _end_previous(home)
        sock.unlink(missing_ok=True)
        argv = [self.slurmrestd, "-a", "rest_auth/local", "-s", PLUGINS]
        if account.pw_uid != os.geteuid():
            argv += ["-u", user]
        argv.append(f"unix:{SOCKET_NAME}")  # relative: bound in `home`, its working directory
        env = {"PATH": "/usr/sbin:/usr/bin:/bin", "TZ": "UTC"}
        if self.slurm_conf or "SLURM_CONF" in os.environ:
            env["SLURM_CONF"] = self.slurm_conf or os.environ["SLURM_CONF"]
        try:
            proc = start_daemon(argv, cwd=home, env=env, log_path=home / "slurmrestd.log")
        except CommandError as exc:
            message = f"cannot start slurmrestd for {user}: {exc}"
            raise SlurmUnavailable(message, command="slurmrestd") from exc
        (home / "slurmrestd.pid").write_text(str(proc.pid))
        with self._lock:
            self.starts += 1
        self._wait_ready(proc, sock, home, user)
        return _Daemon(user, proc, RestConnection(sock, connect_timeout_s=self.connect_timeout_s))

    def _user_dir(self, account: pwd.struct_passwd) -> Path:
        self.socket_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.socket_dir, 0o700)  # only the gateway may enter: a socket acts as its user
        if self.socket_dir.stat().st_uid != os.geteuid():
            raise SlurmUnavailable(
                f"{self.socket_dir} is not the gateway's own directory; slurmrestd sockets stay unused",
                command="slurmrestd",
            )
        if not self._swept:
            self._swept = True
            _sweep_gone(self.socket_dir)
        mine = self.process_dir()
        mine.mkdir(mode=0o700, exist_ok=True)
        home = mine / account.pw_name
        home.mkdir(exist_ok=True)
        if os.geteuid() == 0:
            os.chown(home, account.pw_uid, account.pw_gid)
        os.chmod(home, 0o700)
        return home

    def _wait_ready(self, proc: Daemon, sock: Path, home: Path, user: str) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            status = proc.exit_status()
            if status is not None:
                tail = (home / "slurmrestd.log").read_text(errors="replace").strip().splitlines()[-1:]
                raise SlurmUnavailable(
                    f"slurmrestd for {user} exited at start (status {status}): "
                    f"{tail[0] if tail else 'no message'}",
                    command="slurmrestd",
                )
            if sock.exists():
                probe = socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_STREAM)
                probe.settimeout(self.connect_timeout_s)  # bounded, as every request's connect
                with probe, contextlib.suppress(OSError):
                    probe.connect(str(sock))
                    return
            time.sleep(0.01)
        proc.stop()
        raise SlurmUnavailable(
            f"slurmrestd for {user} did not listen within {self.start_timeout_s:g} s", command="slurmrestd"
        )


def _account(user: str) -> pwd.struct_passwd:
    if not names.NAME.fullmatch(user):
        raise SubmitRejected(f"{user!r} is not an OS user name", command="slurmrestd")
    try:
        account = pwd.getpwnam(user)
    except KeyError as exc:
        raise SubmitRejected(f"no OS user {user!r} on this host", command="slurmrestd") from exc
    if account.pw_uid == 0:
        raise SubmitRejected(
            "slurmrestd will not run as root: map the user to their own OS account, or use the CLI "
            "backend (GATEWAY_SLURM_BACKEND=cli)",
            command="slurmrestd",
        )
    return account


def _retire(daemons: list[_Daemon]) -> None:
    """Close the connections of daemons taken out of service and stop their processes."""
    for daemon in daemons:
        daemon.connection.close()
        daemon.proc.stop()


def _end_previous(home: Path) -> None:
    """Stop a daemon an earlier gateway process left behind in ``home`` (it crashed, say)."""
    pidfile = home / "slurmrestd.pid"
    try:
        pid = int(pidfile.read_text())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return
    if b"slurmrestd" in cmdline and f"unix:{SOCKET_NAME}".encode() in cmdline:
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/cwd").resolve() == home.resolve():
                os.kill(pid, 15)


def _sweep_gone(socket_dir: Path) -> None:
    """Stop the daemons of gateway processes that no longer run, and remove their directories."""
    for gone in socket_dir.glob("gw-*"):
        try:
            pid = int(gone.name.removeprefix("gw-"))
        except ValueError:
            continue
        if pid == os.getpid() or Path(f"/proc/{pid}").exists():
            continue  # running (a reused pid keeps its directory until that process ends)
        for home in gone.iterdir():
            if home.is_dir():
                _end_previous(home)
        _remove_tree(gone)


def _remove_tree(directory: Path) -> None:
    """Remove a daemons' directory (logs, pid files, sockets); missing is fine."""
    shutil.rmtree(directory, ignore_errors=True)
