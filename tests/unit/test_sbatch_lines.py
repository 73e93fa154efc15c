"""gw sbatch: #SBATCH lines as sbatch reads them, hostile values, and finding the script.

Restored from the first gw sbatch (``git show d09b298:tests/unit/test_sbatch_lines.py``) and
adapted to sbatch's semantics: options the old version refused are now modelled or passed
(tests/unit/test_sbatch_options.py), so what stays here is how lines are read and what happens
to every hostile value: refused naming its option and line, or, where sbatch takes it, rendered
so that the #SBATCH line carries it literally and nothing in it can run.
"""

from __future__ import annotations

import subprocess

import pytest

from gateway.core.sbatch.context import SubmitTarget
from gateway.core.sbatch.options import sbatch_to_spec, split_gw_sbatch_args
from gateway.core.sbatch.render import render_sbatch
from gateway.core.sbatch.templates import build_template_env
from gateway.core.spec.run_spec import build_spec
from gateway.errors import SpecError
from tests.unit.sbatch_helpers import CWD, SCRIPT, issues_of, res_of, spec_of, translate, with_directives

# How #SBATCH lines are read


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
    assert (spec["resources"]["cpus_per_task"], spec["resources"]["mem_gb"]) == (4, 1.0)
    assert spec["stdout"] == f"{CWD}/logs/o.txt"


def test_command_line_wins_over_sbatch_lines():
    script = with_directives("#SBATCH -J script-name", "#SBATCH --mem=1G", "#SBATCH -t 10")
    spec = translate(["--job-name=cli-name", "--mem", "8G"], script=script).spec
    assert spec["name"] == "cli-name"
    assert (spec["resources"]["mem_gb"], spec["resources"]["walltime_min"]) == (8.0, 10)


def test_command_line_value_replaces_a_bad_script_value():
    assert res_of("--mem=2G", script=with_directives("#SBATCH --mem=lots"))["mem_gb"] == 2.0


def test_repeated_mail_type_adds_up_as_in_sbatch():
    script = with_directives("#SBATCH --mail-type=END", "#SBATCH --mail-type=FAIL")
    assert translate(script=script).spec["slurm_options"]["mail-type"] == "END,FAIL"


def test_sbatch_lines_after_the_first_command_are_ignored():
    script = with_directives("#SBATCH -J early", body="echo start\n#SBATCH -J late\n#SBATCH --uid=0\n")
    assert spec_of(script=script)["name"] == "early"  # and the --uid after it is not even seen


def test_a_line_starting_with_a_word_ends_the_directives():
    script = with_directives("#SBATCH -J early", "!#SBATCH -J bang", "#SBATCH -J late")
    assert spec_of(script=script)["name"] == "early"


def test_indented_sbatch_line_is_a_comment_not_a_directive():
    assert spec_of(script=with_directives("  #SBATCH -J indented"))["name"] == "train.sh"


def test_unbalanced_quote_in_sbatch_line_is_reported():
    found = issues_of(script=with_directives('#SBATCH -J "open'))
    assert "cannot be split" in found["#SBATCH line 2"]


def test_stray_word_in_sbatch_line_is_reported():
    assert "unexpected word" in issues_of(script=with_directives("#SBATCH gpu"))["#SBATCH line 2"]


def test_hetjob_is_refused_by_name():
    found = issues_of(script=with_directives("#SBATCH -n 1", "#SBATCH hetjob", "#SBATCH -n 2"))
    assert found["#SBATCH line 3"].startswith("hetjob (a heterogeneous job) is refused")


def test_all_problems_are_collected_at_once():
    script = with_directives("#SBATCH --uid=0", "#SBATCH --mem=lots")
    found = issues_of(["--qos=a;b", "-t", "1:2:3:4", "--gres=fpga:1", "-w", "n1;x", "--mail"], script)
    assert set(found) == {
        "#SBATCH line 2: --uid",
        "#SBATCH line 3: --mem",
        "option -t",
        "option --gres",
        "option -w",
        "option --mail",
    }  # --qos is checked by the spec only when the rest is sound; then it is named too
    assert "option -q (qos)" in issues_of(["-q", "a;b"])


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
        (["--gpus-per-node=5000"], "option --gpus-per-node (resources.gpus_per_node)", "less than or equal"),
        (["-c", "9999"], "option -c (resources.cpus_per_task)", "less than or equal"),
    ],
)
def test_malformed_counts_name_option_value_and_form(argv, path, words):
    with pytest.raises(SpecError) as info:
        sbatch_to_spec(argv, SCRIPT, script_name="t.sh", cwd=CWD, environ={"GW_PROJECT": "p"})
    (issue,) = info.value.issues
    assert issue.path == path and words in issue.message
    assert str(issue.value) == argv[-1].split("=")[-1]


def test_spec_limits_are_reported_against_the_option():
    found = issues_of(["--mem=5T", "-t", "31-0"])
    assert found.keys() == {"option --mem (resources.mem_gb)", "option -t (resources.walltime_min)"}


# Hostile values: refused, naming the option (and line) ...


@pytest.mark.parametrize(
    ("argv", "path"),
    [
        (["-J", "a'; touch /tmp/x"], "option -J (slurm_job_name)"),
        (["-J", "x\ny"], "option -J (slurm_job_name)"),
        (["-J", "$(reboot)"], "option -J (slurm_job_name)"),
        (["-J", "`id`"], "option -J (slurm_job_name)"),
        (["-J", "a\x00b"], "option -J (slurm_job_name)"),
        (["-p", "$(reboot)"], "option -p (queue)"),
        (["-A", "../../etc"], "option -A (project)"),
        (["-A", "a;b"], "option -A (project)"),
        (["-q", "`id`"], "option -q (qos)"),
        (["-o", "out file;rm -rf ~"], "option -o (stdout)"),
        (["-e", "`id`.log"], "option -e (stderr)"),
        (["-D", "dir\nwith-newline"], "option -D (workdir)"),
        (["--export=X=a\x00b"], "option --export (env)"),
        (["--export=$(id)=1"], "option --export"),
        (["--comment=a\nb"], "option --comment (comment)"),
        (["-d", "afterok:1;id"], "option -d (dependency)"),
        (["--signal=USR1;id"], "option --signal (signal)"),
        (["--mail-type=a;rm -rf /"], "option --mail-type"),
        (["-C", "a`id`"], "option -C"),
        (["-w", "n1$(id)"], "option -w"),
        (["--begin=now;id"], "option --begin"),
    ],
)
def test_hostile_values_are_spec_errors_naming_the_option(argv, path):
    assert path in issues_of(argv)


@pytest.mark.parametrize(
    "line",
    ['#SBATCH -J "a\'; touch /tmp/x"', '#SBATCH -J "$(reboot)"', "#SBATCH -J `id`", "#SBATCH -A ../../etc"],
)
def test_hostile_values_in_sbatch_lines_name_the_line(line):
    assert any(p.startswith("#SBATCH line 2: -") for p in issues_of(script=with_directives(line)))


def test_hostile_script_args_and_script_are_spec_errors():
    with pytest.raises(SpecError) as info:
        sbatch_to_spec(
            [], SCRIPT, script_name="t.sh", cwd=CWD, environ={"GW_PROJECT": "p"}, script_args=["a\x00b"]
        )
    assert [i.path for i in info.value.issues] == ["script_args"]
    assert "script" in issues_of(script="#!/bin/sh\necho \x00\n")


# ... or, where sbatch takes the value, carried literally where nothing runs it


def render(spec: dict) -> str:
    """The sbatch script the gateway would submit for ``spec``."""
    run = build_spec(spec)
    return render_sbatch(
        run, build_template_env(), run_id="r-1", run_dir="/r", target=SubmitTarget("cpu")
    ).text


def bash_n(text: str) -> None:
    """The rendered script parses as bash (bash -n: no command runs)."""
    done = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_values_sbatch_accepts_are_rendered_literally_and_inert():
    request = sbatch_to_spec(
        ["-J", "my job (v2) [a]", "--export=X=$(touch /tmp/pwned),Y=a'b;c", "--comment=$(id) `id`"],
        SCRIPT,
        script_name="t.sh",
        cwd=CWD,
        environ={"GW_PROJECT": "p"},
        script_args=["a;b", "$(id)", "'q'", "x\ny", "`id`"],
    )
    text = render(request.spec)
    bash_n(text)
    assert '#SBATCH --job-name="my job (v2) [a]"\n' in text
    # exports and arguments are single-quoted: $( ), backticks and ; stay text
    assert "export X='$(touch /tmp/pwned)'\n" in text and "export Y='a'\"'\"'b;c'\n" in text
    assert "'a;b' '$(id)' ''\"'\"'q'\"'\"'' 'x\ny' '`id`'" in text
    assert "$(id) `id`" not in text  # the comment is recorded in the spec, not in the script
    directives = [line for line in text.splitlines() if line.startswith("#SBATCH")]
    assert all("$(" not in line and "`" not in line and ";" not in line for line in directives)


def test_a_value_that_reaches_a_directive_cannot_leave_it():
    # a passed value is checked in full against its pattern: nothing after it on the line, no newline
    spec = spec_of("--mail-type=END,FAIL", "--mail-user=a.b@c.org", "-C", "a100&ib", "-w", "g[1-2]")
    text = render(spec)
    bash_n(text)
    assert "a.b@c.org" not in text  # --mail-user is an argument of sbatch, never a script line
    for line in (
        "--mail-type=END,FAIL",
        "--constraint=a100&ib",
        "--nodelist=g[1-2]",
    ):
        assert f"#SBATCH {line}\n" in text


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
        (["-J", "x", "--", "-odd.sh", "y"], (["-J", "x"], "-odd.sh", ["y"])),
        (["-J", "x"], (["-J", "x"], None, [])),  # no script: read from stdin, as sbatch does
        ([], ([], None, [])),
    ],
)
def test_split_finds_the_script(args, expected):
    assert split_gw_sbatch_args(args) == expected


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
