"""Submit one run, or the due retries, and get killed (SIGKILL) at a chosen point of the submission.

Used by test_crash.py as a subprocess: the real service, the real sbatch; the
only addition is a runner that kills its own process at the chosen moment.

    python -m tests.service.crash_driver DATABASE_URL RUNS_DIR started|before|after SPEC_JSON|retry [NOTE]

With a JSON list of specs it submits them as one batch (``RunService.submit_batch``, two sbatch
at a time, the batch's Idempotency-Key in NOTE's place: ``KEY`` after the list) and dies at the
given point of its ``CRASH_AT``-th sbatch (default the first).
With ``retry`` instead of a spec it processes the due retries (the retry's
submission is the one it dies in). Every submission goes through
``Submission`` (sbatch started, the attempt committed, the script sent), so the
three points are: ``started`` (sbatch runs, waiting for its script; the attempt
is not committed yet), ``before`` (the attempt is committed, the script not
sent) and ``after`` (sbatch answered, the job id not stored). Before dying,
the driver writes sbatch's ``--comment`` and pid to the file NOTE, when given.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from gateway.adapters.runner import LocalRunner
from gateway.adapters.slurm import SlurmCLI
from gateway.core.spec.run_spec import build_spec
from gateway.services.runs.batch import BatchItem
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

    def start(self, argv, **kwargs):
        started = super().start(argv, **kwargs)
        if argv[0] != "sbatch":
            return started
        self.started += 1
        if self.started != self.at:
            return started
        if self.note:
            comment = next(a for a in argv if a.startswith("--comment=")).removeprefix("--comment=")
            with open(self.note, "w") as note:
                json.dump({"comment": comment, "pid": started.proc.pid}, note)
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


def main() -> None:
    database_url, runs_dir, when, spec_json = sys.argv[1:5]
    note = sys.argv[5] if len(sys.argv) > 5 else None
    at = int(os.environ.get("CRASH_AT", "1"))
    settings = Settings(database_url=database_url, runs_dir=runs_dir, batch_submit_parallel=2)
    parsed = json.loads(spec_json) if spec_json != "retry" else None
    batch_key = note if isinstance(parsed, list) else None
    note = None if batch_key else note
    services = build_services(settings, slurm=SlurmCLI(KillingRunner(when, note, at)))
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
