"""Render run specs into sbatch scripts.

``render_sbatch(spec, env, target=...)`` is a pure function of its
arguments: the Jinja2 environment is built once (``build_template_env`` in
``templates.py``) and passed in. The rendered text and its sha256 are what
gets submitted and recorded. What the template is given (its ``run``) is
built in ``context.py``; the template, its filters and its version come from
``templates.py``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import jinja2

from gateway import __version__
from gateway.core import names
from gateway.core.accounting.telemetry import TelemetryLaunch
from gateway.core.envs.record import EnvLaunch
from gateway.core.sbatch import preflight
from gateway.core.sbatch.context import SubmitTarget, run_context
from gateway.core.sbatch.templates import template_for, template_version
from gateway.core.spec.run_spec import RunSpec
from gateway.errors import SpecError, SpecIssue, TemplateError


@dataclass(frozen=True)
class RenderedScript:
    text: str
    sha256: str
    template_name: str
    template_version: str


def render_sbatch(
    spec: RunSpec,
    env: jinja2.Environment,
    *,
    run_id: str,
    run_dir: str,
    target: SubmitTarget,
    template: str | None = None,
    inputs: Sequence[preflight.InputCheck] = (),
    telemetry: TelemetryLaunch | None = None,
    environment: EnvLaunch | None = None,
) -> RenderedScript:
    """Render ``spec`` into an sbatch script for ``run_id``.

    ``run_dir`` (chosen by the gateway) receives the job's output and params
    files; ``target`` names the partition, account and QoS of the queue;
    ``inputs`` are the spec's registered datasets, resolved by the gateway;
    ``environment`` the registered environment it names, resolved and pinned.
    Raises SpecError for a value that cannot go into a script, TemplateError
    for a missing or broken template.
    """
    if not names.NAME.fullmatch(run_id):
        raise SpecError([SpecIssue("run_id", f"not a valid run id; use {names.NAME_HELP}", run_id)])
    if not names.SAFE_PATH.fullmatch(run_dir):
        raise SpecError([SpecIssue("run_dir", names.SAFE_PATH_HELP, run_dir)])
    name = template or template_for(spec)
    version = template_version(env, name)
    context = run_context(
        spec,
        run_id=run_id,
        run_dir=run_dir,
        target=target,
        inputs=inputs,
        telemetry=telemetry,
        environment=environment,
    )
    context.update(template_name=name, template_version=version, gateway_version=__version__)
    try:
        text = env.get_template(name).render(run=context)
    except jinja2.TemplateError as exc:
        raise TemplateError(f"sbatch template {name!r} failed to render: {exc}") from exc
    return RenderedScript(
        text=text,
        sha256=hashlib.sha256(text.encode()).hexdigest(),
        template_name=name,
        template_version=version,
    )
