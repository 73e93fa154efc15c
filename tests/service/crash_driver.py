"""Submit one run, or the due retries, and get killed (SIGKILL) at a chosen point of the submission.

Used by test_crash.py as a subprocess: the real service, the real sbatch; the
only addition is a runner that kills its own process at the chosen moment.

    python -m tests.service.crash_driver DATABASE_URL RUNS_DIR started|before|after SPEC_JSON|retry [NOTE]

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
from gateway.settings import Settings
from gateway.wiring import build_services


class KillingRunner(LocalRunner):
    """Dies at ``when`` of an sbatch it starts (``LocalRunner.start``): right after it started,
    right before it gets its script, or right after it answered. The gateway's death leaves an
    sbatch still waiting an empty stdin, on which it queues nothing."""

    def __init__(self, when: str, note: str | None) -> None:
        self.when = when
        self.note = note

    def start(self, argv, **kwargs):
        started = super().start(argv, **kwargs)
        if argv[0] != "sbatch":
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
    settings = Settings(database_url=database_url, runs_dir=runs_dir)
    services = build_services(settings, slurm=SlurmCLI(KillingRunner(when, note)))
    if spec_json == "retry":
        services.retries.process_due()
        print("not killed", file=sys.stderr)
        sys.exit(3)
    principal = services.access.principal("tester")
    services.runs.submit(build_spec(json.loads(spec_json)), principal=principal)
    print("not killed", file=sys.stderr)
    sys.exit(3)


if __name__ == "__main__":
    main()
