"""The remote command line: every word quoted, names checked; paramiko imported in one module only."""

from __future__ import annotations

import shlex
import subprocess

import grimp
import pytest

from gateway.adapters.runner_ssh import check_user, remote_command
from gateway.errors import CommandError

HOSTILE = [
    "a'; rm -rf ~; echo '",
    "$(id)",
    "`id`",
    "x\ny",
    "--",
    "-n",
    "* ?",
    "ünï 🚀",
    "",
    "a\\'b",
    '"$HOME"',
]


def test_a_sh_reads_back_exactly_the_words_given():
    line = remote_command(["printf", "%s\\0", *HOSTILE])
    out = subprocess.run(["sh", "-c", line], capture_output=True, text=True, check=True).stdout
    assert out.split("\0")[:-1] == HOSTILE
    assert shlex.split(line) == ["printf", "%s\\0", *HOSTILE]


def test_environment_and_sudo_come_first_quoted_too():
    line = remote_command(["sbatch", "--parsable"], env={"TZ": "UTC", "X": "a b;c"}, sudo_user="gwtalice")
    assert shlex.split(line) == [
        "sudo", "-n", "-H", "-u", "gwtalice", "--", "env", "TZ=UTC", "X=a b;c", "sbatch", "--parsable",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "env", "sudo_user"),
    [
        ([], None, None),
        (["A=b", "id"], None, None),
        (["-x"], None, None),
        (["id", "a\0b"], None, None),
        (["id"], {"BAD NAME": "1"}, None),
        (["id"], {"1X": "1"}, None),
        (["id"], {"X": "a\0"}, None),
        (["id"], None, "root; id"),
        (["id"], None, "../x"),
        (["id"], None, "-u"),
    ],
)
def test_malformed_words_are_refused(argv, env, sudo_user):
    with pytest.raises(CommandError):
        remote_command(argv, env=env, sudo_user=sudo_user)


@pytest.mark.parametrize("name", ["gwtalice", "_svc", "a-b_c1", "machine$"])
def test_posix_user_names_pass(name):
    assert check_user(name) == name


@pytest.mark.parametrize("name", ["", "Alice", "1abc", "a b", "a/b", "a" * 33, "ä", "-a"])
def test_other_user_names_do_not(name):
    with pytest.raises(CommandError, match="not an OS user name"):
        check_user(name)


def test_paramiko_is_imported_by_the_ssh_adapters_alone():
    graph = grimp.build_graph("gateway", include_external_packages=True)
    assert graph.find_modules_that_directly_import("paramiko") == {
        "gateway.adapters.ssh",
        "gateway.adapters.ssh_login",
    }
