"""How the docs' walk-through blocks are read (tests/walkthrough.py): comments, exit codes, example ids
carried from one command to the next, and the mistakes a doc can make."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.walkthrough import Ids, names, split_comment, steps

REPO = Path(__file__).resolve().parents[2]
DOC = """
Intro.

<!-- walkthrough: demo -->
```sh
export PATH=$PWD/.venv/bin:$PATH
gw submit spec.yaml        # Submitted batch job 1 / run r-0000000000000001
gw show r-0000000000000001 --note "a # inside quotes"
gw wait r-0000000000000001 # exit 3: cancelled

gw eval run s@1 --artifact r-0000000000000001:m.json  # run r-00000000000000e1, eval ev-00000000000000a1
```
"""


def test_steps_read_commands_comments_exit_codes_and_promised_ids():
    got = steps(DOC, "demo", source="doc.md")
    assert [s.command for s in got] == [
        "export PATH=$PWD/.venv/bin:$PATH",
        "gw submit spec.yaml",
        'gw show r-0000000000000001 --note "a # inside quotes"',
        "gw wait r-0000000000000001",
        "gw eval run s@1 --artifact r-0000000000000001:m.json",
    ]
    assert [s.exit_code for s in got] == [0, 0, 0, 3, 0]
    assert got[1].prints == ("r-0000000000000001",) and got[1].source == "doc.md:7"
    assert got[4].prints == ("r-00000000000000e1", "ev-00000000000000a1")
    assert names(DOC) == ["demo"]


def test_ids_printed_are_the_ids_taken_next():
    submit, show, _, run = steps(DOC, "demo")[1:]
    ids = Ids()
    ids.capture(
        submit, "Submitted batch job 7\nrun r-abcdefabcdef0001  (queued)  watch: gw show r-abcdefabcdef0001"
    )
    assert ids.substitute(show) == 'gw show r-abcdefabcdef0001 --note "a # inside quotes"'
    # the eval prints the model's run too: only ids not seen before are taken for the new examples
    ids.capture(
        run,
        "artifact of r-abcdefabcdef0001\n"
        "run r-abcdefabcdef00e1 queued  watch: gw eval show ev-abcdefabcdef00a1",
    )
    assert ids.real["r-00000000000000e1"] == "r-abcdefabcdef00e1"
    assert ids.real["ev-00000000000000a1"] == "ev-abcdefabcdef00a1"
    # a comment naming an id printed before: the output must show it (the real one)
    (again,) = steps("<!-- walkthrough: t -->\n```sh\ngw trace x  # r-00000000000000e1\n```\n", "t")
    ids.capture(again, "run r-abcdefabcdef00e1 read it")
    with pytest.raises(AssertionError, match="shows r-00000000000000e1"):
        ids.capture(again, "no runs read it")


def test_an_id_nobody_printed_and_an_id_not_printed_are_named():
    submit, show = steps(DOC, "demo")[1:3]
    with pytest.raises(AssertionError, match="uses r-0000000000000001, which no earlier command"):
        Ids().substitute(show)
    with pytest.raises(AssertionError, match=r"prints a r-\.\.\. id"):
        Ids().capture(submit, "error: no such queue")


def test_a_missing_or_unclosed_block_is_an_error():
    with pytest.raises(ValueError, match="no <!-- walkthrough: other --> block"):
        steps(DOC, "other", source="doc.md")
    with pytest.raises(ValueError, match="not closed"):
        steps("<!-- walkthrough: x -->\n```sh\ngw runs\n", "x")
    with pytest.raises(ValueError, match="must be followed by a ```sh block"):
        steps("<!-- walkthrough: x -->\ntext\n", "x")


def test_split_comment_is_the_shells():
    assert split_comment("gw runs   # list") == ("gw runs", "list")
    assert split_comment("echo a#b") == ("echo a#b", "")
    assert split_comment("echo '# not' # yes") == ("echo '# not'", "yes")


def test_the_marked_docs_hold_the_walkthroughs_the_test_runs():
    from tests.service.test_walkthroughs import WALKTHROUGHS

    for doc, name in WALKTHROUGHS:
        assert name in names((REPO / doc).read_text()), f"{doc} lost its <!-- walkthrough: {name} --> block"
        assert steps((REPO / doc).read_text(), name, source=doc)
