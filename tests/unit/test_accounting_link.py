"""Linking accounting records to gateway attempts (job id + place among the job's records + tag)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from gateway.core.accounting.link import link_records
from gateway.core.accounting.records import GatewayAttempt, RecordLink, SacctRecord, Tres

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def record(job_id="100", *, submit=T0, comment="gw-r-aa-1", account="acct", array=None):
    raw, task = (job_id, None) if array is None else ("999", "1")
    return SacctRecord(
        "c", None, job_id, raw, array, task, "n", "u", account, "cpu", None, "COMPLETED", None, 0, 0,
        submit, submit, submit, submit, 1, 1, Tres(), Tres(), "", "", None, comment, None,
    )  # fmt: skip


def attempt(
    number=1, *, job_id="100", record_no=0, tag="gw-r-aa-1", submit=None, attempt_id=None, cluster="c"
):
    return GatewayAttempt(
        attempt_id or number, "r-aa", number, tag, job_id, record_no, submit, "proj", cluster
    )


def siblings(*records):
    out = {}
    for r in records:
        out.setdefault((r.cluster, r.job_id), []).append((r.submit_time, r.comment))
    return out


def test_requeued_records_link_to_their_own_attempts():
    first = record()
    second = record(submit=T0 + timedelta(minutes=2), comment=None)
    attempts = [attempt(1), attempt(2, record_no=1, tag="gw-r-aa-1~r1")]
    links = link_records([second, first], attempts, siblings(first, second), {})
    assert [link.attempt_number for link in links] == [2, 1]
    assert links[0] == RecordLink("r-aa", 2, 2, "proj")


def test_a_requeue_whose_first_record_is_outside_the_read_uses_stored_siblings():
    second = record(submit=T0 + timedelta(minutes=2), comment=None)
    stored = {("c", "100"): [(T0, "gw-r-aa-1")]}
    stored["c", "100"].append((second.submit_time, None))
    links = link_records([second], [attempt(1), attempt(2, record_no=1)], stored, {})
    assert links[0].attempt_number == 2


def test_submit_time_matches_when_earlier_records_are_unknown():
    second = record(submit=T0 + timedelta(minutes=2), comment=None)
    a2 = attempt(2, record_no=1, submit=second.submit_time)
    links = link_records([second], [attempt(1), a2], siblings(second), {})
    assert links[0].attempt_number == 2  # by its submit time; its rank among what is known (0) would say 1


def test_rank_decides_when_attempts_have_no_submit_time_yet():
    first, second = record(), record(submit=T0 + timedelta(minutes=2), comment=None)
    links = link_records([second], [attempt(1), attempt(2, record_no=1)], siblings(first, second), {})
    assert links[0].attempt_number == 2


def test_a_reused_job_id_with_another_tag_is_not_linked_and_falls_to_its_account():
    other = record(comment="gw-r-bb-1", account="acct")
    links = link_records([other], [attempt(1)], siblings(other), {"acct": "billing-project"})
    assert links[0] == RecordLink(project="billing-project")


def test_records_of_no_attempt_are_charged_by_account():
    plain = record("200", comment=None, account="lab")
    unknown = record("201", comment=None, account="nobody")
    links = link_records([plain, unknown], [attempt(1)], {}, {"lab": "labproj"})
    assert links == [RecordLink(project="labproj"), RecordLink(project=None)]


def test_array_tasks_link_to_the_array_attempt():
    task = replace(record("100_1", array="100"), comment="gw-r-aa-1")
    links = link_records([task], [attempt(1)], siblings(task), {})
    assert links[0].attempt_number == 1


def test_one_job_id_on_two_clusters_links_each_record_to_its_own_clusters_attempt():
    here = record()
    there = replace(record(comment="gw-r-bb-1"), cluster="c2")
    a_here = attempt(1, attempt_id=11)
    a_there = replace(attempt(1, tag="gw-r-bb-1", attempt_id=22, cluster="c2"), run_id="r-bb")
    links = link_records([here, there], [a_here, a_there], siblings(here, there), {})
    assert [(link.run_id, link.attempt_id) for link in links] == [("r-aa", 11), ("r-bb", 22)]


def test_a_record_of_another_cluster_never_links_to_an_attempt_of_this_one():
    there = replace(record(), cluster="c2")  # same job id, same tag even: the cluster decides
    links = link_records([there], [attempt(1)], siblings(there), {"acct": "proj"})
    assert links == [RecordLink(project="proj")]
