"""gw sbatch: #SBATCH lines, refused options, hostile values, and finding the script."""

from __future__ import annotations

import pytest

from gateway.cli.sbatch_options import (
    SUPPORTED_HELP,
    sbatch_to_spec,
    split_gw_sbatch_args,
)
from gateway.core.spec import build_spec
from gateway.errors import SpecError
from tests.unit.sbatch_helpers import CWD, SCRIPT, issues_of, res_of, spec_of, translate, with_directives  # noqa: F401 - shared by the sbatch tests

# Defaults


def test_sbatch_lines_are_read_with_comments_quotes_and_blank_lines():
    script = with_directives(
        "#SBATCH --job-name=from-script",
        "",
        "# an ordinary comment",
        "#SBATCH -p gpu -c 4   # trailing comment",
        '#SBATCH --output="logs/o.txt"',
        "   # indented comment",
        "#SBATCH --mem=1G#no space before the comment",
    )
    spec = translate(script=script).spec
    assert (spec["name"], spec["queue"]) == ("from-script", "gpu")
    assert spec["resources"] == {"cpus_per_task": 4, "mem_gb": 1.0}
    assert spec["stdout"] == "/home/alice/exp/logs/o.txt"


def test_command_line_wins_over_sbatch_lines():
    script = with_directives("#SBATCH -J script-name", "#SBATCH --mem=1G", "#SBATCH -t 10")
    spec = translate(["--job-name=cli-name", "--mem", "8G"], script=script).spec
    assert spec["name"] == "cli-name"
    assert spec["resources"] == {"mem_gb": 8.0, "walltime_min": 10}


def test_command_line_value_replaces_a_bad_script_value():
    script = with_directives("#SBATCH --mem=lots")
    assert res_of("--mem=2G", script=script) == {"mem_gb": 2.0}


def test_sbatch_lines_after_the_first_command_are_ignored():
    script = with_directives("#SBATCH -J early", body="echo start\n#SBATCH -J late\n#SBATCH --exclusive\n")
    assert spec_of(script=script)["name"] == "early"


def test_indented_sbatch_line_is_a_comment_not_a_directive():
    assert spec_of(script=with_directives("  #SBATCH -J indented"))["name"] == "train.sh"


def test_unbalanced_quote_in_sbatch_line_is_reported():
    found = issues_of(script=with_directives('#SBATCH -J "open'))
    assert "#SBATCH line 2" in found


def test_stray_word_in_sbatch_line_is_reported():
    assert "#SBATCH line 2" in issues_of(script=with_directives("#SBATCH gpu"))


# Refusals: unsupported options, missing and bad values, all at once


@pytest.mark.parametrize(
    ("argv", "path"),
    [
        (["--exclusive"], "option --exclusive"),
        (["--constraint=a100"], "option --constraint"),
        (["-C", "a100"], "option -C"),
        (["-w", "node1"], "option -w"),
        (["--nodelist", "node1"], "option --nodelist"),
        (["--dependency=afterok:1"], "option --dependency"),
        (["--qos", "high"], "option --qos"),
        (["--wrap", "echo hi"], "option --wrap"),
        (["--mail-user=a@b"], "option --mail-user"),
        (["--begin=now+1h"], "option --begin"),
        (["--requeue"], "option --requeue"),
        (["--mem-per-cpu=1G"], "option --mem-per-cpu"),
        (["--gpus=2"], "option --gpus"),
        (["--job"], "option --job"),  # no prefix matching: only exact names
    ],
)
def test_unsupported_options_are_refused_by_name_with_the_supported_list(argv, path):
    found = issues_of(argv)
    assert list(found) == [path]
    assert found[path].startswith("not supported by gw sbatch; supported: ")
    assert "-J/--job-name" in found[path] and "--parsable" in found[path]


def test_supported_list_names_every_option():
    for option in ["-p/--partition", "-N/--nodes", "-t/--time", "--mem", "--gres", "-a/--array", "--export"]:
        assert option in SUPPORTED_HELP


def test_unsupported_option_in_script_says_which_line():
    found = issues_of(script=with_directives("#SBATCH -J ok", "#SBATCH --exclusive"))
    assert list(found) == ["#SBATCH line 3: --exclusive"]


@pytest.mark.parametrize("option", ["-J", "--job-name", "-p", "--mem", "-t", "--array", "--export"])
def test_missing_value_names_the_option(option):
    assert issues_of([option]) == {f"option {option}": "needs a value"}


@pytest.mark.parametrize(
    ("argv", "path", "words"),
    [
        (["-N", "abc"], "option -N", "node count"),
        (["-N", "1-4"], "option -N", "node ranges are not supported"),
        (["-N", "0"], "option -N", "node count"),
        (["-n", "x"], "option -n", "task count"),
        (["-c", "0"], "option -c", "CPUs per task"),
        (["--ntasks-per-node=-1"], "option --ntasks-per-node", "tasks per node"),
        (["--gpus-per-node=lots:x"], "option --gpus-per-node", "TYPE:N"),
        (["--gpus-per-node=99"], "option --gpus-per-node (resources.gpus_per_node)", "less than or equal"),
        (["-c", "9999"], "option -c (resources.cpus_per_task)", "less than or equal"),
    ],
)
def test_malformed_counts_name_option_value_and_form(argv, path, words):
    with pytest.raises(SpecError) as info:
        sbatch_to_spec(argv, SCRIPT, script_name="t.sh", cwd=CWD, environ={})
    (issue,) = info.value.issues
    assert issue.path == path and words in issue.message
    assert str(issue.value) == argv[-1].split("=")[-1]


def test_more_than_one_node_keeps_sbatch_semantics():
    request = sbatch_to_spec(["-N", "2"], SCRIPT, script_name="t.sh", cwd=CWD, environ={})
    assert request.spec["resources"]["nodes"] == 2 and request.spec["launcher"] == "single"


def test_ntasks_must_agree_with_tasks_per_node():
    assert "disagrees" in issues_of(["-n", "4", "--ntasks-per-node=2"])["option -n"]


def test_spec_limits_are_reported_against_the_option():
    found = issues_of(["--mem=5T", "-t", "31-0"])
    assert found.keys() == {"option --mem (resources.mem_gb)", "option -t (resources.walltime_min)"}
    assert "less than or equal to 4096" in found["option --mem (resources.mem_gb)"]


def test_all_problems_are_collected_at_once():
    script = with_directives("#SBATCH --exclusive", "#SBATCH --mem=lots")
    found = issues_of(["--qos=high", "-t", "1:2:3:4", "--gres=fpga:1", "-J", "bad name", "-w", "n1"], script)
    assert set(found) == {
        "#SBATCH line 2: --exclusive",
        "#SBATCH line 3: --mem",
        "option --qos",
        "option -t",
        "option --gres",
        "option -J (name)",
        "option -w",
    }


@pytest.mark.parametrize(
    ("argv", "path"),
    [
        (["-J", "a'; touch /tmp/x"], "option -J (name)"),
        (["-J", "x\ny"], "option -J (name)"),
        (["-p", "$(reboot)"], "option -p (queue)"),
        (["-A", "../../etc"], "option -A (project)"),
        (["-o", "out file;rm -rf ~"], "option -o (stdout)"),
        (["-e", "`id`.log"], "option -e (stderr)"),
        (["-D", "dir\nwith-newline"], "option -D (workdir)"),
        (["--export=X=a\x00b"], "option --export (env)"),
    ],
)
def test_hostile_values_are_spec_errors_not_crashes(argv, path):
    assert path in issues_of(argv)


def test_hostile_values_in_sbatch_lines_are_spec_errors():
    found = issues_of(script=with_directives('#SBATCH -J "a\'; touch /tmp/x"'))
    assert "#SBATCH line 2: -J (name)" in found


def test_hostile_script_args_and_script_are_spec_errors():
    with pytest.raises(SpecError) as info:
        sbatch_to_spec([], SCRIPT, script_name="t.sh", cwd=CWD, environ={}, script_args=["a\x00b"])
    assert [i.path for i in info.value.issues] == ["script_args"]
    assert "script" in issues_of(script="#!/bin/sh\necho \x00\n")


# Splitting the gw sbatch command line


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["run.sh"], ([], "run.sh", [])),
        (["-J", "x", "run.sh", "a", "b"], (["-J", "x"], "run.sh", ["a", "b"])),
        (["-Jx", "--mem=4G", "run.sh"], (["-Jx", "--mem=4G"], "run.sh", [])),
        (["--mem", "4G", "run.sh", "-J", "--mem=1"], (["--mem", "4G"], "run.sh", ["-J", "--mem=1"])),
        (["--parsable", "run.sh", "--parsable"], (["--parsable"], "run.sh", ["--parsable"])),
        (["--qos", "high", "run.sh"], (["--qos", "high"], "run.sh", [])),
        (["--exclusive", "run.sh"], (["--exclusive"], "run.sh", [])),
        (["-w", "n1", "-H", "run.sh"], (["-w", "n1", "-H"], "run.sh", [])),
        (["-J", "x", "--", "-odd.sh", "y"], (["-J", "x", "--"], "-odd.sh", ["y"])),
    ],
)
def test_split_finds_the_script(args, expected):
    assert split_gw_sbatch_args(args) == expected


@pytest.mark.parametrize("args", [[], ["-J", "x"], ["-J"], ["--mem", "4G", "--parsable"]])
def test_split_without_a_script_is_a_clear_error(args):
    with pytest.raises(SpecError) as info:
        split_gw_sbatch_args(args)
    (issue,) = info.value.issues
    assert "no batch script" in issue.message and "SCRIPT" in issue.message


def test_split_then_translate_end_to_end():
    options, script_path, script_args = split_gw_sbatch_args(
        ["-p", "gpu", "--gres=gpu:1", "-t", "1-00:00", "job.sh", "--epochs", "3"]
    )
    assert script_path == "job.sh"
    script = with_directives("#SBATCH -p cpu", "#SBATCH --mem=16G")
    result = translate(options, script=script, script_name=script_path, script_args=script_args)
    run = build_spec(result.spec)
    assert (run.name, run.queue, run.script_args) == ("job.sh", "gpu", ["--epochs", "3"])
    assert (run.resources.gpus_per_node, run.resources.mem_gb, run.resources.walltime_min) == (1, 16.0, 1440)
