"""RunSpec validation: good specs load, bad ones say where, what and what is valid."""

from __future__ import annotations

import json

import pytest

from gateway.adapters.files import load_spec_file
from gateway.core.spec.run_spec import MAX_ARRAY_TASKS, build_spec, parse_spec
from gateway.errors import SpecError

BASE = {"name": "train", "project": "vision", "queue": "cpu", "command": "python train.py"}


def spec_with(**changes):
    data = {**BASE, **changes}
    return parse_spec(json.dumps(data))


def issues_of(**changes) -> dict[str, str]:
    with pytest.raises(SpecError) as info:
        spec_with(**changes)
    return {issue.path: issue.message for issue in info.value.issues}


def test_minimal_spec_gets_defaults():
    spec = spec_with()
    assert spec.resources.nodes == 1
    assert spec.resources.mem_mb == 1024
    assert spec.launcher == "single"
    assert spec.params == {}


def test_yaml_and_json_give_the_same_spec_and_hash():
    yaml_text = "name: train\nproject: vision\nqueue: cpu\ncommand: python train.py\n"
    assert parse_spec(yaml_text).spec_hash() == spec_with().spec_hash()


def test_hash_changes_with_any_field():
    assert spec_with().spec_hash() != spec_with(params={"lr": 0.1}).spec_hash()


def test_unknown_field_is_refused_with_valid_fields_listed():
    found = issues_of(gpus=4)
    assert "gpus" in found
    assert "unknown field" in found["gpus"] and "resources" in found["gpus"]


def test_unknown_nested_field_names_its_path():
    found = issues_of(resources={"gpu": 2})
    assert found["resources.gpu"] == "unknown field; did you mean `gpus`?"
    found = issues_of(resources={"vram": 2})  # close to no field: the fields are listed
    assert "gpus_per_node" in found["resources.vram"]


def test_error_carries_bad_value_and_range():
    with pytest.raises(SpecError) as info:
        spec_with(resources={"mem_gb": -2})
    (issue,) = info.value.issues
    assert issue.path == "resources.mem_gb"
    assert issue.value == -2
    assert "greater than or equal to 0" in issue.message
    assert "resources.mem_gb" in str(info.value) and "-2" in str(info.value)


def test_every_problem_is_reported_at_once():
    found = issues_of(name="bad name!", queue="", resources={"nodes": 0, "walltime_min": "x"})
    assert {"name", "queue", "resources.nodes", "resources.walltime_min"} <= set(found)


@pytest.mark.parametrize(
    "name",
    ["a'; touch /tmp/pwned", "$(id)", "`id`", "a\nb", "é", "x" * 64, "-leading-dash", ""],
)
def test_hostile_or_odd_names_are_refused(name):
    found = issues_of(name=name)
    assert "name" in found


def test_command_or_script_exactly_one():
    found = issues_of(script="#!/bin/sh\necho hi\n")
    assert "" in found and "exactly one of 'command' or 'script'" in found[""]
    with pytest.raises(SpecError):
        parse_spec(json.dumps({k: v for k, v in BASE.items() if k != "command"}))


def test_argv_command_words_become_text():
    spec = spec_with(command=["python", "train.py", "--epochs", 3])
    assert spec.command == ["python", "train.py", "--epochs", "3"]


def test_env_names_checked_and_reserved_prefixes_refused():
    assert "env" in issues_of(env={"1BAD": "x"})
    assert "reserved" in issues_of(env={"SLURM_JOB_ID": "1"})["env"]
    assert "reserved" in issues_of(env={"GW_RUN_ID": "1"})["env"]
    assert spec_with(env={"HF_HOME": "/data/hf", "NOTE": "a'; rm -rf / #"}).env["HF_HOME"] == "/data/hf"


def test_nul_bytes_and_oversized_values_refused():
    assert "NUL" in issues_of(env={"A": "x\x00y"})["env"]
    assert "at most" in issues_of(command="x" * 70_000)["command"]


def test_workdir_must_be_absolute_and_single_line():
    assert "absolute" in issues_of(workdir="relative/dir")["workdir"]
    assert "control character" in issues_of(workdir="/tmp/a\nb")["workdir"]


def test_params_must_be_json():
    with pytest.raises(SpecError) as info:
        build_spec({**BASE, "params": {"lr": float("nan")}})
    assert info.value.issues[0].path == "params"
    assert "at most" in issues_of(params={"blob": "x" * 70_000})["params"]


def test_gpu_type_needs_gpus_and_a_clean_name():
    assert "gpus_per_node" in issues_of(resources={"gpu_type": "a100"})["resources"]
    assert "resources.gpu_type" in issues_of(resources={"gpus_per_node": 1, "gpu_type": "A100; x"})


def test_multi_node_launchers():
    # 'single' on several nodes is sbatch's own model: the command runs on the first node.
    assert spec_with(resources={"nodes": 2}).resources.nodes == 2
    assert spec_with(resources={"nodes": 2}, launcher="torchrun").resources.nodes == 2
    assert "launcher" in issues_of(launcher="mpirun")


def test_sweep_list_and_grid():
    listed = spec_with(sweep={"params": [{"lr": 0.1}, {"lr": 0.2}]})
    assert listed.sweep.expand() == [{"lr": 0.1}, {"lr": 0.2}]
    grid = spec_with(sweep={"grid": {"lr": [0.1, 0.2], "bs": [8, 16]}, "max_parallel": 2})
    assert grid.sweep.expand() == [
        {"lr": 0.1, "bs": 8},
        {"lr": 0.1, "bs": 16},
        {"lr": 0.2, "bs": 8},
        {"lr": 0.2, "bs": 16},
    ]


def test_sweep_shape_errors():
    assert "exactly one" in issues_of(sweep={})["sweep"]
    assert "at most" in issues_of(sweep={"grid": {"a": list(range(MAX_ARRAY_TASKS + 1))}})["sweep"]
    assert "no values" in issues_of(sweep={"grid": {"a": [1], "b": []}})["sweep"]
    assert (
        "one node per task" in issues_of(sweep={"params": [{}]}, resources={"nodes": 2}, launcher="srun")[""]
    )


def test_not_a_mapping_and_not_yaml():
    with pytest.raises(SpecError, match="mapping"):
        parse_spec("- a\n- b\n")
    with pytest.raises(SpecError, match="not valid YAML"):
        parse_spec("name: [unclosed")


def test_spec_file_with_script_file(tmp_path):
    (tmp_path / "job.sh").write_text("#!/bin/bash\necho from script\n")
    (tmp_path / "spec.yaml").write_text(
        "name: s\nproject: p\nqueue: cpu\nscript_file: job.sh\nresources: {mem_gb: 0.5}\n"
    )
    spec = load_spec_file(tmp_path / "spec.yaml")
    assert spec.script.startswith("#!/bin/bash")
    assert spec.resources.mem_mb == 512


def test_spec_file_errors_name_the_file(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text("name: s\nproject: p\nqueue: cpu\nscript_file: missing.sh\n")
    with pytest.raises(SpecError) as info:
        load_spec_file(path)
    assert str(path) in str(info.value) and "script_file" in str(info.value)
    with pytest.raises(SpecError, match="cannot read it: No such file") as info:
        load_spec_file(tmp_path / "nope.yaml")
    assert str(tmp_path / "nope.yaml") in str(info.value)


def test_output_patterns_and_script_args():
    spec = spec_with(command=None, script="#!/bin/sh\necho $1\n", script_args=["a b"], stdout="/tmp/o-%j.log")
    assert spec.stdout == "/tmp/o-%j.log" and spec.script_args == ["a b"]
    assert "stdout" in issues_of(stdout="/tmp/o-%q.log")
    assert "stderr" in issues_of(stderr="relative/e.log")
    assert "stdout" in issues_of(stdout="/tmp/$(id).log")
    assert "script_args" in issues_of(script_args=["x"])[""]


def test_sweep_indices():
    spec = spec_with(sweep={"params": [{"a": 1}, {"a": 2}], "indices": [3, 7]})
    assert spec.sweep.task_indices() == [3, 7]
    assert "2 param sets" in issues_of(sweep={"params": [{}, {}], "indices": [1]})["sweep"]
    assert "repeat" in issues_of(sweep={"params": [{}, {}], "indices": [1, 1]})["sweep"]


def test_sweep_runs_with_the_single_launcher_only():
    found = issues_of(sweep={"params": [{}]}, launcher="torchrun")
    assert "launcher 'single'" in found[""]


# -- secrets are no params (issue 26, item 1) ----------------------------------------------------


@pytest.mark.parametrize(
    ("params", "paths"),
    [
        ({"password": "hunter22"}, ["params.password"]),
        ({"api_token": "t0k3n", "lr": 0.1}, ["params.api_token"]),
        ({"hfToken": "x"}, ["params.hfToken"]),
        ({"db": {"passwd": "x"}}, ["params.db.passwd"]),
        (
            {"AWS_SECRET_ACCESS_KEY": "x", "private-key": "y"},
            ["params.AWS_SECRET_ACCESS_KEY", "params.private-key"],
        ),
    ],
)
def test_params_whose_names_look_secret_are_refused_pointing_to_secrets_without_echoing(params, paths):
    from gateway.core.spec.run_spec import build_spec
    from gateway.errors import SpecError

    with pytest.raises(SpecError) as refused:
        build_spec({"name": "a", "project": "p", "queue": "q", "command": "true", "params": params})
    (issue,) = refused.value.issues
    assert issue.path == "params" and issue.value is None
    for path in paths:
        assert path in issue.message
    assert "docs/run-spec.md#secrets" in issue.message
    for value in ("hunter22", "t0k3n"):
        assert value not in str(refused.value)


def test_a_sweep_cannot_carry_a_secret_looking_param_either():
    from gateway.core.spec.run_spec import build_spec
    from gateway.errors import SpecError

    with pytest.raises(SpecError, match="sweep.params.0.token"):
        build_spec(
            {
                "name": "a",
                "project": "p",
                "queue": "q",
                "command": "true",
                "sweep": {"params": [{"token": "x"}]},
            }
        )


def test_ordinary_params_that_only_contain_such_words_are_kept():
    from gateway.core.spec.run_spec import RunSpec, build_spec

    ok = {"max_tokens": 5, "keyword": "k", "num_keys": 2, "monkey": 1, "lr": 0.1}
    spec = build_spec({"name": "a", "project": "p", "queue": "q", "command": "true", "params": ok})
    assert spec.params == ok
    old = {"name": "a", "project": "p", "queue": "q", "command": "true", "params": {"password": "x"}}
    assert RunSpec.model_validate(old, context={"stored": True}).params == {"password": "x"}  # read back
