"""SSH connections to the submit host: with ``ssh_login``, the only modules that import paramiko.

``SshPool`` keeps a bounded set of logged-in connections (one login = an OS
user and its private key file) and runs one remote command line on one of
them. A connection carries several commands at once (one SSH channel each),
is kept alive, is closed when idle too long, and is replaced when it
dropped: a command never pays a new handshake unless its login has no live
connection.

Logging in (``gateway.adapters.ssh_login``): host keys are checked strictly
against one known_hosts file: an unknown or changed key is refused, and the
refusal names the key's SHA256 fingerprint as ``ssh-keygen -l`` prints it, so
an operator can compare it with the host's own.

Errors, as the command runner's seam has them (``gateway.errors``):
- ``CommandError``: nothing was started (host unreachable, host key refused,
  login refused, key file unusable, no connection free in time);
- ``CommandTimeout``: a command was sent but its outcome is unknown (it ran
  past its time limit, or the connection dropped while it ran).
"""

from __future__ import annotations

import select
import threading
import time
from dataclasses import dataclass, field

import paramiko

from gateway.adapters.ssh_login import KeyFiles, Login, SshTarget, connect
from gateway.errors import CommandError, CommandTimeout

CHUNK_BYTES = 32 * 1024
_WAIT_SLICE_S = 0.5  # longest single wait, so that a dead connection is noticed


@dataclass(frozen=True)
class ExecResult:
    returncode: int  # -1: the program ended without an exit status (killed by a signal)
    stdout: bytes
    stderr: bytes
    duration_s: float


@dataclass(eq=False)
class _Connection:
    login: Login
    client: paramiko.SSHClient
    in_use: int = 0
    last_used: float = field(default_factory=time.monotonic)

    def alive(self) -> bool:
        transport = self.client.get_transport()
        return transport is not None and transport.is_active()

    def close(self) -> None:
        self.client.close()


class SshPool:
    """At most ``max_connections`` connections to one submit host, each carrying at most
    ``sessions_per_connection`` commands at once; safe to share between threads."""

    def __init__(
        self, target: SshTarget, *, max_connections: int = 8, sessions_per_connection: int = 8
    ) -> None:
        self.target = target
        self.max_connections = max_connections
        self.sessions_per_connection = sessions_per_connection
        self._connections: list[_Connection] = []
        self._opening = 0  # connections being opened right now (they count against the bound)
        self._changed = threading.Condition()
        self._keys = KeyFiles()

    # -- running a command ---------------------------------------------------------------

    def exec(self, login: Login, command: str, *, stdin: bytes | None, timeout_s: float) -> ExecResult:
        """Run ``command`` (one shell command line, quoted by the caller) as ``login``.

        ``stdin`` is sent and closed; stdout and stderr are read whole. CommandError when the
        command could not be started (after one retry on a fresh connection, should a pooled one
        turn out dead), CommandTimeout when its outcome is unknown.
        """
        started = time.monotonic()
        deadline = started + timeout_s
        for attempt in (1, 2):
            conn = self._checkout(login, deadline)
            try:
                channel = self._open_channel(conn, deadline)
            except CommandError:
                self._discard(conn)
                if attempt == 2:
                    raise
                continue
            try:
                return self._talk(conn, channel, command, stdin, deadline, started)
            finally:
                channel.close()
                self._checkin(conn)
        raise AssertionError("unreachable")  # pragma: no cover

    def _open_channel(self, conn: _Connection, deadline: float) -> paramiko.Channel:
        transport = conn.client.get_transport()
        if transport is None or not transport.is_active():
            raise CommandError(f"the connection to {self.target.name} as {conn.login.user} dropped")
        try:
            return transport.open_session(timeout=max(0.1, min(deadline - time.monotonic(), 10.0)))
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise CommandError(f"cannot open an SSH session on {self.target.name}: {exc}") from exc

    def _talk(
        self,
        conn: _Connection,
        channel: paramiko.Channel,
        command: str,
        stdin: bytes | None,
        deadline: float,
        started: float,
    ) -> ExecResult:
        """Send the command and its stdin, read its output until it exits or the deadline passes."""
        what = command.split(" ", 1)[0]
        try:
            channel.exec_command(command)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            self._discard(conn)
            raise CommandTimeout(
                f"the connection to {self.target.name} failed while starting {what} ({exc}); "
                "whether it ran is unknown"
            ) from exc
        out, err = bytearray(), bytearray()
        pending = memoryview(stdin or b"")
        if not pending:
            channel.shutdown_write()
        try:
            while True:
                while channel.recv_ready():
                    out += channel.recv(CHUNK_BYTES)
                while channel.recv_stderr_ready():
                    err += channel.recv_stderr(CHUNK_BYTES)
                if pending and (channel.closed or channel.exit_status_ready()):
                    pending = memoryview(b"")  # it ended without reading all of its stdin
                elif pending and channel.send_ready():
                    sent = channel.send(pending[:CHUNK_BYTES])  # type: ignore[arg-type]  # paramiko sends any buffer; the stubs say bytes
                    pending = pending[sent:]
                    if not pending:
                        channel.shutdown_write()
                if channel.exit_status_ready() and (channel.eof_received or channel.closed):
                    if not channel.recv_ready() and not channel.recv_stderr_ready():
                        break
                    continue
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CommandTimeout(
                        f"{what} on {self.target.name} did not finish within "
                        f"{deadline - started:g} s; whether it did its work is unknown"
                    )
                if not conn.alive():
                    self._discard(conn)
                    raise CommandTimeout(
                        f"the connection to {self.target.name} dropped while {what} ran; "
                        "whether it did its work is unknown"
                    )
                self._wait(channel, min(left, _WAIT_SLICE_S), sending=bool(pending))
        except (paramiko.SSHException, OSError, EOFError) as exc:
            self._discard(conn)
            raise CommandTimeout(
                f"the connection to {self.target.name} failed while {what} ran ({exc}); "
                "whether it did its work is unknown"
            ) from exc
        status = channel.exit_status
        if status == -1 and not conn.alive():
            self._discard(conn)
            raise CommandTimeout(
                f"the connection to {self.target.name} dropped before {what} reported its exit status; "
                "whether it did its work is unknown"
            )
        return ExecResult(status, bytes(out), bytes(err), time.monotonic() - started)

    @staticmethod
    def _wait(channel: paramiko.Channel, timeout_s: float, *, sending: bool) -> None:
        if sending:
            time.sleep(min(timeout_s, 0.005))  # the window is full: the other side reads
        elif channel.eof_received:
            channel.status_event.wait(timeout_s)  # output is over; the exit status follows
        else:
            select.select([channel], [], [], timeout_s)  # readable on stdout, stderr, EOF or close

    # -- the pool -----------------------------------------------------------------------

    def _checkout(self, login: Login, deadline: float) -> _Connection:
        """A live connection of ``login`` with a free session slot, opened if need be."""
        with self._changed:
            while True:
                self._prune_locked()
                for conn in self._connections:
                    if conn.login == login and conn.in_use < self.sessions_per_connection:
                        conn.in_use += 1
                        return conn
                if len(self._connections) + self._opening < self.max_connections:
                    break
                idle = [c for c in self._connections if c.in_use == 0]
                if idle:
                    victim = min(idle, key=lambda c: c.last_used)
                    self._connections.remove(victim)
                    victim.close()
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CommandError(
                        f"all {self.max_connections} SSH connections to {self.target.name} are busy; "
                        "raise ssh_pool_size (GATEWAY_SSH_POOL_SIZE) or try again shortly"
                    )
                self._changed.wait(min(left, _WAIT_SLICE_S))
            self._opening += 1
        try:
            client = connect(self.target, login, self._keys.load(login.key_path), deadline)
        finally:
            with self._changed:
                self._opening -= 1
                self._changed.notify_all()
        conn = _Connection(login, client, in_use=1)
        with self._changed:
            self._connections.append(conn)
        return conn

    def _checkin(self, conn: _Connection) -> None:
        with self._changed:
            conn.in_use -= 1
            conn.last_used = time.monotonic()
            self._changed.notify_all()

    def _discard(self, conn: _Connection) -> None:
        """Drop a connection that failed, unless it is still alive: then only a channel failed (the
        server refused a session, say), and the other commands on it carry on."""
        if conn.alive():
            return
        with self._changed:
            if conn in self._connections:
                self._connections.remove(conn)
            self._changed.notify_all()
        conn.close()

    def _prune_locked(self) -> None:
        """Forget dead connections and close those idle longer than ``idle_close_s``."""
        now = time.monotonic()
        for conn in list(self._connections):
            idle_too_long = conn.in_use == 0 and now - conn.last_used > self.target.idle_close_s
            if idle_too_long or (conn.in_use == 0 and not conn.alive()):
                self._connections.remove(conn)
                conn.close()

    def logins(self) -> list[str]:
        """The users with a live connection now (for reports)."""
        with self._changed:
            return sorted({c.login.user for c in self._connections if c.alive()})

    def close(self) -> None:
        """Close every connection; a later command opens new ones."""
        with self._changed:
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()
