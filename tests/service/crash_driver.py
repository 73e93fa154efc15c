"""Submit one run, or the due retries, and get killed (SIGKILL) at a chosen point of the submission.

Used by test_crash.py as a subprocess: the real service, the real sbatch; the
only additions are a runner and a backend that kill their own process at the chosen moment.

    python -m tests.service.crash_driver DATABASE_URL RUNS_DIR started|before|after SPEC_JSON|retry [NOTE]

With a JSON list of specs it submits them as one batch (``RunService.submit_batch``, two sbatch
at a time, the batch's Idempotency-Key in NOTE's place: ``KEY`` after the list) and dies at the
given point of its ``CRASH_AT``-th sbatch (default the first).
With ``retry`` instead of a spec it processes the due retries (the retry's
submission is the one it dies in). Every submission goes through
``Submission`` (prepared, the attempt committed, the script sent), so the
three points are: ``started`` (the submission is prepared, the attempt not
committed yet), ``before`` (the attempt is committed, the script not sent) and
``after`` (sbatch answered, the job id not stored). The service gives sbatch the
script's file (``script_path``), so sbatch starts only at the send; a
submission from stdin (no ``script_path``) has its sbatch started at ``started``,
waiting for its script. Before dying, the driver writes sbatch's ``--comment``
and pid (None when no sbatch runs yet) to the file NOTE, when given.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from gateway.adapters.runner import LocalRunner
from gateway.adapters.slurm import SlurmCLI
from gateway.core.spec.run_spec import build_spec
from gateway.services.runs.batch_items import BatchItem
from gateway.settings import Settings
from gateway.wiring import build_services


class KillingRunner(LocalRunner):
    """Dies at ``when`` of an sbatch it starts (``LocalRunner.start``): right after it started,
    right before it gets its script, or right after it answered. The gateway's death leaves an
    sbatch still waiting an empty stdin, on which it queues nothing."""

    def __init__(self, when: str, note: str | None, at: int = 1) -> None:
        self.when = when
        self.note = note
        self.at = at  # die in the at-th sbatch
        self.started = 0

    def reached(self, argv, pid) -> bool:
        """Whether this sbatch (``argv``) is the one to die in; its comment and ``pid`` noted if so."""
        self.started += 1
        if self.started != self.at:
            return False
        if self.note:
            comment = next(a for a in argv if a.startswith("--comment=")).removeprefix("--comment=")
            with open(self.note, "w") as note:
                json.dump({"comment": comment, "pid": pid}, note)
        return True

    def run(self, argv, **kwargs):
        """sbatch given the script's file, at the send: dies right before it or right after it."""
        if argv[0] != "sbatch" or "--test-only" in argv or not self.reached(argv, None):
            return super().run(argv, **kwargs)
        if self.when != "after":
            os.kill(os.getpid(), signal.SIGKILL)
        result = super().run(argv, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)
        return result

    def start(self, argv, **kwargs):
        started = super().start(argv, **kwargs)
        if argv[0] != "sbatch" or not self.reached(argv, started.proc.pid):
            return started
        when = self.when
        if when == "started":
            os.kill(os.getpid(), signal.SIGKILL)

        class Killing:
            def finish(self, stdin):
                if when == "before":
                    os.kill(os.getpid(), signal.SIGKILL)
                result = started.finish(stdin)
                if when == "after":
                    os.kill(os.getpid(), signal.SIGKILL)
                return result

            def abandon(self):
                started.abandon()

        return Killing()


class KillingSlurm(SlurmCLI):
    """Dies at ``started`` of a submission from the script's file: once it is prepared (nothing runs
    yet), before the attempt is committed."""

    def prepare_submit(self, *, tag, script_path=None, **kwargs):
        prepared = super().prepare_submit(tag=tag, script_path=script_path, **kwargs)
        runner = self.runner
        assert isinstance(runner, KillingRunner)
        if script_path is not None and runner.when == "started":
            if runner.reached(["sbatch", f"--comment={tag}"], None):
                os.kill(os.getpid(), signal.SIGKILL)
            runner.started -= 1  # counted again at its send
        return prepared


def main() -> None:
    database_url, runs_dir, when, spec_json = sys.argv[1:5]
    note = sys.argv[5] if len(sys.argv) > 5 else None
    at = int(os.environ.get("CRASH_AT", "1"))
    settings = Settings(database_url=database_url, runs_dir=runs_dir, batch_submit_parallel=2)
    parsed = json.loads(spec_json) if spec_json != "retry" else None
    batch_key = note if isinstance(parsed, list) else None
    note = None if batch_key else note
    services = build_services(settings, slurm=KillingSlurm(KillingRunner(when, note, at)))
    if spec_json == "retry":
        services.retries.process_due()
        print("not killed", file=sys.stderr)
        sys.exit(3)
    principal = services.access.principal("tester")
    if isinstance(parsed, list):
        items = [BatchItem(spec) for spec in parsed]
        services.runs.submit_batch(items, principal=principal, idempotency_key=batch_key)
    else:
        services.runs.submit(build_spec(parsed), principal=principal)
    print("not killed", file=sys.stderr)
    sys.exit(3)


if __name__ == "__main__":
    main()
