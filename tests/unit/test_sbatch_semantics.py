"""gw sbatch where it used to differ from sbatch: --export, no -t, --comment, --mem=0's queue setting.

Each expectation quotes or follows sbatch(1) of Slurm 22.05.
"""

from __future__ import annotations

import pytest

from gateway.core.access.quota import Ask
from gateway.core.sbatch.context import SubmitTarget
from gateway.core.sbatch.render import render_sbatch
from gateway.core.sbatch.templates import build_template_env
from gateway.core.sbatch.values import caller_env, export
from gateway.core.site.schema import parse_site
from gateway.core.slurm.observe import is_ours
from gateway.core.slurm.tags import attempt_tag, parse_comment, slurm_comment, tag_of
from gateway.core.spec.run_spec import build_spec
from tests.unit.sbatch_helpers import issues_of, spec_of
from tests.unit.test_tags_observe import attempt, record

CALLER = {
    "GW_PROJECT": "default",
    "PATH": "/opt/conda/bin:/usr/bin",
    "HOME": "/home/alice",
    "FOO": "from-the-shell",
    "GW_TOKEN": "gw_secret",
    "GATEWAY_TOKEN": "srv",
    "HF_TOKEN": "hf_x",
    "AWS_SECRET_ACCESS_KEY": "aws",
    "DB_PASSWORD": "pw",
    "SLURM_JOB_ID": "12",
    "SBATCH_PARTITION": "gpu",
    "BASH_FUNC_module%%": "() { :; }",
    "BELL": "ring\x07",
}


def rendered(spec: dict) -> str:
    return render_sbatch(
        build_spec(spec), build_template_env(), run_id="r-1", run_dir="/r", target=SubmitTarget("cpu")
    ).text


def test_no_export_is_all_the_callers_environment_without_secrets_or_slurms():
    # man sbatch: "--export=ALL  Default mode if --export is not specified. All of the user's
    # environment will be loaded (... from the caller's environment ...)"
    spec = spec_of(environ=CALLER)
    assert spec["export"] == "all"
    assert spec["env"] == {"PATH": "/opt/conda/bin:/usr/bin", "HOME": "/home/alice", "FOO": "from-the-shell"}
    text = rendered(spec)
    assert "export FOO=from-the-shell" in text and "#SBATCH --export" not in text
    assert "gw_secret" not in text and "hf_x" not in text


def test_caller_env_leaves_out_the_documented_names():
    kept = caller_env(CALLER)
    for name in ("GW_PROJECT", "GW_TOKEN", "GATEWAY_TOKEN", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY"):
        assert name not in kept, name
    for name in ("DB_PASSWORD", "SLURM_JOB_ID", "SBATCH_PARTITION", "BASH_FUNC_module%%", "BELL"):
        assert name not in kept, name
    assert caller_env({"BIG": "x" * (64 * 1024 + 1), "OK": "multi\nline"}) == {"OK": "multi\nline"}


def test_export_all_with_values_sets_them_over_the_environment():
    spec = spec_of("--export=ALL,FOO=bar,EXTRA=1", environ=CALLER)
    assert spec["export"] == "all" and spec["env"]["FOO"] == "bar" and spec["env"]["EXTRA"] == "1"
    assert spec["env"]["PATH"] == CALLER["PATH"]


def test_a_secret_named_in_export_is_sent_as_asked():
    assert spec_of("--export=ALL,HF_TOKEN", environ=CALLER)["env"]["HF_TOKEN"] == "hf_x"


def test_export_none_is_slurms_variables_only():
    # man sbatch: "--export=NONE  Only SLURM_* variables from the user environment will be defined."
    spec = spec_of("--export=NONE", environ=CALLER)
    assert spec["export"] == "named" and "env" not in spec
    assert "#SBATCH --export=NONE\n" in rendered(spec)


def test_named_export_is_those_variables_only():
    # man sbatch: "--export=[ALL,]<environment_variables>  Exports all SLURM_* environment variables
    # along with explicitly defined variables ... (e.g. "--export=EDITOR") or specific values
    # (e.g. "--export=EDITOR=/bin/emacs")"
    spec = spec_of("--export=FOO,EDITOR=/bin/emacs,UNSET_ONE", environ=CALLER)
    assert spec["export"] == "named" and spec["env"] == {"FOO": "from-the-shell", "EDITOR": "/bin/emacs"}
    text = rendered(spec)
    assert "#SBATCH --export=EDITOR,FOO\n" in text and "export EDITOR=/bin/emacs" in text
    assert "PATH=/opt" not in text


def test_export_words_that_are_no_names_or_slurms_are_refused_by_option():
    assert "--export" in next(iter(issues_of(["--export=1BAD"], environ=CALLER)))
    issues = issues_of(["--export=ALL,SLURM_CPUS_ON_NODE=4"], environ=CALLER)
    assert any("--export" in path and "SLURM_CPUS_ON_NODE" in m for path, m in issues.items()), issues


def test_export_parses_as_sbatch_reads_it():
    assert export(None, {"A": "1"}) == ("all", {"A": "1"})
    assert export("all", {"A": "1"}) == ("all", {"A": "1"})  # Slurm reads ALL in any case
    assert export("NONE", {"A": "1"}) == ("named", {})
    assert export("A,B=2", {"A": "1", "C": "3"}) == ("named", {"A": "1", "B": "2"})
    with pytest.raises(ValueError, match="not a variable name"):
        export("A B", {})


def test_no_time_leaves_it_to_the_partitions_default():
    # man sbatch: "When the --time option is not specified, the default is the partition's default
    # time limit" (DefaultTime, else MaxTime)
    spec = spec_of()
    assert spec["resources"]["walltime_min"] is None
    assert build_spec(spec).resources.walltime_min is None
    assert "--time" not in rendered(spec)
    assert "#SBATCH --time=5\n" in rendered(spec_of("-t", "5"))


def test_a_gateway_spec_keeps_its_own_default_time():
    spec = build_spec({"name": "a", "project": "p", "queue": "q", "command": "true"})
    assert spec.resources.walltime_min == 60


def test_quota_counts_the_time_slurm_will_give():
    spec = build_spec(spec_of("--gres=gpu:2"))
    assert Ask.of(spec).gpu_hours == 0  # nothing known yet: admission passes the partition's time
    assert Ask.of(spec, walltime_min=90).gpu_hours == 3.0
    assert Ask.of(build_spec(spec_of("--gres=gpu:2", "-t", "30"))).gpu_hours == 1.0


def test_comment_carries_the_tag_first_and_the_users_words_after():
    tag = attempt_tag("r-0123456789abcdef", 1)
    comment = slurm_comment(tag, "baseline, seed 3")
    assert comment == f"{tag} baseline, seed 3" and slurm_comment(tag, None) == tag
    assert tag_of(comment) == tag and tag_of(None) == ""
    assert parse_comment(comment).run_id == "r-0123456789abcdef"
    assert parse_comment("baseline gw-r-0123456789abcdef-1") is None  # the tag must come first


def test_an_accounting_record_with_a_user_comment_is_the_attempts_own():
    mine = attempt(tag="gw-r-1-1")
    assert is_ours(record(comment=slurm_comment("gw-r-1-1", "my words")), mine)
    assert not is_ours(record(comment="gw-r-1-2 my words"), mine)
    assert is_ours(record(comment="gw-r-1-1 my words"), attempt(tag="gw-r-1-1~r1"))  # a requeue


def test_comment_is_recorded_in_the_spec():
    assert spec_of("--comment=baseline run")["comment"] == "baseline run"


SITE = """
users: [{name: alice, os_user: alice}]
projects:
  - name: vision
    members: [{user: alice}]
    queues:
      - {name: cpu, partition: cpu}
      - {name: bigmem, partition: cpu, whole_node_mem: true}
"""


def test_whole_node_mem_is_a_queue_setting_off_by_default():
    queues = {q.name: q for q in parse_site(SITE).projects[0].domain().queues}
    assert queues["bigmem"].whole_node_mem is True and queues["cpu"].whole_node_mem is False
