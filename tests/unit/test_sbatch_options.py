"""gw sbatch: sbatch options and #SBATCH lines become a RunSpec, or one SpecError that says everything."""

from __future__ import annotations

import pytest

from gateway.core.spec import build_spec
from tests.unit.sbatch_helpers import CWD, SCRIPT, issues_of, res_of, spec_of, translate, with_directives  # noqa: F401 - shared by the sbatch tests

# Defaults


def test_defaults_mirror_sbatch_and_validate():
    result = translate()
    assert result.parsable is False
    assert result.spec == {
        "name": "train.sh",
        "project": "default",
        "queue": "cpu",
        "script": SCRIPT,
        "script_args": [],
        "launcher": "single",
        "workdir": CWD,
        "resources": {},
    }
    run = build_spec(result.spec)
    assert run.resources.nodes == 1 and run.sweep is None


def test_queue_and_project_defaults_come_from_environment():
    spec = spec_of(environ={"GW_DEFAULT_QUEUE": "gpu", "GW_PROJECT": "vision"})
    assert (spec["queue"], spec["project"]) == ("gpu", "vision")


def test_script_args_go_into_the_spec():
    assert spec_of(script_args=["--lr", "0.1", "a b"])["script_args"] == ["--lr", "0.1", "a b"]


@pytest.mark.parametrize(
    ("script_name", "expected"),
    [
        ("train.sh", "train.sh"),
        ("my job (v2).sh", "my-job--v2-.sh"),
        ("_hidden.sh", "hidden.sh"),
        ("ünïcode.sh", "n-code.sh"),
        ("x" * 100, "x" * 63),
        ("???", "sbatch"),
        ("", "sbatch"),
    ],
)
def test_default_name_is_the_sanitised_script_name(script_name, expected):
    assert spec_of(script_name=script_name)["name"] == expected


def test_script_without_shebang_is_refused_like_sbatch():
    found = issues_of(script="echo hi\n")
    assert "#!" in found["script"]


# Every supported option, short and long, joined and separate


@pytest.mark.parametrize(
    ("argv", "field", "expected"),
    [
        (["-J", "exp1"], "name", "exp1"),
        (["-Jexp1"], "name", "exp1"),
        (["--job-name=exp1"], "name", "exp1"),
        (["--job-name", "exp1"], "name", "exp1"),
        (["-p", "gpu"], "queue", "gpu"),
        (["-pgpu"], "queue", "gpu"),
        (["--partition=gpu"], "queue", "gpu"),
        (["--partition", "gpu"], "queue", "gpu"),
        (["-A", "vision"], "project", "vision"),
        (["--account=vision"], "project", "vision"),
        (["--account", "vision"], "project", "vision"),
        (["-D", "/data/run"], "workdir", "/data/run"),
        (["--chdir=sub/dir"], "workdir", "/home/alice/exp/sub/dir"),
        (["--chdir", "../other"], "workdir", "/home/alice/other"),
        (["-o", "/logs/%j.out"], "stdout", "/logs/%j.out"),
        (["--output=out-%A_%a.log"], "stdout", "/home/alice/exp/out-%A_%a.log"),
        (["-e", "err.log"], "stderr", "/home/alice/exp/err.log"),
        (["--error", "/logs/%x.err"], "stderr", "/logs/%x.err"),
    ],
)
def test_top_level_options(argv, field, expected):
    assert spec_of(*argv)[field] == expected


def test_relative_output_follows_chdir_not_cwd():
    spec = spec_of("-D", "/scratch/run", "-o", "logs/out.txt", "-e", "err.txt")
    assert spec["stdout"] == "/scratch/run/logs/out.txt"
    assert spec["stderr"] == "/scratch/run/err.txt"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["-N", "1"], {}),
        (["-N1"], {}),
        (["--nodes=1-1"], {}),
        (["-n", "4"], {"tasks_per_node": 4}),
        (["--ntasks=4"], {"tasks_per_node": 4}),
        (["--ntasks-per-node", "8"], {"tasks_per_node": 8}),
        (["--ntasks-per-node=8", "-n", "8"], {"tasks_per_node": 8}),
        (["-c", "6"], {"cpus_per_task": 6}),
        (["-c6"], {"cpus_per_task": 6}),
        (["--cpus-per-task=6"], {"cpus_per_task": 6}),
        (["-t", "90"], {"walltime_min": 90}),
        (["--time=90"], {"walltime_min": 90}),
        (["--mem", "4G"], {"mem_gb": 4.0}),
        (["--gres=gpu:2"], {"gpus_per_node": 2}),
        (["--gres", "gpu:a100:2"], {"gpus_per_node": 2, "gpu_type": "a100"}),
        (["--gpus-per-node=3"], {"gpus_per_node": 3}),
        (["--gpus-per-node", "h100:4"], {"gpus_per_node": 4, "gpu_type": "h100"}),
    ],
)
def test_resource_options(argv, expected):
    assert res_of(*argv) == expected


def test_parsable_flag():
    assert translate(["--parsable"]).parsable is True
    assert "takes no value" in issues_of(["--parsable=yes"])["option --parsable"]


@pytest.mark.parametrize("argv", [["-a", "0-4"], ["-a0-4"], ["--array=0-4"], ["--array", "0-4"]])
def test_array_short_and_long(argv):
    assert spec_of(*argv)["sweep"]["indices"] == [0, 1, 2, 3, 4]


# Times, memory, gres, arrays, exports


@pytest.mark.parametrize(
    ("value", "minutes"),
    [
        ("30", 30),
        ("30:00", 30),
        ("30:01", 31),  # seconds round up
        ("0:30", 1),  # at least one minute
        ("2:30:00", 150),
        ("1:00:59", 61),
        ("1-0", 1440),
        ("2-12", 60 * 60),
        ("1-02:30", 24 * 60 + 150),
        ("1-02:30:10", 24 * 60 + 151),
    ],
)
def test_every_sbatch_time_format(value, minutes):
    assert res_of("-t", value)["walltime_min"] == minutes


@pytest.mark.parametrize("value", ["UNLIMITED", "infinite", "0"])
def test_no_time_limit_is_refused(value):
    message = issues_of(["-t", value])["option -t"]
    assert "time limit" in message and "days-hours" in message


@pytest.mark.parametrize("value", ["1:2:3:4", "abc", "1-", "-5", "1.5", "1-2:3:4:5", ""])
def test_malformed_times_name_the_valid_forms(value):
    message = issues_of(["--time", value])["option --time"]
    assert "minutes:seconds" in message and "days-hours:minutes:seconds" in message


@pytest.mark.parametrize(
    ("value", "gb"),
    [("500", 500 / 1024), ("1536M", 1.5), ("1536m", 1.5), ("4G", 4.0), ("1T", 1024.0), ("2048K", 2 / 1024)],
)
def test_memory_sizes(value, gb):
    assert res_of(f"--mem={value}")["mem_gb"] == pytest.approx(gb)


def test_kilobytes_round_up_to_whole_megabytes_like_slurm():
    assert build_spec(spec_of("--mem=1K")).resources.mem_mb == 1


@pytest.mark.parametrize("value", ["lots", "4GB", "1.5G", "-1", "4P", ""])
def test_malformed_memory_is_refused(value):
    message = issues_of([f"--mem={value}"])["option --mem"]
    assert "K, M, G or T" in message


def test_zero_memory_means_whole_node_and_is_refused():
    assert "all of a node's memory" in issues_of(["--mem", "0"])["option --mem"]


def test_gres_without_count_means_one_gpu():
    assert res_of("--gres=gpu") == {"gpus_per_node": 1}
    assert res_of("--gres=gpu:v100") == {"gpus_per_node": 1, "gpu_type": "v100"}


@pytest.mark.parametrize("value", ["fpga:1", "gpu:1,tmpfs:10G", "mps:100"])
def test_other_gres_names_are_refused_by_name(value):
    message = issues_of([f"--gres={value}"])["option --gres"]
    assert "is not supported" in message and "gpu:TYPE:N" in message


@pytest.mark.parametrize("value", ["gpu:a100:x", "gpu:1:2:3"])
def test_malformed_gres_is_refused(value):
    assert "gpu:TYPE:N" in issues_of([f"--gres={value}"])["option --gres"]


def test_bad_gpu_type_is_reported_against_its_option():
    found = issues_of(["--gres=gpu:A100:1"])
    assert "option --gres (resources.gpu_type)" in found


def test_gres_and_gpus_per_node_together_are_refused():
    assert "not both" in issues_of(["--gres=gpu:1", "--gpus-per-node=2"])["option --gpus-per-node"]


@pytest.mark.parametrize(
    ("value", "indices", "max_parallel"),
    [
        ("0-4", [0, 1, 2, 3, 4], None),
        ("1,3,5", [1, 3, 5], None),
        ("1-10:2", [1, 3, 5, 7, 9], None),
        ("0-15%4", list(range(16)), 4),
        ("7", [7], None),
        ("5,1-3,2", [1, 2, 3, 5], None),
        ("1,3-9:3%2", [1, 3, 6, 9], 2),
    ],
)
def test_array_syntaxes_become_a_sweep_with_explicit_indices(value, indices, max_parallel):
    sweep = spec_of(f"--array={value}")["sweep"]
    assert sweep["indices"] == indices
    assert sweep["params"] == [{} for _ in indices]
    assert sweep.get("max_parallel") == max_parallel
    run = build_spec(spec_of(f"--array={value}"))
    assert run.sweep.task_indices() == indices  # SLURM_ARRAY_TASK_ID is the user's index


@pytest.mark.parametrize("value", ["a-b", "4-1", "1-10:0", "0-4%0", "0-4%x", "", "1,,2", "0-5000"])
def test_malformed_arrays_are_refused(value):
    assert "option --array" in issues_of([f"--array={value}"])


def test_huge_array_is_refused_without_expanding_it():
    assert "at most" in issues_of(["--array=0-4000000000"])["option --array"]


@pytest.mark.parametrize(
    ("value", "env"),
    [
        ("ALL", None),
        ("all", None),
        ("ALL,LR=0.1", {"LR": "0.1"}),
        ("ALL,LR=0.1,HOME", {"LR": "0.1", "HOME": "/home/alice"}),
        ("LR=0.1,EMPTY=", {"LR": "0.1", "EMPTY": ""}),
        ("EQ=a=b", {"EQ": "a=b"}),
    ],
)
def test_export_forms(value, env):
    assert spec_of(f"--export={value}", environ={"HOME": "/home/alice"}).get("env") == env


def test_export_of_an_unset_variable_is_refused():
    message = issues_of(["--export=ALL,MISSING"])["option --export"]
    assert "MISSING is not set" in message


@pytest.mark.parametrize("value", ["NONE", "none", "NIL"])
def test_export_none_is_refused_with_the_reason(value):
    assert "clean login environment" in issues_of([f"--export={value}"])["option --export"]


def test_export_bad_and_reserved_names_are_refused():
    assert "not a variable name" in issues_of(["--export=1BAD=x"])["option --export"]
    assert "reserved" in issues_of(["--export=SLURM_JOB_ID=1"])["option --export (env)"]


# #SBATCH lines and precedence
