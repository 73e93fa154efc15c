"""A ``CommandRunner`` that times every command it passes on: how Slurm call latency is measured.

``gateway.wiring`` puts it in front of the runner the Slurm adapters use
(``SlurmCLI``, ``SlurmAccounts``), the one place every Slurm command passes,
locally or over SSH.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from gateway.adapters.prometheus import GatewayMetrics
from gateway.adapters.runner import CommandResult, CommandRunner, StartedCommand
from gateway.errors import CommandError, CommandTimeout


class MeteredRunner:
    """Runs through ``inner`` and records each command's wall time and failure in ``metrics``."""

    def __init__(self, inner: CommandRunner, metrics: GatewayMetrics) -> None:
        self.inner = inner
        self.metrics = metrics

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: str | None = None,
        timeout_s: float = 30.0,
        env: Mapping[str, str] | None = None,
        as_user: str | None = None,
    ) -> CommandResult:
        """``CommandRunner.run`` of ``inner``; a non-zero exit counts as an "exit" error, not raised."""
        return self.timed(
            argv,
            time.monotonic(),
            lambda: self.inner.run(argv, stdin=stdin, timeout_s=timeout_s, env=env, as_user=as_user),
            env,
        )

    def timed(
        self,
        argv: Sequence[str],
        started: float,
        call: Callable[[], CommandResult],
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        """``call()``'s result, its time since ``started`` and its failure recorded under ``argv`` (and
        the cluster ``argv`` and ``env`` aim at)."""
        try:
            result = call()
        except CommandTimeout:
            self.metrics.slurm_command(argv, time.monotonic() - started, "timeout", env)
            raise
        except CommandError:
            self.metrics.slurm_command(argv, time.monotonic() - started, "unstartable", env)
            raise
        self.metrics.slurm_command(
            argv, time.monotonic() - started, "exit" if result.returncode != 0 else None, env
        )
        return result

    def start(
        self,
        argv: Sequence[str],
        *,
        timeout_s: float = 30.0,
        env: Mapping[str, str] | None = None,
        as_user: str | None = None,
    ) -> StartedCommand:
        """``CommandRunner.start`` of ``inner``; the command is timed from its start to its end."""
        started = self.inner.start(argv, timeout_s=timeout_s, env=env, as_user=as_user)
        return _Metered(self, argv, started, env)


class _Metered:
    """A started command of a ``MeteredRunner``: recorded when it ends (not when abandoned)."""

    def __init__(
        self,
        runner: MeteredRunner,
        argv: Sequence[str],
        inner: StartedCommand,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.runner = runner
        self.argv = argv
        self.inner = inner
        self.env = env
        self.started = time.monotonic()

    def finish(self, stdin: str | None) -> CommandResult:
        """``StartedCommand.finish`` of ``inner``, recorded as ``MeteredRunner.run`` records."""
        return self.runner.timed(self.argv, self.started, lambda: self.inner.finish(stdin), self.env)

    def abandon(self) -> None:
        """``StartedCommand.abandon`` of ``inner``: it never ran to an end, so nothing is recorded."""
        self.inner.abandon()
