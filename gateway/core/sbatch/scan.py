"""Read sbatch options as sbatch 22.05 does: getopt_long over the command line, and ``#SBATCH`` lines
until the first command. Pure; problems are gathered as ``SpecIssue``s naming the option and its line.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from gateway.core.sbatch.table import SHORT, Option, lookup_long
from gateway.errors import SpecIssue


@dataclass
class Given:
    """One option as given: the option, how it was written, its value, and where it came from."""

    option: Option
    shown: str  # as written: "-J", "--job-name", "--tasks"
    value: str | None
    where: str  # "option " or "#SBATCH line 3: "

    @property
    def name(self) -> str:
        """The option's canonical long name ("job-name" for -J and --job-name)."""
        return self.option.canonical or self.option.name

    @property
    def path(self) -> str:
        """Where and as what it was given, for messages: "#SBATCH line 3: -J"."""
        return self.where + self.shown


def scan(words: list[str], where: str, issues: list[SpecIssue], *, stop: bool) -> tuple[list[Given], int]:
    """Read options as sbatch's getopt_long does; returns them and the index of the first other word."""
    found: list[Given] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "--":
            return found, i
        if word.startswith("--"):
            typed, eq, inline = word[2:].partition("=")
            option, candidates = lookup_long(typed)
            shown, value = "--" + typed, (inline if eq else None)
            if option is None:
                why = (
                    f"is ambiguous: it could be --{', --'.join(candidates)}"
                    if candidates
                    else ("is not an sbatch option (sbatch 22.05)")
                )
                issues.append(SpecIssue(where + shown, why))
                continue
            if option.arg == "required" and value is None and i < len(words):
                value, i = words[i], i + 1
        elif word.startswith("-") and len(word) > 1:
            letter, rest = word[1], word[2:]
            option, shown, value = SHORT.get(letter), "-" + letter, rest or None
            if option is None:
                issues.append(SpecIssue(where + shown, "is not an sbatch option (sbatch 22.05)"))
                continue
            if option.arg == "none" and rest:
                issues.append(SpecIssue(where + shown, "takes no value", rest))
                continue
            if option.arg == "required" and value is None and i < len(words):
                value, i = words[i], i + 1
        else:
            if stop:
                return found, i - 1
            label = "command line" if where == "option " else where.rstrip(": ")
            issues.append(SpecIssue(label, "unexpected word: only sbatch options belong here", word))
            continue
        if option.arg == "required" and value is None:
            issues.append(SpecIssue(where + shown, "needs a value"))
        elif option.arg == "none" and value is not None:
            issues.append(SpecIssue(where + shown, "takes no value", value))
        else:
            found.append(Given(option, shown, value, where))
    return found, len(words)


def directives(script_text: str, issues: list[SpecIssue]) -> list[Given]:
    """Options on ``#SBATCH`` lines before the first command, as sbatch reads them."""
    found: list[Given] = []
    for lineno, line in enumerate(script_text.splitlines(), start=1):
        if not line.startswith("#SBATCH"):
            # sbatch stops at the first line whose first non-blank character is not '#'.
            if line.strip() and not line.lstrip().startswith("#"):
                break
            continue
        where = f"#SBATCH line {lineno}: "
        try:
            # Like sbatch: quotes group words, and an unescaped '#' starts a comment.
            words = shlex.split(line[len("#SBATCH") :], comments=True)
        except ValueError as exc:
            issues.append(SpecIssue(where.rstrip(": "), f"cannot be split into words: {exc}", line))
            continue
        if words[:1] in (["hetjob"], ["packjob"], [":"]):
            issues.append(
                SpecIssue(
                    where.rstrip(": "),
                    f"{words[0]} (a heterogeneous job) is refused by gw sbatch: the gateway books, caps and "
                    "records one allocation per run; submit each component as its own job "
                    "(--dependency to order them)",
                )
            )
            break
        found.extend(scan(words, where, issues, stop=False)[0])
    return found


def script_directives(script_text: str) -> tuple[list[tuple[str, str | None, str]], list[SpecIssue]]:
    """The ``#SBATCH`` options of a script as sbatch reads them: (canonical long name, value or None,
    where: "#SBATCH line N: --opt"), in order, and the problems met (unknown option, missing value)."""
    issues: list[SpecIssue] = []
    found = directives(script_text, issues)
    return [(given.name, given.value, given.path) for given in found], issues
