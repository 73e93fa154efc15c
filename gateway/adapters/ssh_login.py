"""Logging in to the submit host over SSH: targets, logins, host key checks and key files.

With ``gateway.adapters.ssh`` (the pool that runs commands on these logins),
the only module that imports paramiko.
"""

from __future__ import annotations

import base64
import hashlib
import socket
import stat
import time
from dataclasses import dataclass
from pathlib import Path

import paramiko

from gateway.errors import CommandError


@dataclass(frozen=True)
class SshTarget:
    """Where to connect and how patiently."""

    host: str
    port: int
    known_hosts: Path
    connect_timeout_s: float = 10.0
    keepalive_s: float = 15.0
    idle_close_s: float = 300.0

    @property
    def name(self) -> str:
        """The host as known_hosts names it: ``host``, or ``[host]:port`` off port 22."""
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"


@dataclass(frozen=True)
class Login:
    """Who logs in: an OS user on the submit host, with the private key file that opens it."""

    user: str
    key_path: Path


def fingerprint(key: paramiko.PKey) -> str:
    """``ssh-ed25519 SHA256:...``: a public key's type and fingerprint as OpenSSH prints them."""
    digest = base64.b64encode(hashlib.sha256(key.asbytes()).digest()).decode("ascii").rstrip("=")
    return f"{key.get_name()} SHA256:{digest}"


class _RefuseUnknown(paramiko.MissingHostKeyPolicy):
    """An unknown host key is refused, never added; the error names its fingerprint."""

    def __init__(self, target: SshTarget) -> None:
        self.target = target

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        """Raise CommandError: the key of ``hostname`` is in no line of the known_hosts file."""
        raise CommandError(
            f"the submit host {hostname} offered host key {fingerprint(key)}, which is not in "
            f"{self.target.known_hosts}; the gateway refuses unknown hosts. Compare it with the host's "
            f"own (ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub on it), then add its line "
            f"(ssh-keyscan -p {self.target.port} {self.target.host}) to {self.target.known_hosts}"
        )


def connect(target: SshTarget, login: Login, key: paramiko.PKey, deadline: float) -> paramiko.SSHClient:
    """A logged-in client: TCP, handshake, host key check, public-key login. CommandError if not."""
    timeout = max(0.1, min(target.connect_timeout_s, deadline - time.monotonic()))
    try:
        sock = socket.create_connection((target.host, target.port), timeout=timeout)
    except OSError as exc:
        raise CommandError(f"cannot reach the submit host {target.host}:{target.port}: {_why(exc)}") from exc
    # Small request/answer packets: without this, Nagle and delayed ACKs add ~40 ms to each.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    client = paramiko.SSHClient()
    try:
        _refuse_markers(target.known_hosts)
        client.load_system_host_keys(str(target.known_hosts))  # read-only: never written back
    except OSError as exc:
        sock.close()
        raise CommandError(
            f"cannot read the submit host's known_hosts file {target.known_hosts}: {_why(exc)}"
        ) from exc
    except CommandError:
        sock.close()
        raise
    except (
        paramiko.SSHException,
        ValueError,
    ) as exc:  # InvalidHostKey and friends: a line paramiko cannot read
        sock.close()
        raise CommandError(
            f"the submit host's known_hosts file {target.known_hosts} has a line the gateway cannot read "
            f"({type(exc).__name__}: {exc}); fix or remove it"
        ) from exc
    client.set_missing_host_key_policy(_RefuseUnknown(target))
    try:
        client.connect(
            target.host,
            port=target.port,
            username=login.user,
            pkey=key,
            sock=sock,
            timeout=timeout,
            banner_timeout=timeout,
            auth_timeout=timeout,
            allow_agent=False,
            look_for_keys=False,
        )
    except CommandError:
        client.close()
        raise
    except paramiko.BadHostKeyException as exc:
        client.close()
        raise CommandError(
            f"the host key of the submit host {target.name} has CHANGED: it offered "
            f"{fingerprint(exc.key)}, {target.known_hosts} holds {fingerprint(exc.expected_key)}. "
            "The gateway refuses it: someone may be in between, or the host was reinstalled. Check "
            f"with the host's admin before you replace its line in {target.known_hosts}"
        ) from exc
    except paramiko.AuthenticationException as exc:
        client.close()
        raise CommandError(
            f"the submit host {target.name} refused the login of {login.user} with key "
            f"{login.key_path} ({exc}); its public half must be in {login.user}'s authorized_keys there"
        ) from exc
    except (paramiko.SSHException, OSError, EOFError) as exc:
        client.close()
        raise CommandError(f"cannot log in to the submit host {target.name} as {login.user}: {exc}") from exc
    transport = client.get_transport()
    if transport is not None and target.keepalive_s > 0:
        transport.set_keepalive(max(1, round(target.keepalive_s)))
    return client


class KeyFiles:
    """Private key files, each read once and again only when it changes."""

    def __init__(self) -> None:
        self._keys: dict[Path, tuple[float, paramiko.PKey]] = {}

    def load(self, path: Path) -> paramiko.PKey:
        """The private key in ``path``, reloaded when the file changes; CommandError if unusable.

        Like ssh, a key file that its group or others may read is refused.
        """
        try:
            info = path.stat()
        except OSError as exc:
            raise CommandError(f"cannot read the SSH key file {path}: {_why(exc)}") from exc
        if not stat.S_ISREG(info.st_mode):
            raise CommandError(f"the SSH key file {path} is not a regular file")
        if info.st_mode & 0o077:
            raise CommandError(
                f"the SSH key file {path} is readable by others (mode {stat.S_IMODE(info.st_mode):04o}); "
                f"a private key must be its owner's alone: chmod 600 {path}"
            )
        cached = self._keys.get(path)
        if cached and cached[0] == info.st_mtime:
            return cached[1]
        try:
            key = paramiko.PKey.from_path(str(path))
        except paramiko.PasswordRequiredException as exc:
            raise CommandError(
                f"the SSH key file {path} is encrypted; the gateway needs an unencrypted key "
                "(protect it by its file mode and owner instead)"
            ) from exc
        except (paramiko.SSHException, OSError, ValueError) as exc:
            raise CommandError(f"the SSH key file {path} holds no usable private key: {exc}") from exc
        self._keys[path] = (info.st_mtime, key)
        return key


def _refuse_markers(path: Path) -> None:
    """CommandError naming the file and line of the first ``@revoked`` or ``@cert-authority`` line.

    paramiko does not know these markers: it raises InvalidHostKey on ``@revoked`` (issue 26 item 8)
    and would skip a revocation silently if it read past it. A revoked key must never be trusted by
    accident, so the gateway refuses to log in until such a line is replaced by removing the key's
    own line (ssh-keygen -R). OSError when the file cannot be read.
    """
    with open(path, encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, start=1):
            marker = line.strip().split(maxsplit=1)[0] if line.strip() else ""
            if marker in ("@revoked", "@cert-authority"):
                raise CommandError(
                    f"{path} line {number} is a {marker} line, which the gateway's SSH client cannot "
                    f"check: it refuses to log in to the submit host rather than overlook it. Remove the "
                    f"host's untrusted key line instead (ssh-keygen -R HOST -f {path}) and drop line "
                    f"{number}"
                )


def _why(exc: OSError) -> str:
    if isinstance(exc, TimeoutError | socket.timeout):
        return "timed out"
    return exc.strerror or str(exc) or type(exc).__name__
