"""Project quotas pushed to Slurm associations, proven on the real cluster with plain sbatch.

Every test works on its own accounts ("gwt" + 8 hex) and removes only those
at the end (``SlurmAccounts.remove``), since the running gateway or another
test may manage accounts of its own on the same cluster.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator

import pytest

from gateway.adapters.runner import CommandResult, LocalRunner
from gateway.adapters.slurm.accounts import (
    AccountSpec,
    Change,
    Limits,
    SlurmAccounts,
)
from gateway.errors import Conflict, SlurmError
from tests.conftest import wait_for

pytestmark = [pytest.mark.slurm, pytest.mark.exclusive]

RUNNER = LocalRunner()


def run(*argv: str) -> CommandResult:
    return RUNNER.run(list(argv), timeout_s=30, env={"TZ": "UTC"})


def show(*args: str) -> list[str]:
    result = run("sacctmgr", "--parsable2", "--noheader", *args)
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if line.strip()]


def assoc_lines(account: str) -> list[str]:
    return show(
        "show",
        "association",
        "where",
        f"account={account}",
        "format=Account,User,GrpTRES,GrpTRESMins,GrpSubmitJobs",
    )


def jobs_of(account: str) -> dict[str, tuple[str, str]]:
    """{job id: (state, reason)} of the account's live jobs (squeue's default states: not ended)."""
    result = run("squeue", "--noheader", f"--account={account}", "--format=%i|%T|%r")
    assert result.returncode == 0, result.stderr
    return {
        job: (state, reason)
        for job, state, reason in (line.split("|") for line in result.stdout.split() if line.count("|") == 2)
    }


@pytest.fixture
def accounts(slurm) -> SlurmAccounts:
    return SlurmAccounts(LocalRunner())


@pytest.fixture
def new_account(accounts: SlurmAccounts) -> Iterator[Callable[[], str]]:
    """Hand out unique account names; at the end cancel their jobs and remove just those accounts."""
    made: list[str] = []

    def make() -> str:
        made.append(f"gwt{uuid.uuid4().hex[:8]}")
        return made[-1]

    yield make
    for name in made:
        run("scancel", f"--account={name}")
    # sacctmgr refuses to remove an association with live jobs ("Job(s) active").
    wait_for(
        lambda: not any(jobs_of(name) for name in made), timeout_s=60, what="test jobs to leave the queue"
    )
    accounts.remove(made)
    assert not [line for name in made for line in assoc_lines(name)]


def sbatch(account: str, directory: str, *options: str) -> CommandResult:
    where = [f"--chdir={directory}", f"--output={directory}/%j.out"]
    return run(
        "sbatch", "--parsable", f"--account={account}", *where, "--time=2", *options, "--wrap", "sleep 30"
    )


def test_gpu_cap_holds_plain_sbatch_jobs(accounts, new_account, run_dir):
    name = new_account()
    changes = accounts.sync(
        [AccountSpec(name, limits=Limits(gpus=2), users={"root": Limits()})], scope=[name]
    )
    assert [(c.kind, c.user) for c in changes] == [("add account", None), ("add user", "root")]
    assert assoc_lines(name) == [f"{name}||gres/gpu=2||", f"{name}|root|||"]

    directory = run_dir("acct")
    first = sbatch(name, directory, "--partition=gpu", "--gres=gpu:fake:2")
    second = sbatch(name, directory, "--partition=gpu", "--gres=gpu:fake:2")
    assert first.returncode == 0 and second.returncode == 0, (first.stderr, second.stderr)
    first_id, second_id = first.stdout.strip(), second.stdout.strip()

    def held() -> bool:
        jobs = jobs_of(name)
        return jobs.get(first_id, ("",))[0] == "RUNNING" and jobs.get(second_id) == (
            "PENDING",
            "AssocGrpGRES",
        )

    wait_for(held, timeout_s=90, what=f"job {first_id} running and {second_id} pending on AssocGrpGRES")
    run("scancel", first_id, second_id)


def test_second_sync_changes_nothing(accounts, new_account):
    name = new_account()
    desired = [
        AccountSpec(
            name,
            "Vision Team",  # Slurm stores it lower-cased; still no change
            Limits(gpus=4, gpu_minutes=6000, submit_jobs=10),
            {"root": Limits(gpus=1), f"gwu{name[3:]}": Limits()},
        )
    ]
    assert len(accounts.sync(desired, scope=[name])) == 3
    assert accounts.sync(desired, scope=[name]) == []
    [mine] = [spec for spec in accounts.current() if spec.account == name]
    assert mine.limits == Limits(gpus=4, gpu_minutes=6000, submit_jobs=10)
    assert mine.users == {"root": Limits(gpus=1), f"gwu{name[3:]}": Limits()}


def test_changing_a_limit_is_one_modify(accounts, new_account):
    name = new_account()
    accounts.sync(
        [AccountSpec(name, limits=Limits(gpus=4, submit_jobs=5), users={"root": Limits()})], scope=[name]
    )
    # An admin's extra TRES in GrpTRES stays: the gateway manages gres/gpu only.
    run("sacctmgr", "-i", "modify", "account", "where", f"name={name}", "set", "GrpTRES=cpu=64")
    changes = accounts.sync(
        [AccountSpec(name, limits=Limits(gpus=2, submit_jobs=5), users={"root": Limits()})], scope=[name]
    )
    assert changes == [Change("modify account", name, None, {"gpus": 4}, {"gpus": 2})]
    assert str(changes[0]) == f"modify account {name}: GrpTRES gres/gpu 4 -> 2"
    assert assoc_lines(name)[0] == f"{name}||cpu=64,gres/gpu=2||5"

    # None clears the limit in Slurm (sacctmgr's -1).
    changes = accounts.sync([AccountSpec(name, users={"root": Limits()})], scope=[name])
    assert [str(c) for c in changes] == [
        f"modify account {name}: GrpTRES gres/gpu 2 -> unlimited, GrpSubmitJobs 5 -> unlimited"
    ]
    assert assoc_lines(name)[0] == f"{name}||cpu=64||"


def test_removals_and_unmanaged_accounts(accounts, new_account):
    first, second = sorted([new_account(), new_account()])
    root_before = (
        assoc_lines("root"),
        show("show", "account", "where", "name=root", "format=Account,Org,Descr"),
    )
    user = f"gwu{first[3:]}"  # not an OS user: sacctmgr does not need one
    accounts.sync(
        [
            AccountSpec(first, users={"root": Limits(), user: Limits()}),
            AccountSpec(second, users={user: Limits()}),
        ],
        scope=[first, second],
    )
    # A new user's default account is the first it was added to (adds run in name order).
    assert show("show", "user", "where", f"name={user}", "format=User,DefaultAccount") == [f"{user}|{first}"]

    changes = accounts.sync(
        [AccountSpec(first, users={"root": Limits()}), AccountSpec(second, users={user: Limits()})],
        scope=[first, second],
    )
    assert [str(c) for c in changes] == [f"remove user {user} from {first}"]
    assert show("show", "association", "where", f"account={first}", f"user={user}", "format=User") == []
    # Slurm would have left it with no default account at all; the adapter moved it first.
    assert show("show", "user", "where", f"name={user}", "format=User,DefaultAccount") == [f"{user}|{second}"]

    changes = accounts.sync([AccountSpec(second, users={user: Limits()})], scope=[first, second])
    assert [str(c) for c in changes] == [f"remove user root from {first}", f"remove account {first}"]
    assert assoc_lines(first) == []
    assert show("show", "account", "where", f"name={first}", "format=Account") == []
    assert [s.account for s in accounts.current() if s.account in (first, second)] == [second]

    # root is not the gateway's: never listed, never touched, and asking for it is a conflict.
    assert "root" not in [s.account for s in accounts.current()]
    with pytest.raises(Conflict, match="root"):
        accounts.plan([AccountSpec("root", limits=Limits(gpus=1))])
    assert accounts.remove(["root"]) == []
    root_after = (
        assoc_lines("root"),
        show("show", "account", "where", "name=root", "format=Account,Org,Descr"),
    )
    assert root_after == root_before

    # Its last association gone, Slurm deletes the user record too.
    accounts.remove([second])
    assert show("show", "user", "where", f"name={user}", "format=User") == []


def test_submit_jobs_cap_rejects_at_submit(accounts, new_account, run_dir):
    name = new_account()
    accounts.sync([AccountSpec(name, limits=Limits(submit_jobs=1), users={"root": Limits()})], scope=[name])
    directory = run_dir("acct")
    first = sbatch(name, directory, "--partition=cpu")
    assert first.returncode == 0, first.stderr
    # Slurm 22.05 refuses the second job at submission; it never queues.
    second = sbatch(name, directory, "--partition=cpu")
    assert second.returncode == 1
    assert "AssocGrpSubmitJobsLimit" in second.stderr
    assert list(jobs_of(name)) == [first.stdout.strip()]
    # Removing the association now would strand the job (pending, InvalidAccount): refused.
    with pytest.raises(Conflict, match="still has jobs in the queue"):
        accounts.remove([name])
    assert len(assoc_lines(name)) == 2


def test_gpu_minutes_cap_is_set_and_enforced(accounts, new_account, run_dir):
    name, small = new_account(), new_account()
    accounts.sync(
        [
            AccountSpec(name, limits=Limits(gpu_minutes=6000), users={"root": Limits(gpu_minutes=600)}),
            AccountSpec(small, limits=Limits(gpu_minutes=5), users={"root": Limits()}),
        ],
        scope=[name, small],
    )
    assert assoc_lines(name) == [f"{name}|||gres/gpu=6000|", f"{name}|root||gres/gpu=600|"]
    # AccountingStorageEnforce has "safe": a job starts only if GPUs x time limit fits the budget
    # (without it Slurm would start this one and kill it once 5 GPU-minutes are spent).
    directory = run_dir("acct")
    too_long = sbatch(small, directory, "--partition=gpu", "--gres=gpu:fake:1", "--time=10")
    fits = sbatch(small, directory, "--partition=gpu", "--gres=gpu:fake:2", "--time=2")
    assert too_long.returncode == 0 and fits.returncode == 0, (too_long.stderr, fits.stderr)
    too_long_id, fits_id = too_long.stdout.strip(), fits.stdout.strip()

    def held() -> bool:
        jobs = jobs_of(small)
        return jobs.get(too_long_id) == ("PENDING", "AssocGrpGRESMinutes") and jobs.get(fits_id, ("",))[
            0
        ] == ("RUNNING")

    wait_for(held, timeout_s=90, what=f"job {too_long_id} pending on AssocGrpGRESMinutes, {fits_id} running")


def test_change_lines_read_well():
    assert str(Change("add account", "vision", None, {}, {"description": "Vision", "gpus": 4})) == (
        "add account vision: Description='Vision', GrpTRES gres/gpu=4"
    )
    assert (
        str(Change("add user", "vision", "alice", {}, {"gpus": None}))
        == "add user alice to vision: no limits"
    )
    assert str(Change("modify user", "vision", "alice", {"gpu_minutes": None}, {"gpu_minutes": 600})) == (
        "modify user alice in vision: GrpTRESMins gres/gpu unlimited -> 600"
    )
    assert str(Change("remove user", "vision", "alice", {"submit_jobs": 3}, {})) == (
        "remove user alice from vision (had GrpSubmitJobs=3)"
    )
    assert str(Change("remove account", "vision", None, {"gpus": None}, {})) == "remove account vision"


def test_errors_keep_sacctmgr_words(accounts, new_account):
    missing = new_account()  # never created
    with pytest.raises(SlurmError, match=f"This account '{missing}' doesn't exist"):
        accounts.apply([Change("add user", missing, "root", {}, {})])


CONCURRENT_WRITER = """
import sys, uuid
from gateway.adapters.runner import LocalRunner
from gateway.adapters.slurm.accounts import SlurmAccounts
from gateway.adapters.slurm.associations import AccountSpec, Limits
accounts = SlurmAccounts(LocalRunner())
for _ in range(6):
    name = f"gwtcw{uuid.uuid4().hex[:8]}"
    spec = AccountSpec(name, limits=Limits(), users={"root": Limits()})
    accounts.apply(accounts.plan([spec], scope=[name]))
    accounts.apply(accounts.plan([], scope=[name]))
print("ok")
"""


def test_two_gateways_writing_at_once_lose_no_account():
    """Slurm 22.05 loses an account added while another sacctmgr adds one; the adapter serialises
    its writes on the host and checks each added account, so two writers at once both succeed."""
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT_WRITER],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outcomes = [w.communicate(timeout=300) for w in writers]
    for (out, err), writer in zip(outcomes, writers, strict=True):
        assert writer.returncode == 0 and out.strip() == "ok", err[-2000:]
