"""Shared values and helpers of the gw sbatch option tests."""

from __future__ import annotations

import pytest

from gateway.core.sbatch.options import SbatchRequest, sbatch_to_spec
from gateway.core.spec.run_spec import build_spec
from gateway.errors import SpecError

SCRIPT = "#!/bin/bash\necho hello\n"
CWD = "/home/alice/exp"


def translate(
    argv=(), script=SCRIPT, *, environ=None, script_name="train.sh", script_args=()
) -> SbatchRequest:
    result = sbatch_to_spec(
        list(argv),
        script,
        script_name=script_name,
        cwd=CWD,
        environ={"GW_PROJECT": "default"} if environ is None else environ,
        script_args=list(script_args),
    )
    build_spec(result.spec)  # every result must be a valid RunSpec
    return result


def spec_of(*argv, **kwargs) -> dict:
    return translate(argv, **kwargs).spec


def res_of(*argv, **kwargs) -> dict:
    return translate(argv, **kwargs).spec["resources"]


def issues_of(argv=(), script=SCRIPT, environ=None) -> dict[str, str]:
    with pytest.raises(SpecError) as info:
        sbatch_to_spec(
            list(argv),
            script,
            script_name="train.sh",
            cwd=CWD,
            environ={"GW_PROJECT": "default"} if environ is None else environ,
        )
    return {issue.path: issue.message for issue in info.value.issues}


def with_directives(*lines: str, body: str = "python train.py\n") -> str:
    return "#!/bin/bash\n" + "".join(f"{line}\n" for line in lines) + body
