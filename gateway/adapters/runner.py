"""The one place the gateway starts programs.

A ``CommandRunner`` runs an argv (never a shell string) with optional stdin,
a time limit and extra environment, and returns what the program printed.
``LocalRunner`` runs it here; an SSH runner runs it on a login node and fits
the same protocol, so adapters never know which they have.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from gateway.errors import CommandError, CommandTimeout


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    duration_s: float


class CommandRunner(Protocol):
    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: str | None = None,
        timeout_s: float = 30.0,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        """Run ``argv``; raise CommandTimeout past ``timeout_s``, CommandError if it cannot start."""
        ...


class LocalRunner:
    """Runs programs on this machine, with the gateway's environment plus ``env``."""

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: str | None = None,
        timeout_s: float = 30.0,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        full_env = {**os.environ, **(env or {})}
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
