"""The one place the gateway starts programs (the only module that imports ``subprocess``).

A ``CommandRunner`` runs an argv (never a shell string) with optional stdin,
a time limit and extra environment, optionally as another OS user, and
returns what the program printed. ``LocalRunner`` runs it here (``runuser``
for another user, which needs root); an SSH runner runs it on a login node,
logging in as that user, and fits the same protocol, so adapters never know
which they have.

``start_daemon`` starts a long-lived program here (slurmrestd, one per OS user:
``adapters/slurm/restd.py``) and hands back a ``Daemon``: its pid, whether it
still runs, and its stop.
"""

from __future__ import annotations

import locale
import os
import pwd
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from gateway.adapters.pipes import exchange
from gateway.errors import CommandError, CommandTimeout

# What Popen's text mode would decode with (the locale's encoding), bad bytes replaced.
_ENCODING = locale.getpreferredencoding(False)


def _text(data: bytes) -> str:
    """``data`` as Popen's text mode gives it: decoded, universal newlines."""
    return data.decode(_ENCODING, errors="replace").replace("\r\n", "\n").replace("\r", "\n")


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    duration_s: float


class StartedCommand(Protocol):
    """A program started with its input held back: ``finish`` hands it the input, ``abandon`` kills it."""

    def finish(self, stdin: str | None) -> CommandResult:
        """Write ``stdin``, close it, wait for the end; as ``CommandRunner.run`` (errors included), the
        time limit counted from the start."""
        ...

    def abandon(self) -> None:
        """Kill the program before it got any input, and reap it."""
        ...


class CommandRunner(Protocol):
    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: str | None = None,
        timeout_s: float = 30.0,
        env: Mapping[str, str] | None = None,
        as_user: str | None = None,
    ) -> CommandResult:
        """Run ``argv`` (as ``as_user`` when given); CommandTimeout past ``timeout_s``, CommandError
        if it cannot start."""
        ...

    def start(
        self,
        argv: Sequence[str],
        *,
        timeout_s: float = 30.0,
        env: Mapping[str, str] | None = None,
        as_user: str | None = None,
    ) -> StartedCommand:
        """``run`` in two steps: the program starts now and waits for its input, which ``finish`` gives.

        What it does before it reads its input (``runuser``'s PAM session, sbatch loading its
        configuration and plugins: about 3 ms of its 7 here) overlaps the caller's work until then
        (``RunService``: the run's commit before sbatch). ``finish`` raises what ``run`` would,
        including CommandError when the program could not start.
        """
        ...


class Deferred:
    """A ``StartedCommand`` that starts nothing until ``finish``, then runs the whole program there.

    For runners with no way to hold a started program's input (and for fakes in tests).
    """

    def __init__(self, runner: CommandRunner, argv: Sequence[str], **options: Any) -> None:
        self.runner = runner
        self.argv = argv
        self.options = options

    def finish(self, stdin: str | None) -> CommandResult:
        """``runner.run`` with ``stdin``."""
        return self.runner.run(self.argv, stdin=stdin, **self.options)

    def abandon(self) -> None:
        """Nothing was started."""


class LocalRunner:
    """Runs programs on this machine.

    Without ``as_user`` a program gets the gateway's environment plus ``env``.
    With ``as_user`` (another user: through ``runuser -u USER --``) it gets a
    clean login-like environment plus ``env``, so nothing of the gateway's
    leaks into a job that sbatch exports the environment to.
    """

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: str | None = None,
        timeout_s: float = 30.0,
        env: Mapping[str, str] | None = None,
        as_user: str | None = None,
    ) -> CommandResult:
        """``CommandRunner.run``: a local process, never a shell; output decoded, bad bytes replaced.

        A non-zero exit is not an error here (the caller reads ``returncode`` and stderr). CommandError
        also when ``as_user`` has no account on this machine.
        """
        argv, full_env = _local_command(argv, env, as_user)
        started = time.monotonic()
        try:
            proc = subprocess.run(
                list(argv),
                input=stdin,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout_s,
                env=full_env,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise CommandTimeout(f"{argv[0]} did not finish within {timeout_s:g} s") from exc
        except OSError as exc:
            raise CommandError(f"cannot run {argv[0]}: {exc.strerror or exc}") from exc
        return CommandResult(
            argv=tuple(argv),
            returncode=proc.returncode,
            stdout=proc.stdout,
            stderr=proc.stderr,
            duration_s=time.monotonic() - started,
        )

    def start(
        self,
        argv: Sequence[str],
        *,
        timeout_s: float = 30.0,
        env: Mapping[str, str] | None = None,
        as_user: str | None = None,
    ) -> StartedCommand:
        """``CommandRunner.start``: the process starts now, its stdin a pipe left open until ``finish``.

        A program that cannot start (no such file, no OS user) is reported by ``finish`` as
        CommandError, as ``run`` reports it.
        """
        started = time.monotonic()
        try:
            argv, full_env = _local_command(argv, env, as_user)
            proc = subprocess.Popen(  # bytes: finish exchanges them (adapters/pipes.py) and decodes
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                env=full_env,
            )
        except CommandError as exc:
            return _NotStarted(exc)
        except OSError as exc:
            return _NotStarted(CommandError(f"cannot run {argv[0]}: {exc.strerror or exc}"))
        return _LocalStarted(list(argv), proc, started, timeout_s)


class _NotStarted:
    """A program that could not start: ``finish`` raises why."""

    def __init__(self, error: CommandError) -> None:
        self.error = error

    def finish(self, stdin: str | None) -> CommandResult:
        """Raises the CommandError."""
        raise self.error

    def abandon(self) -> None:
        """Nothing runs."""


class _LocalStarted:
    """A local process waiting on its stdin (``LocalRunner.start``)."""

    def __init__(
        self, argv: list[str], proc: subprocess.Popen[bytes], started: float, timeout_s: float
    ) -> None:
        self.argv = argv
        self.proc = proc
        self.started = started
        self.timeout_s = timeout_s

    def finish(self, stdin: str | None) -> CommandResult:
        """``StartedCommand.finish``."""
        deadline = self.started + self.timeout_s
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        data = (stdin or "").encode(_ENCODING, errors="replace")  # as text mode encodes
        try:
            stdout, stderr = exchange(proc.stdin, proc.stdout, proc.stderr, data, deadline)
            proc.wait(timeout=max(deadline - time.monotonic(), 0.001))
        except (TimeoutError, subprocess.TimeoutExpired) as exc:
            self.abandon()
            raise CommandTimeout(f"{self.argv[0]} did not finish within {self.timeout_s:g} s") from exc
        return CommandResult(
            argv=tuple(self.argv),
            returncode=proc.returncode,
            stdout=_text(stdout),
            stderr=_text(stderr),
            duration_s=time.monotonic() - self.started,
        )

    def abandon(self) -> None:
        """``StartedCommand.abandon``: SIGKILL, then reap (its pipes closed)."""
        if self.proc.returncode is not None:
            return
        self.proc.kill()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
        self.proc.wait()


class Daemon:
    """A long-lived program started by ``start_daemon``."""

    def __init__(self, argv: Sequence[str], proc: subprocess.Popen[bytes]) -> None:
        self.argv = tuple(argv)
        self._proc = proc

    @property
    def pid(self) -> int:
        """Its process id."""
        return self._proc.pid

    def exit_status(self) -> int | None:
        """None while it runs; else its exit status (minus the signal that ended it), the process reaped."""
        return self._proc.poll()

    def stop(self, grace_s: float = 2.0) -> None:
        """SIGTERM, then SIGKILL if it has not ended within ``grace_s``; reaped either way. Ended: nothing."""
        if self._proc.poll() is not None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=grace_s)


def start_daemon(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], log_path: Path) -> Daemon:
    """Start ``argv`` here in the background and return at once, without waiting for it to be ready.

    Never a shell; it runs in ``cwd`` with exactly ``env`` (nothing of the gateway's environment),
    stdin from /dev/null, stdout and stderr appended to ``log_path``. CommandError when it cannot
    start (no such program, ``cwd`` or ``log_path`` unusable).
    """
    try:
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                list(argv), cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )
    except OSError as exc:
        raise CommandError(f"cannot start {argv[0]}: {exc.strerror or exc}") from exc
    return Daemon(argv, proc)


def _local_command(
    argv: Sequence[str], env: Mapping[str, str] | None, as_user: str | None
) -> tuple[Sequence[str], dict[str, str]]:
    """The argv (through ``runuser`` for another user) and the environment a local program gets."""
    if as_user:
        # A job's environment starts clean, even as the gateway's own user: nothing of
        # the gateway's (database URL, tokens) may leak into it.
        full_env = {**_user_env(as_user), **(env or {})}
        if as_user != current_user():
            # runuser lives in /usr/sbin, which a user's PATH does not hold
            argv = [shutil.which("runuser") or "/usr/sbin/runuser", "-u", as_user, "--", *argv]
        return argv, full_env
    return argv, {**os.environ, **(env or {})}


def current_user() -> str:
    """The name of the OS account this process runs as (its effective uid)."""
    return pwd.getpwuid(os.geteuid()).pw_name


def _user_env(user: str) -> dict[str, str]:
    try:
        entry = pwd.getpwnam(user)
    except KeyError as exc:
        raise CommandError(f"no OS user {user!r} on this host") from exc
    return {
        "HOME": entry.pw_dir,
        "USER": user,
        "LOGNAME": user,
        "SHELL": entry.pw_shell or "/bin/sh",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": os.environ.get("LANG", "C.UTF-8"),
    }
