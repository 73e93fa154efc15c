"""The accounts adapter's pure parts: sacctmgr output parsing, the diff, and how failures are read.

Output lines were recorded from sacctmgr 22.05 on the test cluster; the
failure replays use a small named fake runner, since a healthy sacctmgr will
not time out on demand. The real cluster tests are tests/slurm/test_accounts.py.
"""

from __future__ import annotations

import os
import tempfile

import pytest

from gateway.adapters.runner import CommandResult
from gateway.adapters.slurm.accounts import SlurmAccounts, live_lines
from gateway.adapters.slurm.associations import (
    AccountSpec,
    AssocRow,
    Change,
    Limits,
    diff,
    managed_specs,
    parse_accounts,
    parse_associations,
    parse_tres,
)
from gateway.errors import CommandTimeout, SlurmError, SlurmOutputError, SlurmUnavailable, SpecError

# sacctmgr --parsable2 --noheader show account format=Account,Organization,Description
ACCOUNTS = """\
demo|gateway|examples and first steps
vision|gateway|gw mixed `quoted` x=y
ops|ops|pipes | in an admin's description
root|root|default root account
"""

# ... show association where cluster=gwlocal format=Account,User,Partition,GrpTRES,GrpTRESMins,GrpSubmitJobs
ASSOCS = """\
root|||||
root|root||||
demo|||gres/gpu=4|gres/gpu=6000|200
demo|root||||
vision|||cpu=4,gres/gpu=3|gres/gpu=600|
vision|root||gres/gpu=1||
vision|alice|gpu|gres/gpu=1||
vision|bob||gres/gpu:fake=2,gres/gpu=2||5
ops|||gres/gpu=8||
"""


def test_parse_tres():
    assert parse_tres("") == {}
    assert parse_tres("cpu=4,gres/gpu=2") == {"cpu": "4", "gres/gpu": "2"}
    assert parse_tres("gres/gpu:fake=2,gres/gpu=3") == {"gres/gpu:fake": "2", "gres/gpu": "3"}
    with pytest.raises(SlurmOutputError):
        parse_tres("cpu")


def test_parse_accounts_keeps_pipes_in_descriptions():
    accounts = parse_accounts(ACCOUNTS)
    assert accounts["ops"] == ("ops", "pipes | in an admin's description")
    assert accounts["vision"] == ("gateway", "gw mixed `quoted` x=y")


def test_parse_associations_reads_only_gres_gpu():
    rows = {(r.account, r.user): r for r in parse_associations(ASSOCS)}
    assert rows[("demo", "")].limits == Limits(gpus=4, gpu_minutes=6000, submit_jobs=200)
    assert rows[("vision", "")].limits == Limits(gpus=3, gpu_minutes=600)  # cpu=4 is an admin's
    assert rows[("vision", "bob")].limits == Limits(gpus=2, submit_jobs=5)  # the typed TRES is not ours
    assert rows[("vision", "alice")].partition == "gpu"
    assert rows[("root", "root")].limits == Limits()


@pytest.mark.parametrize(
    "line",
    ["demo|||gres/gpu=4|gres/gpu=6000", "demo|||gres/gpu=lots||", "demo|||||unlimited", "demo|||cpu||"],
)
def test_parse_associations_refuses_odd_lines(line):
    with pytest.raises(SlurmOutputError):
        parse_associations(line)


def test_managed_specs_skip_unmanaged_and_partition_rows():
    specs = managed_specs(parse_accounts(ACCOUNTS), parse_associations(ASSOCS))
    assert [s.account for s in specs] == ["demo", "vision"]
    vision = specs[1]
    assert vision.description == "gw mixed `quoted` x=y"
    assert vision.users == {"root": Limits(gpus=1), "bob": Limits(gpus=2, submit_jobs=5)}


def test_managed_account_without_association_here_is_absent():
    accounts = {"gone": ("gateway", "gone")}
    assert managed_specs(accounts, [AssocRow("other", "", "", Limits())]) == []


# -- the diff -------------------------------------------------------------------

CURRENT = [
    AccountSpec("demo", "demo", Limits(gpus=4), {"root": Limits(), "alice": Limits(gpus=1)}),
    AccountSpec("old", "old", Limits(gpus=2), {"carol": Limits()}),
]


def test_diff_orders_adds_modifies_then_removals():
    desired = [
        AccountSpec("demo", "", Limits(gpus=2), {"root": Limits(), "dave": Limits(submit_jobs=3)}),
        AccountSpec("new", "New Team", Limits(gpu_minutes=600)),
    ]
    changes = diff(CURRENT, desired)
    assert [str(c) for c in changes] == [
        "add account new: Description='New Team', GrpTRESMins gres/gpu=600",
        "modify account demo: GrpTRES gres/gpu 4 -> 2",
        "add user dave to demo: GrpSubmitJobs=3",
        "remove user alice from demo (had GrpTRES gres/gpu=1)",
        "remove user carol from old",
        "remove account old (had GrpTRES gres/gpu=2)",
    ]
    assert changes[0].after == {
        "description": "New Team",
        "gpus": None,
        "gpu_minutes": 600,
        "submit_jobs": None,
    }


def test_diff_is_empty_when_equal_and_descriptions_compare_lower_case():
    desired = [AccountSpec("demo", "DEMO", Limits(gpus=4), {"root": Limits(), "alice": Limits(gpus=1)})]
    assert diff(CURRENT, desired, scope=["demo"]) == []
    changed = diff(CURRENT, [AccountSpec("demo", "Demo v2", Limits(gpus=4), CURRENT[0].users)], scope=[])
    assert [str(c) for c in changed] == ["modify account demo: Description 'demo' -> 'Demo v2'"]


def test_diff_scope_limits_removals():
    assert diff(CURRENT, [], scope=["old"]) == [
        Change("remove user", "old", "carol", Limits().as_dict(), {}),
        Change("remove account", "old", None, {"gpus": 2, "gpu_minutes": None, "submit_jobs": None}, {}),
    ]
    assert diff(CURRENT, [], scope=[]) == []
    assert diff(CURRENT, [], scope=["nosuch"]) == []


def test_diff_refuses_duplicate_accounts():
    with pytest.raises(SpecError, match="more than once"):
        diff([], [AccountSpec("a"), AccountSpec("a")])


@pytest.mark.parametrize(
    "spec",
    [
        AccountSpec("Vision"),
        AccountSpec("a'; echo x"),
        AccountSpec("a b"),
        AccountSpec(""),
        AccountSpec("x" * 64),
        AccountSpec("ok", description="it's"),  # sacctmgr would store it's as it`s
        AccountSpec("ok", description="line\nbreak"),
        AccountSpec("ok", description="a|b"),
        AccountSpec("ok", users={"Alice": Limits()}),
        AccountSpec("ok", users={"a=b": Limits()}),
        AccountSpec("ok", users={"a,b": Limits()}),
        AccountSpec("ok", users={"alice": {"gpus": 1}}),  # type: ignore[dict-item]
    ],
)
def test_hostile_or_odd_desired_accounts_are_spec_errors(spec):
    with pytest.raises(SpecError):
        diff([], [spec])


@pytest.mark.parametrize(
    "make", [lambda: Limits(gpus=-1), lambda: Limits(submit_jobs=True), lambda: Limits(gpu_minutes=1.5)]
)
def test_bad_limits_are_spec_errors(make):
    with pytest.raises(SpecError, match="whole number"):
        make()


def test_values_read_from_slurm_are_not_judged_by_the_desired_rules():
    # An admin may write any description on a managed account; reading it must not fail.
    [vision] = [
        s
        for s in managed_specs(parse_accounts(ACCOUNTS), parse_associations(ASSOCS))
        if s.account == "vision"
    ]
    assert vision.issues()[0].path == "description"


# -- reading failures -------------------------------------------------------------


class ReplayRunner:
    """Fake runner: answers every write with one recorded result (or raises), and keeps its argv.

    A ``show association where`` read (the read-back after an add) answers with an association
    without limits for each account in ``listed`` and is kept apart, in ``reads``.
    """

    def __init__(self, stdout: str = "", stderr: str = "", returncode: int = 0, raises=None, listed=()):
        self.result = (stdout, stderr, returncode)
        self.raises = raises
        self.listed = list(listed)
        self.calls: list[list[str]] = []
        self.reads: list[list[str]] = []

    def run(self, argv, *, stdin=None, timeout_s=30.0, env=None):
        if self.raises:
            self.calls.append(list(argv))
            raise self.raises
        if argv[1:6] == ["--parsable2", "--noheader", "show", "association", "where"]:
            self.reads.append(list(argv))
            return CommandResult(tuple(argv), 0, "".join(f"{a}|||||\n" for a in self.listed), "", 0.01)
        self.calls.append(list(argv))
        stdout, stderr, returncode = self.result
        return CommandResult(tuple(argv), returncode, stdout, stderr, 0.01)


# A fake runner writes nothing to Slurm: its adapter holds a lock of its own, not the host's, which the
# tests that change real accounts (and every gateway here) hold for seconds at a time.
WRITE_LOCK = os.path.join(tempfile.gettempdir(), f"gw-unit-sacctmgr-writes-{os.getpid()}.lock")


def accounts(**kwargs) -> tuple[SlurmAccounts, ReplayRunner]:
    runner = ReplayRunner(**kwargs)
    return SlurmAccounts(runner, cluster="gwlocal", write_lock=WRITE_LOCK), runner


def test_nothing_new_added_with_exit_1_is_not_an_error():
    adapter, runner = accounts(stdout=" Nothing new added.\n", returncode=1, listed=["demo"])
    adapter.apply([Change("add account", "demo", None, {}, {"gpus": 2})])
    assert len(runner.reads) == 1  # the add is read back once: Slurm lists it, without the limit
    # Already there: the limits are set with a modify.
    assert runner.calls == [
        [
            "sacctmgr",
            "-i",
            "add",
            "account",
            "demo",
            "cluster=gwlocal",
            "Organization=gateway",
            "GrpTRES=gres/gpu=2",
        ],
        [
            "sacctmgr",
            "-i",
            "modify",
            "account",
            "where",
            "name=demo",
            "cluster=gwlocal",
            "set",
            "GrpTRES=gres/gpu=2",
        ],
    ]


def test_an_added_account_slurm_does_not_list_is_added_again_then_refused():
    adapter, runner = accounts(stdout=" Adding Account(s)\n", listed=[])
    with pytest.raises(SlurmError, match="does not list it after 3 tries"):
        adapter.apply([Change("add account", "lost", None, {}, {})])
    adds = [c for c in runner.calls if c[2:4] == ["add", "account"]]
    assert len(adds) == 4  # the first add, then one again after each check that found it missing
    assert len(runner.reads) == 4  # the last add is read back too


def test_modify_clears_with_minus_one():
    adapter, runner = accounts(stdout=" Modified account associations...\n")
    adapter.apply(
        [
            Change(
                "modify user",
                "demo",
                "alice",
                {"gpus": 1, "submit_jobs": 2},
                {"gpus": None, "submit_jobs": 4},
            )
        ]
    )
    assert runner.calls[0][-3:] == ["set", "GrpTRES=gres/gpu=-1", "GrpSubmitJobs=4"]


def test_missing_account_message_is_kept():
    adapter, _ = accounts(
        stdout=" Nothing new added.\n",
        stderr=" This account 'nosuch' doesn't exist.\n        Contact your admin to add this account.\n",
        returncode=1,
    )
    with pytest.raises(SlurmError, match="This account 'nosuch' doesn't exist") as caught:
        adapter.apply([Change("add user", "nosuch", "root", {}, {})])
    assert not isinstance(caught.value, SlurmUnavailable)


def test_error_on_stderr_with_exit_0_is_an_error():
    adapter, _ = accounts(stderr="sacctmgr: error: Unknown option: grpfoo=1\n", returncode=0)
    with pytest.raises(SlurmError, match="Unknown option"):
        adapter.current()


@pytest.mark.parametrize(
    ("runner_kwargs", "match"),
    [
        ({"raises": CommandTimeout("sacctmgr did not finish within 30 s")}, "did not answer within 30 s"),
        (
            {
                "stderr": "sacctmgr: error: Sending PersistInit msg: Connection refused\n"
                "sacctmgr: error: Problem talking to the database: Connection refused\n",
                "returncode": 1,
            },
            "Slurm did not answer",
        ),
    ],
)
def test_unreachable_slurmdbd_is_unavailable(runner_kwargs, match):
    adapter, _ = accounts(**runner_kwargs)
    with pytest.raises(SlurmUnavailable, match=match):
        adapter.current()


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (Change("rename account", "demo", None, {}, {}), "unknown change kind"),
        (Change("add user", "demo", "a,b", {}, {}), "not a Slurm user name"),
        (Change("add user", "demo", None, {}, {}), "needs a user"),
        (Change("modify account", "demo x", None, {}, {"gpus": 1}), "not a Slurm account name"),
        (Change("modify account", "demo", None, {}, {"description": "x' y"}), "description"),
        (Change("modify account", "demo", None, {}, {"GrpJobs": 1}), "not a limit"),
        (Change("modify account", "demo", None, {}, {"gpus": -2}), "whole number"),
    ],
)
def test_bad_changes_are_refused_before_anything_runs(change, match):
    adapter, runner = accounts()
    good = Change("add account", "fine", None, {}, {})
    with pytest.raises(SpecError, match=match):
        adapter.apply([good, change])
    assert runner.calls == []


def test_squeue_job_lines_leave_out_the_cluster_headers_of_squeue_m():
    # squeue -M gwlocal2 without --noheader (and older Slurm with it) heads each cluster's jobs so
    text = "CLUSTER: gwlocal2\n17|root\n\nCLUSTER: gwlocal\n17|alice\n"
    assert live_lines(text) == ["17|root", "17|alice"]
