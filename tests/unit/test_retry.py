"""The retry policy table."""

from gateway.core.runs.retry import RetryPolicy, decide


def test_infrastructure_failures_retry_user_failures_do_not():
    policy = RetryPolicy()
    for klass in ("preempted", "node_failure"):
        assert decide(failure_class=klass, attempt_number=1, policy=policy).retry
    for klass in ("user_code", "data_access", "environment", "out_of_memory", "cancelled", "unknown"):
        decision = decide(failure_class=klass, attempt_number=1, policy=policy)
        assert not decision.retry and "fix and rerun" in decision.why


def test_time_limit_only_for_resumable_runs():
    policy = RetryPolicy()
    assert not decide(failure_class="time_limit", attempt_number=1, policy=policy).retry
    assert decide(failure_class="time_limit", attempt_number=1, policy=policy, resumable=True).retry


def test_cap_backoff_and_excluded_node():
    policy = RetryPolicy(max_attempts=3, backoff_s=10)
    first = decide(failure_class="node_failure", attempt_number=1, policy=policy, failed_nodes=["c1"])
    second = decide(failure_class="node_failure", attempt_number=2, policy=policy, failed_nodes=["c2"])
    third = decide(failure_class="node_failure", attempt_number=3, policy=policy)
    assert (first.after_s, second.after_s) == (10, 20)
    assert first.exclude_nodes == ["c1"] and "attempt 2 of 3" in first.why
    assert not third.retry and "3 of 3" in third.why
    assert (
        decide(failure_class="preempted", attempt_number=1, policy=policy, failed_nodes=["c1"]).exclude_nodes
        == []
    )


def test_policy_from_a_site_file_mapping():
    policy = RetryPolicy.from_dict({"classes": ["preempted"], "max_attempts": 2})
    assert policy.classes == ("preempted",) and policy.max_attempts == 2 and policy.backoff_s == 30
    assert RetryPolicy.from_dict(None) == RetryPolicy()
