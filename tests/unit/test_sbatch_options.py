"""gw sbatch: every option and alias as sbatch(1) of Slurm 22.05 documents it, into a RunSpec."""

from __future__ import annotations

import pytest

from gateway.core.sbatch.context import SubmitTarget
from gateway.core.sbatch.render import render_sbatch
from gateway.core.sbatch.table import OPTIONS, PASS_PATTERNS, REFUSED, lookup_long
from gateway.core.sbatch.templates import build_template_env
from gateway.core.spec.run_spec import build_spec
from tests.unit.sbatch_helpers import CWD, SCRIPT, issues_of, res_of, spec_of, translate, with_directives


def test_defaults_are_sbatchs_own():
    spec = translate().spec
    assert spec["semantics"] == "sbatch" and spec["workdir"] == CWD and spec["submit_dir"] == CWD
    # man sbatch: "By default both standard output and standard error are directed to slurm-%j.out"
    assert spec["stdout"] == f"{CWD}/slurm-%j.out" and "stderr" not in spec
    # nothing the script did not ask for: Slurm's defaults (DefMemPerCPU, one task, ...)
    res = build_spec(spec).resources
    assert (res.nodes, res.tasks_per_node, res.cpus_per_task, res.mem_gb) == (None, None, None, None)
    assert spec["name"] == "train.sh"


def test_array_default_output_is_slurm_A_a():
    assert spec_of("--array=[0-4]")["stdout"] == f"{CWD}/slurm-%A_%a.out"
    assert spec_of("--array=[0-4]")["sweep"]["indices"] == [0, 1, 2, 3, 4]


def test_chdir_moves_workdir_and_default_output_but_not_the_submit_dir():
    spec = spec_of("-D", "sub")
    assert spec["workdir"] == f"{CWD}/sub" and spec["submit_dir"] == CWD
    assert spec["stdout"] == f"{CWD}/sub/slurm-%j.out"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["-n", "4", "-c", "2"], {"ntasks": 4, "cpus_per_task": 2, "nodes": None, "tasks_per_node": None}),
        (["--ntasks-per-node=2"], {"tasks_per_node": 2}),
        (["--tasks-per-node=2"], {"tasks_per_node": 2}),  # documented alias
        (["--tasks=2"], {"tasks_per_node": 2}),  # getopt: unique prefix of --tasks-per-node
        (["--mem=1GB"], {"mem_gb": 1.0}),
        (["--mem=0"], {"mem_gb": 0.0}),
        (["--mem=512"], {"mem_gb": 0.5}),
        (["--mem-per-cpu=2G"], {"mem_per_cpu_mb": 2048, "mem_gb": None}),
        (["--mem-per-gpu=1000", "--gpus=1"], {"mem_per_gpu_mb": 1000, "gpus": 1}),
        (["--gres=gpu:4"], {"gpus_per_node": 4}),
        (["--gres=gpu:A100:2"], {"gpus_per_node": 2, "gpu_type": "a100"}),
        (["--gpus-per-node=A100:1"], {"gpus_per_node": 1, "gpu_type": "a100"}),
        (["-G", "2"], {"gpus": 2}),
        (["--gpus-per-task=1", "-n", "2"], {"gpus_per_task": 1, "ntasks": 2}),
        (["--cpus-per-gpu=2", "--gpus=1"], {"cpus_per_gpu": 2, "cpus_per_task": None}),
        (["-N", "2-2"], {"nodes": 2}),
    ],
)
def test_resource_options(argv, expected):
    res = res_of(*argv)
    for key, value in expected.items():
        assert res.get(key) == value, key


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("30", 30),
        ("0:30", 1),
        ("10:00", 10),
        ("1:00:00", 60),
        ("2-0", 2880),
        ("1-1:30", 1530),
        ("1-0:0:30", 1441),
    ],
)
def test_every_time_form(text, minutes):
    assert res_of("-t", text)["walltime_min"] == minutes


def test_modelled_top_level_options():
    spec = spec_of(
        "-q", "normal", "-d", "afterok:12:13", "--signal=B:USR1@90", "--no-requeue", "-H", "--comment=x y"
    )
    assert (spec["qos"], spec["dependency"], spec["signal"]) == ("normal", "afterok:12:13", "B:USR1@90")
    assert spec["requeue"] is False and spec["hold"] is True and spec["comment"] == "x y"


def test_passed_options_are_recorded_verbatim():
    spec = spec_of(
        "--mail-type=end,FAIL", "--mail-user=a@b.org", "-C", "a100&ib", "--exclusive", "--hint=nomultithread"
    )
    assert spec["slurm_options"] == {
        "constraint": "a100&ib", "exclusive": None, "hint": "nomultithread", "mail-type": "end,FAIL",
    }  # fmt: skip
    assert spec["mail_user"] == "a@b.org"  # an argument of sbatch, not a line of the script


@pytest.mark.parametrize("value", ["<YourNetID>@site.edu", "a;rm -rf /", "first.last@uni-x.de", "$(id)"])
def test_mail_user_is_any_line_of_text_as_sbatch_takes_it(value):
    spec = spec_of(f"--mail-user={value}")
    assert spec["mail_user"] == value and "mail-user" not in spec.get("slurm_options", {})
    text = render_sbatch(
        build_spec(spec), build_template_env(), run_id="r-1", run_dir="/r", target=SubmitTarget("cpu")
    ).text
    assert value not in text  # never in the script: sbatch gets it as one argument


def test_a_mail_user_that_is_no_address_is_warned_about():
    from gateway.core.spec.slurm_fields import mail_user_warning

    assert mail_user_warning("<YourNetID>@site.edu") == (
        "--mail-user '<YourNetID>@site.edu' is not a mail address; Slurm takes it as given"
    )
    assert mail_user_warning("first.last@uni-x.de") is None and mail_user_warning("alice") is None


def test_job_names_with_spaces_reach_slurm_quoted():
    spec = spec_of("-J", "my job")
    assert spec["slurm_job_name"] == "my job" and spec["name"] == "my-job"
    text = render_sbatch(
        build_spec(spec), build_template_env(), run_id="r-1", run_dir="/r", target=SubmitTarget("cpu")
    ).text
    assert '#SBATCH --job-name="my job"' in text and "#SBATCH --chdir=/home/alice/exp" in text
    assert "--error" not in text and "--mem" not in text and "--nodes" not in text


@pytest.mark.parametrize("option", sorted(REFUSED))
def test_refused_options_say_why(option):
    value = [] if OPTIONS[option].arg == "none" else ["x"]
    found = issues_of([f"--{option}", *value])
    assert any(f"--{option}" in path and "refused" in msg for path, msg in found.items())


def test_ambiguous_and_unknown_options_are_named():
    assert "ambiguous" in issues_of(["--mail=END"])["option --mail"]
    assert "not an sbatch option" in issues_of(["--workdir=/tmp"])["option --workdir"]
    assert lookup_long("nod")[0] is None and lookup_long("open")[0].name == "open-mode"


def test_hostile_passed_values_are_refused():
    found = issues_of(["--mail-type=a;rm -rf /"])
    assert "passes to Slurm" in found["option --mail-type"]
    assert "control characters" in issues_of(["--mail-user=a\nb"])["option --mail-user (mail_user)"]


def test_every_passed_option_has_a_pattern():
    passed = {n for n, o in OPTIONS.items() if o.handling == "pass" and not o.canonical}
    # mail-user: modelled now (mail_user), still read back from specs that passed it verbatim
    assert passed | {"mail-user"} == set(PASS_PATTERNS)


def test_a_spec_recorded_with_mail_user_in_slurm_options_still_reads_back():
    spec = build_spec({**spec_of(), "slurm_options": {"mail-user": "a@b.org"}})
    assert spec.slurm_options == {"mail-user": "a@b.org"}


def test_no_account_is_an_account_issue():
    assert "-A" in issues_of(environ={})["account"]


def test_wrap_makes_sbatchs_script():
    spec = translate(["--wrap", "echo hi"], script=None, script_name=None).spec
    assert spec["script"].startswith("#!/bin/sh\n") and spec["script"].endswith("echo hi\n")
    assert spec["name"] == "wrap"


def test_stdin_script_is_named_sbatch():
    assert translate(script=SCRIPT, script_name=None).spec["name"] == "sbatch"


def test_spec_errors_name_the_sbatch_line():
    found = issues_of(script=with_directives("#SBATCH --mem=1G", "#SBATCH --mem-per-cpu=1G"))
    assert any(path.startswith("#SBATCH line") for path in found)


def test_client_flags():
    result = translate(["--parsable", "--test-only", "-W", "-Q", "-M", "gwlocal"])
    assert (result.parsable, result.test_only, result.wait, result.quiet, result.cluster) == (
        True, True, True, True, "gwlocal",
    )  # fmt: skip


def test_cluster_is_sbatchs_own_alias_of_clusters():
    # sbatch 22.05's option table has --cluster beside --clusters: not an ambiguous prefix
    result = translate(["--cluster=gwlocal"])
    assert result.cluster == "gwlocal" and result.spec["slurm_options"] == {"clusters": "gwlocal"}
    assert "ambiguous" in issues_of(["--clu=x"])["option --clu"]


def test_paths_are_joined_as_sbatch_writes_them():
    # sbatch -D . gives WorkDir=<submit dir>/. and StdOut=<submit dir>/./slurm-N.out
    spec = spec_of("-D", ".", "-e", "./err.txt")
    assert spec["workdir"] == f"{CWD}/." and spec["stdout"] == f"{CWD}/./slurm-%j.out"
    assert spec["stderr"] == f"{CWD}/././err.txt"
    assert spec_of("-o", "/abs/out.txt")["stdout"] == "/abs/out.txt"
