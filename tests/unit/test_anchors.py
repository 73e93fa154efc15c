"""Judging an audit log against checkpoints kept outside its database (gateway/core/audit/anchors.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from gateway.core.audit.anchors import (
    MAX_LISTED,
    AnchorRead,
    AnchorStart,
    Checkpoint,
    judge,
    parse_line,
    parse_lines,
    parse_tail,
    plan_checkpoint,
)

T0 = datetime(2026, 11, 30, 4, 58, 58, 123456, tzinfo=UTC)
PATH = "/var/lib/gateway/gateway-audit-anchors.jsonl"


def h(n: int) -> str:
    """A made-up event hash."""
    return f"{n:064x}"


def cp(seq: int, minutes: int = 0, digest: str | None = None) -> Checkpoint:
    return Checkpoint(seq, digest or h(seq), T0 + timedelta(minutes=minutes))


def chain(*seqs: int) -> dict[int, str]:
    return {s: h(s) for s in seqs}


START = AnchorStart(seq=3, at=T0, path=PATH)


def found(*checkpoints: Checkpoint, problems=(), mode=0o600) -> AnchorRead:
    return AnchorRead(PATH, checkpoints=tuple(checkpoints), problems=tuple(problems), mode=mode)


# -- lines -----------------------------------------------------------------------------------


def test_a_checkpoint_line_reads_back_as_itself():
    checkpoint = cp(43)
    line = checkpoint.line()
    assert line.endswith("\n") and line.count("\n") == 1
    assert json.loads(line) == {"seq": 43, "hash": h(43), "at": "2026-11-30T04:58:58.123456+00:00"}
    assert parse_line(line[:-1].encode()) == checkpoint


def test_a_time_in_another_zone_is_read_as_utc():
    line = json.dumps({"seq": 1, "hash": h(1), "at": "2026-11-30T05:58:58.123456+01:00"}).encode()
    assert parse_line(line).at == T0 and parse_line(line).at.tzinfo is UTC


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b"not json", "not JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[1, 2]", "not a checkpoint"),
        (json.dumps({"seq": 1, "hash": h(1)}).encode(), "not a checkpoint"),
        (json.dumps({"seq": 1, "hash": h(1), "at": T0.isoformat(), "x": 1}).encode(), "not a checkpoint"),
        (json.dumps({"seq": 0, "hash": h(1), "at": T0.isoformat()}).encode(), "seq must be"),
        (json.dumps({"seq": True, "hash": h(1), "at": T0.isoformat()}).encode(), "seq must be"),
        (json.dumps({"seq": "4", "hash": h(1), "at": T0.isoformat()}).encode(), "seq must be"),
        (json.dumps({"seq": 1, "hash": "AB" * 32, "at": T0.isoformat()}).encode(), "hash must be"),
        (json.dumps({"seq": 1, "hash": h(1)[:63], "at": T0.isoformat()}).encode(), "hash must be"),
        (json.dumps({"seq": 1, "hash": h(1), "at": "2026-11-30T04:58:58"}).encode(), "UTC offset"),
        (json.dumps({"seq": 1, "hash": h(1), "at": "yesterday"}).encode(), "UTC offset"),
        (json.dumps({"seq": 1, "hash": h(1), "at": 17}).encode(), "UTC offset"),
    ],
)
def test_a_line_that_is_not_a_checkpoint_says_why(raw, says):
    with pytest.raises(ValueError, match=says):
        parse_line(raw)


def test_lines_name_the_bad_ones_by_number_and_keep_the_good_ones():
    lines = [cp(1).line().encode(), b"garbage\n", b"\n", cp(5).line().encode(), b'{"seq": 6']
    checkpoints, problems = parse_lines(lines)
    assert checkpoints == (cp(1), cp(5))
    assert problems[0].startswith("line 2: it is not JSON") and problems[1].startswith(
        "line 3: it is not JSON"
    )
    assert problems[2] == "line 5 is cut short (no newline at its end: a write was interrupted?)"


def test_a_file_full_of_garbage_lists_a_few_lines_then_counts_the_rest():
    _, problems = parse_lines([b"x\n"] * (MAX_LISTED + 7))
    assert len(problems) == MAX_LISTED + 1 and problems[-1] == "7 more lines are not checkpoints"


def test_the_tail_gives_the_last_complete_line_only():
    text = (cp(1).line() + cp(2).line()).encode()
    assert parse_tail(text, whole_file=True) == ((cp(2),), ())
    assert parse_tail(text[5:], whole_file=False) == ((cp(2),), ())  # the first line partly read
    assert parse_tail(b"", whole_file=True) == ((), ())
    assert parse_tail(text[:-1], whole_file=True)[1] == (
        "the last line is cut short (no newline at its end: a write was interrupted?)",
    )
    assert parse_tail(b"x" * 50 + b"\n", whole_file=False)[1] == (
        "the last line is longer than any checkpoint",
    )
    assert parse_tail(text + b"oops\n", whole_file=True)[1][0].startswith("the last line: it is not JSON")


# -- judging the log -------------------------------------------------------------------------


def test_an_intact_log_agrees_with_its_checkpoints():
    read = found(cp(3), cp(7, 1), cp(7, 2), cp(9, 3))
    assert judge(read, head_seq=12, recorded=chain(3, 7, 9), start=START) == []


def test_a_log_cut_at_its_end_is_named_with_the_checkpoint_that_shows_it():
    read = found(cp(3), cp(41, 1), cp(43, 2))
    (problem,) = judge(read, head_seq=41, recorded=chain(3, 41), start=START)
    assert problem == (
        f"the log ends at event 41 but the checkpoint of 2026-11-30 05:00:58 UTC recorded event 43 with hash "
        f"{h(43)[:16]}...: events were removed from the end"
    )


def test_a_deeper_cut_counts_every_checkpoint_past_the_end():
    read = found(cp(3), cp(10, 1), cp(20, 2), cp(30, 3))
    (problem,) = judge(read, head_seq=5, recorded=chain(3), start=START)
    assert "recorded event 30" in problem and "(2 earlier checkpoints also lie past its end)" in problem


def test_an_emptied_log_is_a_cut_too():
    (problem,) = judge(found(cp(3)), head_seq=0, recorded={}, start=None)
    assert problem.startswith("the log is empty but the checkpoint of") and "removed from the end" in problem


def test_rewritten_anchored_history_names_the_event_and_both_hashes():
    read = found(cp(3), cp(7, 1))
    recorded = {3: h(3), 7: h(700)}
    (problem,) = judge(read, head_seq=9, recorded=recorded, start=START)
    assert problem == (
        f"event 7 is not the one the checkpoint of 2026-11-30 04:59:58 UTC (event 7, hash {h(7)[:16]}...) "
        f"recorded (its hash is now {h(700)[:16]}...): the log up to event 7 was rewritten"
    )


def test_an_anchored_event_deleted_from_the_log_is_named():
    (problem,) = judge(found(cp(3), cp(7, 1)), head_seq=9, recorded=chain(3), start=START)
    assert problem.startswith("event 7, recorded by the checkpoint of") and problem.endswith(
        "missing from the log"
    )


def test_a_wholesale_rewrite_lists_a_few_checkpoints_then_counts():
    many = [cp(n, n) for n in range(3, 3 + MAX_LISTED + 4)]
    problems = judge(found(*many), head_seq=100, recorded={3: h(3)}, start=START)
    assert len(problems) == MAX_LISTED + 1 and problems[-1] == "3 more checkpoints no longer match the log"


def test_no_file_and_no_anchor_event_is_not_a_problem_yet():
    assert judge(AnchorRead(PATH, exists=False), head_seq=5, recorded={}, start=None) == []


def test_a_missing_file_that_the_log_says_exists_is_reported():
    (problem,) = judge(AnchorRead(PATH, exists=False), head_seq=5, recorded={}, start=START)
    assert problem == (
        f"the log says checkpoints have been written to {PATH} since event 3 (2026-11-30 04:58:58 UTC), "
        "but it is missing"
    )


def test_a_file_at_another_path_than_the_log_says_is_named():
    moved = AnchorStart(seq=3, at=T0, path="/old/anchors.jsonl")
    (problem,) = judge(AnchorRead(PATH, exists=False), head_seq=5, recorded={}, start=moved)
    assert (
        "written to /old/anchors.jsonl" in problem
        and f"this gateway reads {PATH}, which is missing" in problem
    )


def test_a_replaced_or_cut_file_lacks_the_checkpoint_of_its_start():
    (problem,) = judge(found(cp(5)), head_seq=5, recorded=chain(5), start=START)
    assert problem.endswith(
        f"{PATH} does not hold the checkpoint of event 3: it was replaced, or cut at its beginning"
    )
    (empty,) = judge(found(), head_seq=5, recorded={}, start=START)
    assert empty.endswith(f"but {PATH} holds no checkpoint")


def test_an_unreadable_file_is_reported_and_nothing_else_is_claimed():
    read = AnchorRead(PATH, error="Permission denied")
    assert judge(read, head_seq=5, recorded={}, start=START) == [
        f"cannot read the anchor file {PATH}: Permission denied"
    ]


def test_malformed_lines_are_reported_with_the_file():
    read = found(cp(3), problems=["line 2: it is not JSON (Expecting value)"])
    assert judge(read, head_seq=5, recorded=chain(3), start=START) == [
        f"the anchor file {PATH}, line 2: it is not JSON (Expecting value)"
    ]


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666])
def test_a_file_others_can_write_is_reported(mode):
    (problem,) = judge(found(cp(3), mode=mode), head_seq=5, recorded=chain(3), start=START)
    assert f"mode {mode:04o}" in problem and "make it 0600" in problem


def test_a_file_others_can_only_read_is_fine():
    assert judge(found(cp(3), mode=0o644), head_seq=5, recorded=chain(3), start=START) == []


# -- planning a checkpoint -------------------------------------------------------------------


def last(*checkpoints: Checkpoint, exists=True, problems=(), error=None) -> AnchorRead:
    return AnchorRead(PATH, exists=exists, checkpoints=checkpoints, problems=tuple(problems), error=error)


def test_a_head_that_moved_is_appended():
    plan = plan_checkpoint(last(cp(7)), head_seq=9, recorded_at_last=h(7), start=START)
    assert plan.action == "append" and plan.reason == "the log moved from event 7 to event 9"


def test_a_head_that_did_not_move_is_left_alone():
    plan = plan_checkpoint(last(cp(9)), head_seq=9, recorded_at_last=h(9), start=START)
    assert plan.action == "none" and plan.reason.startswith("no new events since the checkpoint of")


def test_the_first_checkpoint_starts_the_file():
    assert (
        plan_checkpoint(last(exists=False), head_seq=4, recorded_at_last=None, start=None).action == "start"
    )
    assert plan_checkpoint(last(), head_seq=0, recorded_at_last=None, start=None).action == "start"


@pytest.mark.parametrize(
    ("read", "head_seq", "recorded", "start", "says"),
    [
        (last(exists=False), 9, None, START, "but it is missing; not starting it again on my own"),
        (last(), 9, None, START, "holds no checkpoint; not starting it again on my own"),
        (last(cp(43)), 41, None, START, "the log ends at event 41 but"),
        (last(cp(7)), 9, h(700), START, "event 7 is not the one"),
        (last(cp(7)), 9, None, START, "event 7, recorded by"),
        (
            last(problems=["the last line: it is not JSON"]),
            9,
            None,
            START,
            "no checkpoint is added to a damaged",
        ),
        (last(error="Permission denied"), 9, None, START, "cannot read the anchor file"),
    ],
)
def test_a_damaged_log_or_file_is_never_papered_over(read, head_seq, recorded, start, says):
    plan = plan_checkpoint(read, head_seq=head_seq, recorded_at_last=recorded, start=start)
    assert plan.action == "refuse" and says in plan.reason
    if read.error is None:
        assert "gw admin audit checkpoint --new-file" in plan.reason
