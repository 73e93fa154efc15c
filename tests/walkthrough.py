"""The docs' walk-throughs as scripts: the shell blocks of README.md and docs/*.md marked
``<!-- walkthrough: NAME -->`` (the line before the opening ```sh fence), read and run as written.

How a block is read, so that the docs stay readable and the commands stay real:

- one command a line; blank lines are skipped; a line's trailing ``# comment`` says what the
  command prints or does, for the reader;
- a comment that begins ``exit N`` says the command exits N (the promotion refused, the run
  cancelled ...); any other command must exit 0;
- an id in a comment (``r-``, ``ev-``, ``er-``, ``gd-``, ``dv-``, ``pr-`` followed by 16 hex digits)
  is an *example* of what that command prints: the real id of the same kind is taken from its
  output (the first example of a kind from the first new id of that kind printed, and so on; an
  example an earlier command printed must appear as its real id in this output), and every later
  use of the example id, in any command of the walk-through or of the walk-throughs run after it,
  is replaced by the real one. A command that uses an example id no earlier command printed fails,
  and so does one whose output lacks the id its comment promises: the id a user copies from one
  command is the id the next one takes.

Pure functions here (``steps``, ``split_comment``, ``examples``); the test that runs them against a
real ``gw serve`` and the cluster is tests/service/test_walkthroughs.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

MARK = re.compile(r"<!--\s*walkthrough:\s*([A-Za-z0-9_-]+)\s*-->")
EXAMPLE_ID = re.compile(r"\b(r|ev|er|gd|dv|pr)-[0-9a-f]{16}\b")
EXIT = re.compile(r"^exit (\d+)\b")


@dataclass(frozen=True)
class Step:
    """One command of a walk-through, where it stands, and what its comment promises."""

    source: str  # file:line
    command: str
    comment: str
    exit_code: int  # what it must exit with
    prints: tuple[str, ...]  # example ids its comment says it prints, in order


def split_comment(line: str) -> tuple[str, str]:
    """``(command, comment)``: the comment starts at the first ``#`` outside quotes that opens the
    line or follows a blank (as the shell reads it)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1 :].strip()
    return line.rstrip(), ""


def examples(text: str) -> tuple[str, ...]:
    """The example ids in ``text``, in order."""
    return tuple(m.group(0) for m in EXAMPLE_ID.finditer(text))


def steps(markdown: str, name: str, source: str = "") -> list[Step]:
    """The steps of walk-through ``name`` in ``markdown``; ValueError when it is not there."""
    lines = markdown.splitlines()
    for at, line in enumerate(lines):
        found = MARK.search(line)
        if not found or found.group(1) != name:
            continue
        fence = at + 1
        if fence >= len(lines) or lines[fence].strip() not in ("```sh", "```bash"):
            raise ValueError(f"{source}:{at + 1}: walkthrough {name} must be followed by a ```sh block")
        out = []
        for number in range(fence + 1, len(lines)):
            text = lines[number]
            if text.strip() == "```":
                return out
            command, comment = split_comment(text.strip())
            if not command:
                continue
            code = EXIT.match(comment)
            out.append(
                Step(
                    f"{source}:{number + 1}",
                    command,
                    comment,
                    int(code.group(1)) if code else 0,
                    examples(comment),
                )
            )
        raise ValueError(f"{source}:{at + 1}: walkthrough {name}'s block is not closed")
    raise ValueError(f"{source}: no <!-- walkthrough: {name} --> block")


def names(markdown: str) -> list[str]:
    """Every walk-through named in ``markdown``, in order."""
    return MARK.findall(markdown)


class Ids:
    """Example ids and the real ones the walk-through's commands printed."""

    def __init__(self) -> None:
        self.real: dict[str, str] = {}

    def substitute(self, step: Step) -> str:
        """The command with every example id replaced; AssertionError naming one nobody printed."""
        promised = set(step.prints)
        for example in examples(step.command):
            if example not in self.real and example not in promised:
                raise AssertionError(
                    f"{step.source}: `{step.command}` uses {example}, which no earlier command's comment "
                    "says it prints"
                )
        return EXAMPLE_ID.sub(lambda m: self.real.get(m.group(0), m.group(0)), step.command)

    def capture(self, step: Step, output: str) -> None:
        """Take the real ids of the kinds ``step``'s comment promises from ``output``."""
        taken: dict[str, int] = {}
        for example in step.prints:
            if example in self.real:  # one printed before: this command must show that same one
                if self.real[example] not in output:
                    raise AssertionError(
                        f"{step.source}: the comment says `{step.command}` shows {example} "
                        f"({self.real[example]} here); it printed:\n{output}"
                    )
                continue
            kind = example.split("-")[0]
            known = set(self.real.values())  # a rerun prints its original too: only new ids count
            printed = [
                m.group(0)
                for m in EXAMPLE_ID.finditer(output)
                if m.group(1) == kind and m.group(0) not in known
            ]
            index = taken.get(kind, 0)
            if index >= len(printed):
                raise AssertionError(
                    f"{step.source}: the comment says `{step.command}` prints a {kind}-... id "
                    f"({example}); it printed:\n{output}"
                )
            self.real.setdefault(example, printed[index])
            taken[kind] = index + 1


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")
