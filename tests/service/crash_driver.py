"""Submit one run and get killed (SIGKILL) right before or right after sbatch.

Used by test_crash.py as a subprocess: the real service, the real sbatch; the
only addition is a runner that kills its own process at the chosen moment.

    python -m tests.service.crash_driver DATABASE_URL RUNS_DIR before|after SPEC_JSON|retry

With ``retry`` instead of a spec it processes the due retries (the retry
path's sbatch is the one it dies around).
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
    """Dies right before sbatch gets its script, or right after it answered: through ``run`` (the
    retry path) and through ``start`` (a new run's submission, whose sbatch is already running then,
    waiting for the script: the gateway's death leaves it an empty stdin)."""

    def __init__(self, when: str) -> None:
        self.when = when

    def run(self, argv, **kwargs):
        if argv[0] == "sbatch" and self.when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        result = super().run(argv, **kwargs)
        if argv[0] == "sbatch" and self.when == "after":
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    def start(self, argv, **kwargs):
        started = super().start(argv, **kwargs)
        if argv[0] != "sbatch":
            return started
        when = self.when

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
    settings = Settings(database_url=database_url, runs_dir=runs_dir)
    services = build_services(settings, slurm=SlurmCLI(KillingRunner(when)))
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
