"""Checking a run without submitting it: ``POST /runs/check``, ``gw sbatch --test-only``.

The check runs everything a submission runs before anything is written:
admission (project, queue, GPU type, walltime, whole-node memory, caps, OS
user, output paths), the dataset look-ups and the rendering of the sbatch
script. With ``slurm_test`` it then hands the rendered script to Slurm's own
``sbatch --test-only`` as the run's OS user, which says when and where the
job would start; nothing is queued and no run is recorded.
"""

from __future__ import annotations

from dataclasses import dataclass

import jinja2

from gateway.adapters.slurm.clusters import SlurmClusters
from gateway.core.access.quota import Ask
from gateway.core.access.values import Principal
from gateway.core.sbatch.render import RenderedScript, render_sbatch
from gateway.core.spec.run_spec import RunSpec
from gateway.services.accounting.telemetry import telemetry_launch
from gateway.services.envs.catalog import EnvCatalog
from gateway.services.lineage.datasets import DatasetService
from gateway.services.runs.admission import Admission, Admitted
from gateway.services.runs.inputs import resolve_environment, resolve_inputs
from gateway.settings import Settings

CHECK_RUN_ID = "r-0000000000000000"  # the run id the checked script is rendered with (no run is made)


@dataclass(frozen=True)
class RunCheck:
    """What a submission of the spec would do: where it runs, as whom, for how long, and the script."""

    project: str
    queue: str
    partition: str
    account: str | None
    qos: str | None
    os_user: str
    walltime_min: int | None  # the job's time limit: the spec's, else the partition's DefaultTime
    walltime_source: str  # "the run's walltime_min", "partition cpu's DefaultTime" ...
    gpus: int  # GPUs one job holds at once
    gpu_hours: float  # at most, over the walltime (what the quota counts)
    script: str  # the sbatch script as it would be submitted (run id r-0000000000000000)
    slurm_test: str | None  # what ``sbatch --test-only`` said; None when it was not asked


class RunChecker:
    """``check``: admission, rendering and (asked) Slurm's own test of a spec, submitting nothing."""

    def __init__(
        self,
        admission: Admission,
        clusters: SlurmClusters,
        templates: jinja2.Environment,
        settings: Settings,
        datasets: DatasetService | None,
        environments: EnvCatalog | None = None,
    ) -> None:
        self.environments = environments
        self.admission = admission
        self.clusters = clusters  # sbatch --test-only goes to the queue's cluster
        self.templates = templates
        self.settings = settings
        self.datasets = datasets

    def render(self, spec: RunSpec, *, principal: Principal, run_id: str) -> tuple[Admitted, RenderedScript]:
        """Admit ``spec`` for ``principal`` and render its script with the placeholder ``run_id``, as a
        submission would (raising what it raises before it writes); nothing is recorded."""
        admitted = self.admission.admit(spec, principal)
        run_dir = str(self.settings.runs_dir / run_id)
        inputs = resolve_inputs(spec, run_dir, principal=principal, datasets=self.datasets)
        launch = resolve_environment(spec, principal=principal, catalog=self.environments)
        rendered = render_sbatch(
            spec,
            self.templates,
            run_id=run_id,
            run_dir=run_dir,
            target=admitted.target,
            inputs=[i.check for i in inputs],
            telemetry=telemetry_launch(self.settings),  # the GPU sampler's lines, as the submission has
            environment=launch,
        )
        return admitted, rendered

    def check(self, spec: RunSpec, *, principal: Principal, slurm_test: bool = False) -> RunCheck:
        """Check ``spec`` as a submission by ``principal`` would, without recording or queueing.

        Raises what ``RunService.submit`` raises before it writes (NotFound, Forbidden, SpecError,
        QuotaExceeded); with ``slurm_test``, SubmitRejected when ``sbatch --test-only`` refuses the
        job (Slurm's message) and SlurmUnavailable when Slurm does not answer.
        """
        admitted, rendered = self.render(spec, principal=principal, run_id=CHECK_RUN_ID)
        said = None
        if slurm_test:
            said = self.clusters.get(admitted.cluster).test_only(
                rendered.text, as_user=admitted.os_user, comment=spec.comment, mail_user=spec.mail_user
            )
        ask = Ask.of(spec, walltime_min=admitted.walltime.minutes)
        return RunCheck(
            project=admitted.project.name,
            queue=spec.queue,
            partition=admitted.target.partition,
            account=admitted.target.account,
            qos=spec.qos or admitted.target.qos,
            os_user=admitted.os_user,
            walltime_min=admitted.walltime.minutes,
            walltime_source=admitted.walltime.source,
            gpus=ask.gpus,
            gpu_hours=round(ask.gpu_hours, 3),
            script=rendered.text,
            slurm_test=said,
        )
