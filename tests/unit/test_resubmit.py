"""The job's copy of a user's script, fit for ``sbatch "$0"`` (gateway.core.sbatch.resubmit)."""

from gateway.core.sbatch.resubmit import resubmittable
from gateway.core.sbatch.scan import script_directives
from gateway.core.slurm.tags import job_comment, parse_comment, resubmit_comment, resubmit_tag

SCRIPT = """#!/bin/bash
#SBATCH -A myproject -p gpuq  # the gateway's names
#SBATCH --time=5 --comment="my own words"
#SBATCH --account myproject
echo start
#SBATCH -A after-the-first-command
sbatch "$0"
"""


def test_account_partition_and_comment_become_slurms_and_lines_keep_their_numbers():
    out = resubmittable(SCRIPT, account="slurm-acct", partition="gpu", comment="gw-r-1-0")
    lines = out.splitlines()
    assert len(lines) == len(SCRIPT.splitlines())
    assert lines[1] == "#SBATCH --comment=gw-r-1-0 --account=slurm-acct --partition=gpu"
    assert lines[2] == "#SBATCH --time=5"
    assert lines[3] == "#SBATCH --account=slurm-acct"
    assert lines[4:] == SCRIPT.splitlines()[4:]  # after the first command: as written
    read, issues = script_directives(out)
    assert not issues
    assert [(name, value) for name, value, _ in read] == [
        ("comment", "gw-r-1-0"),
        ("account", "slurm-acct"),
        ("partition", "gpu"),
        ("time", "5"),
        ("account", "slurm-acct"),
    ]


def test_no_account_drops_the_projects_name():
    out = resubmittable(
        "#!/bin/sh\n#SBATCH -A proj -n 2\nexit 0\n", account=None, partition="cpu", comment="c"
    )
    assert out == "#!/bin/sh\n#SBATCH --comment=c --partition=cpu -n 2\nexit 0\n"


def test_a_script_without_sbatch_lines_gets_one_after_its_interpreter():
    assert resubmittable("#!/bin/bash\necho hi", account="a", partition="p", comment="c") == (
        "#!/bin/bash\n#SBATCH --comment=c --account=a --partition=p\necho hi"
    )
    assert resubmittable("#!/bin/bash", account=None, partition="p", comment="c") == (
        "#!/bin/bash\n#SBATCH --comment=c --partition=p\n"
    )


def test_a_line_sbatch_cannot_read_is_left_alone():
    text = '#!/bin/bash\n#SBATCH --bogus-option\n#SBATCH -J "unclosed\n#SBATCH -A p\ntrue\n'
    out = resubmittable(text, account="a", partition="q", comment="c")
    assert out.splitlines()[1:3] == ["#SBATCH --bogus-option", '#SBATCH -J "unclosed']
    assert out.splitlines()[3] == "#SBATCH --comment=c --partition=q --account=a"


def test_resubmission_tags():
    assert resubmit_comment("r-1f2e") == "gw-r-1f2e-0"
    tag = resubmit_tag("r-1f2e", "4711")
    assert tag == "gw-r-1f2e-0~s4711" and job_comment(tag) == "gw-r-1f2e-0"
    parts = parse_comment("gw-r-1f2e-0 user words")
    assert parts is not None and (parts.run_id, parts.number) == ("r-1f2e", 0)
