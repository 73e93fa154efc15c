"""Planned association changes grouped into few ``sacctmgr`` commands (pure).

Each sacctmgr command costs slurmdbd a round trip and a commit (about 0.2 s
on the test cluster whether it is a process of its own or one line of a
batch), but one command takes lists: ``add account a,b``, ``add user u1,u2
account=a,b`` (every user into every account), ``remove user where name=u
account=a,b``. So changes with the same settings go into one command, their
names joined; ``add user`` / ``modify user`` / ``remove user`` group (account,
user) pairs into cross products (users with the same set of accounts), and
keep names in sorted order, so a new user's default account is still the first
(by name) it is added to. The adapter (``accounts.py``) runs the commands in
order, in one sacctmgr process per batch (commands on stdin).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gateway.adapters.slurm.associations import (
    ADD_ACCOUNT,
    ADD_USER,
    MANAGED_ORGANIZATION,
    MODIFY_ACCOUNT,
    MODIFY_USER,
    REMOVE_ACCOUNT,
    REMOVE_USER,
    Change,
    settings,
)

LIST_MAX = 40  # names per list: keeps a command line short (sacctmgr reads stdin lines of up to 4 kB)


def chunks(names: Sequence[str], size: int = LIST_MAX) -> list[str]:
    """``names`` as comma-joined lists of at most ``size`` names each."""
    return [",".join(names[i : i + size]) for i in range(0, len(names), size)]


def cross_groups(pairs: Iterable[tuple[str, str]]) -> list[tuple[list[str], list[str]]]:
    """(account, user) pairs as (users, accounts) groups whose cross products are exactly the pairs.

    Users with the same set of accounts share a group; names are sorted in each list.
    """
    accounts_of: dict[str, set[str]] = {}
    for account, user in pairs:
        accounts_of.setdefault(user, set()).add(account)
    by_set: dict[tuple[str, ...], list[str]] = {}
    for user in sorted(accounts_of):
        by_set.setdefault(tuple(sorted(accounts_of[user])), []).append(user)
    return [(users, list(accounts)) for accounts, users in sorted(by_set.items(), key=lambda kv: kv[1])]


def _by_settings(changes: Iterable[Change], *, clear: bool) -> dict[tuple[str, ...], list[Change]]:
    out: dict[tuple[str, ...], list[Change]] = {}
    for change in changes:
        out.setdefault(tuple(settings(change.after, clear=clear)), []).append(change)
    return out


def account_commands(changes: Sequence[Change], cluster: str) -> list[list[str]]:
    """``add account`` then ``modify account`` commands for the account changes among ``changes``."""
    commands = []
    adds = _by_settings((c for c in changes if c.kind == ADD_ACCOUNT), clear=False)
    for extra, group in adds.items():
        for names in chunks([c.account for c in group]):
            org = f"Organization={MANAGED_ORGANIZATION}"
            commands.append(["add", "account", names, f"cluster={cluster}", org, *extra])
    modifies = _by_settings((c for c in changes if c.kind == MODIFY_ACCOUNT), clear=True)
    for values, group in modifies.items():
        for names in chunks([c.account for c in group]):
            commands.append(
                ["modify", "account", "where", f"name={names}", f"cluster={cluster}", "set", *values]
            )
    return commands


def user_commands(changes: Sequence[Change], cluster: str) -> list[list[str]]:
    """``add user`` then ``modify user`` commands for the user changes among ``changes``."""
    commands = []
    for kind, clear in ((ADD_USER, False), (MODIFY_USER, True)):
        for values, group in _by_settings((c for c in changes if c.kind == kind), clear=clear).items():
            for users, accounts in cross_groups((c.account, str(c.user)) for c in group):
                for names in chunks(users):
                    for accts in chunks(accounts):
                        if kind == ADD_USER:
                            head = ["add", "user", names, f"account={accts}", f"cluster={cluster}"]
                        else:
                            head = ["modify", "user", "where", f"name={names}", f"account={accts}"]
                            head += [f"cluster={cluster}", "set"]
                        commands.append([*head, *values])
    return commands


def removal_commands(changes: Sequence[Change], cluster: str) -> list[list[str]]:
    """``remove user`` then ``remove account`` commands for the removals among ``changes``."""
    commands = []
    pairs = [(c.account, str(c.user)) for c in changes if c.kind == REMOVE_USER]
    for users, accounts in cross_groups(pairs):
        for names in chunks(users):
            for accts in chunks(accounts):
                commands.append(
                    ["remove", "user", "where", f"name={names}", f"account={accts}", f"cluster={cluster}"]
                )
    for names in chunks(sorted(c.account for c in changes if c.kind == REMOVE_ACCOUNT)):
        commands.append(["remove", "account", "where", f"name={names}", f"cluster={cluster}"])
    return commands


def default_moves(rows: Sequence[Sequence[str]], leaving: set[tuple[str, str | None]]) -> dict[str, str]:
    """{user: new default account} for users whose default account they leave.

    ``rows`` are ``show user withassoc format=User,DefaultAccount,Account`` rows; ``leaving`` holds
    the (account, user) pairs removed and (account, None) for accounts removed. A user with no other
    account keeps its default (Slurm deletes the user record with its last association); the new
    default is the first (by name) account it keeps, else the first of its others.
    """
    defaults: dict[str, str] = {}
    accounts: dict[str, set[str]] = {}
    for user, default, account in rows:
        defaults.setdefault(user, default)
        accounts.setdefault(user, set()).add(account)
    moves = {}
    for user, default in defaults.items():
        if (default, user) not in leaving and (default, None) not in leaving:
            continue
        others = sorted(accounts[user] - {default, ""})
        staying = [a for a in others if (a, user) not in leaving and (a, None) not in leaving]
        if others:
            moves[user] = (staying or others)[0]
    return moves


def default_commands(moves: dict[str, str], cluster: str) -> list[list[str]]:
    """``modify user ... set DefaultAccount=`` commands for ``default_moves``, users grouped by account."""
    by_account: dict[str, list[str]] = {}
    for user in sorted(moves):
        by_account.setdefault(moves[user], []).append(user)
    return [
        ["modify", "user", "where", f"name={names}", f"cluster={cluster}", "set", f"DefaultAccount={account}"]
        for account, users in sorted(by_account.items())
        for names in chunks(users)
    ]


def queue_blocks(removals: Sequence[Change], queued: Sequence[tuple[str, str, str]]) -> list[str]:
    """For each removal whose association has jobs among ``queued`` (account, user, job id), what
    blocks it and how to clear it."""
    blocked = []
    for change in removals:
        jobs = sorted(j for a, u, j in queued if a == change.account and change.user in (None, u))
        if not jobs:
            continue
        user, account = change.user, change.account
        who = f"user {user} in account {account}" if user else f"account {account}"
        shown = ", ".join(jobs[:10]) + (" ..." if len(jobs) > 10 else "")
        scancel = f"scancel --account={account}" + (f" --user={user}" if user else "")
        blocked.append(f"{who} still has jobs in the queue ({shown}); cancel them ({scancel})")
    return blocked


def stdin_line(command: Sequence[str]) -> str:
    """One command as a line of sacctmgr's input: a value with a space in quotes (sacctmgr strips them)."""
    return " ".join(_quoted(arg) for arg in command)


def _quoted(arg: str) -> str:
    if " " not in arg:
        return arg
    key, sep, value = arg.partition("=")
    return f'{key}="{value}"' if sep else f'"{arg}"'
