"""Planned association changes grouped into few sacctmgr commands, and how many processes a sync makes.

The grouping is pure; the process counts use a small named fake runner that answers reads as an
empty Slurm would (the real cluster runs it in tests/slurm/test_accounts.py and in every site apply).
"""

from __future__ import annotations

import os
import tempfile

import pytest

from gateway.adapters.runner import CommandResult
from gateway.adapters.slurm.accounts import SlurmAccounts
from gateway.adapters.slurm.assoc_commands import (
    account_commands,
    chunks,
    cross_groups,
    default_commands,
    default_moves,
    queue_blocks,
    removal_commands,
    stdin_line,
    user_commands,
)
from gateway.adapters.slurm.associations import AccountSpec, Change, Limits, diff
from gateway.errors import Conflict

WRITE_LOCK = os.path.join(tempfile.gettempdir(), f"gw-unit-sacctmgr-writes-{os.getpid()}.lock")


def test_cross_groups_are_exactly_the_pairs():
    pairs = [("a", "root"), ("b", "root"), ("c", "root"), ("a", "eve"), ("b", "eve"), ("c", "bob")]
    groups = cross_groups(pairs)
    assert groups == [(["bob"], ["c"]), (["eve"], ["a", "b"]), (["root"], ["a", "b", "c"])]
    assert sorted((a, u) for users, accounts in groups for u in users for a in accounts) == sorted(pairs)
    assert cross_groups([("a", "u1"), ("a", "u2")]) == [(["u1", "u2"], ["a"])]


def test_chunks_keep_lists_short():
    assert chunks(["a", "b", "c"], size=2) == ["a,b", "c"]
    assert chunks([]) == []


def test_accounts_with_the_same_settings_share_one_command():
    changes = [
        Change("add account", "a", None, {}, {"gpus": None, "gpu_minutes": None, "submit_jobs": None}),
        Change("add account", "b", None, {}, {"gpus": None, "gpu_minutes": None, "submit_jobs": None}),
        Change("add account", "c", None, {}, {"description": "vision team", "gpus": 2}),
        Change("modify account", "d", None, {"gpus": 1}, {"gpus": None}),
        Change("modify account", "e", None, {"gpus": 3}, {"gpus": None}),
    ]
    assert account_commands(changes, "gw") == [
        ["add", "account", "a,b", "cluster=gw", "Organization=gateway"],
        [
            "add",
            "account",
            "c",
            "cluster=gw",
            "Organization=gateway",
            "Description=vision team",
            "GrpTRES=gres/gpu=2",
        ],
        ["modify", "account", "where", "name=d,e", "cluster=gw", "set", "GrpTRES=gres/gpu=-1"],
    ]
    assert stdin_line(account_commands(changes, "gw")[1]).endswith(
        'Description="vision team" GrpTRES=gres/gpu=2'
    )


def test_users_and_removals_group_by_account_sets():
    current = [
        AccountSpec("p1", users={"root": Limits(), "eve": Limits()}),
        AccountSpec("p2", users={"root": Limits()}),
        AccountSpec("p3", users={"root": Limits(), "eve": Limits(gpus=1)}),
    ]
    changes = diff(current, [AccountSpec("p3", users={"root": Limits(), "eve": Limits(gpus=2)})])
    assert user_commands(changes, "gw") == [
        ["modify", "user", "where", "name=eve", "account=p3", "cluster=gw", "set", "GrpTRES=gres/gpu=2"]
    ]
    assert removal_commands(changes, "gw") == [
        ["remove", "user", "where", "name=eve", "account=p1", "cluster=gw"],  # eve stays in p3
        ["remove", "user", "where", "name=root", "account=p1,p2", "cluster=gw"],
        ["remove", "account", "where", "name=p1,p2", "cluster=gw"],
    ]
    added = diff(
        [],
        [
            AccountSpec("n1", users={"root": Limits(), "u": Limits()}),
            AccountSpec("n2", users={"u": Limits()}),
        ],
    )
    # u's default stays the first account (by name) it is added to: n1 comes first in its list
    assert user_commands(added, "gw") == [
        ["add", "user", "root", "account=n1", "cluster=gw"],
        ["add", "user", "u", "account=n1,n2", "cluster=gw"],
    ]


def test_default_moves_to_an_account_the_user_keeps():
    rows = [
        ["u", "a", "a"],
        ["u", "a", "b"],
        ["u", "a", "c"],
        ["v", "x", "x"],
        ["w", "y", "y"],
        ["w", "y", "z"],
    ]
    leaving = {("a", "u"), ("b", "u"), ("x", "v"), ("z", "w")}
    # u leaves a and b: c; v has no other account (Slurm drops its record); w keeps its default
    assert default_moves(rows, leaving) == {"u": "c"}
    assert default_moves([["u", "a", "a"], ["u", "a", "b"]], {("a", "u"), ("b", None)}) == {"u": "b"}
    assert default_commands({"u": "c", "t": "c", "s": "d"}, "gw") == [
        ["modify", "user", "where", "name=t,u", "cluster=gw", "set", "DefaultAccount=c"],
        ["modify", "user", "where", "name=s", "cluster=gw", "set", "DefaultAccount=d"],
    ]


def test_queue_blocks_name_each_blocked_association():
    removals = [Change("remove user", "a", "eve", {}, {}), Change("remove account", "b", None, {}, {})]
    queued = [("a", "root", "7"), ("b", "root", "8"), ("b", "eve", "9")]
    assert queue_blocks(removals, queued) == [
        "account b still has jobs in the queue (8, 9); cancel them (scancel --account=b)"
    ]
    assert queue_blocks(removals[:1], queued) == []


class EmptySlurm:
    """Fake runner: every read answers as a Slurm without these accounts; every write succeeds; an
    ``add`` makes its accounts listed (``show association`` answers them). Keeps each process."""

    def __init__(self, queued: str = ""):
        self.processes: list[tuple[list[str], str | None]] = []
        self.queued = queued
        self.added: set[str] = set()

    def run(self, argv, *, stdin=None, timeout_s=30.0, env=None):
        self.processes.append((list(argv), stdin))
        out = ""
        if argv[0] == "squeue":
            out = self.queued
        elif "show" in argv and "association" in argv:
            out = "".join(f"{a}|||||\n" for a in sorted(self.added))
        for line in (stdin or " ".join(argv[2:])).splitlines():
            words = line.split()
            if words[:2] == ["add", "account"]:
                self.added |= set(words[2].split(","))
        return CommandResult(tuple(argv), 0, out, "", 0.01)


def test_a_sync_of_many_accounts_is_a_few_processes():
    runner = EmptySlurm()
    adapter = SlurmAccounts(runner, cluster="gw", write_lock=WRITE_LOCK)
    desired = [AccountSpec(f"p{i}", description=f"project {i}", users={"root": Limits()}) for i in range(6)]
    adapter.apply(diff([], desired))
    writes = [(argv, stdin) for argv, stdin in runner.processes if argv[:2] == ["sacctmgr", "-i"]]
    assert len(writes) == 2  # the six adds in one process, root into all six in one command
    assert writes[0][1] is not None and writes[0][1].count("\n") == 6
    assert writes[1][0][2:] == ["add", "user", "root", "account=p0,p1,p2,p3,p4,p5", "cluster=gw"]
    assert len(runner.processes) == 3  # and one read back of the added accounts


def test_removals_are_checked_in_one_squeue_before_any_write():
    runner = EmptySlurm(queued="p2|root|41\n")
    adapter = SlurmAccounts(runner, cluster="gw", write_lock=WRITE_LOCK)
    current = [AccountSpec(f"p{i}", users={"root": Limits()}) for i in range(4)]
    with pytest.raises(Conflict, match=r"account p2 still has jobs in the queue \(41\).*nothing was changed"):
        adapter.apply([Change("add account", "n", None, {}, {}), *diff(current, [])])
    assert [argv[0] for argv, _ in runner.processes] == ["squeue"]
    assert runner.processes[0][0][1:3] == ["--clusters=gw", "--noheader"]
    assert "--account=p0,p1,p2,p3" in runner.processes[0][0]
