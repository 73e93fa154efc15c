"""Ask for the site's eval environment (its first need: register, then submit the build) and get
killed (SIGKILL) at a chosen point of the build's submission (``crash_driver.KillingRunner``).

    python -m tests.service.env_crash_driver SETTINGS_JSON started|before|after LOCK NAME

Used by test_site_eval_environment.py as a subprocess: the real service, the real sbatch.
``started`` dies before the build run is recorded (``crash_driver.KillingSlurm``: once the
submission is prepared; the version is written, no run: its build job was never submitted),
``after`` once sbatch answered and before the job id (or the version's link to its run) is stored.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gateway.services.envs.site_eval import SiteEvalEnvironment
from gateway.settings import Settings
from gateway.wiring import build_services
from tests.service.crash_driver import KillingRunner, KillingSlurm


def main() -> None:
    settings_json, when, lock, name = sys.argv[1:5]
    settings = Settings(**json.loads(settings_json))
    # KillingSlurm: a submission from the script's file (the default) dies at ``started`` once prepared,
    # before its run is committed, as one from stdin dies at its sbatch's start
    services = build_services(settings, slurm=KillingSlurm(KillingRunner(when, None)))
    principal = services.access.principal("tester")
    site = SiteEvalEnvironment(services.environments, Path(lock), name=name)
    site.ensure(project="test", queue="cpu", principal=principal)
    print("not killed", file=sys.stderr)
    sys.exit(3)


if __name__ == "__main__":
    main()
