"""Which clusters a project's Slurm account goes to, and how the plan names them (pure parts of the sync)."""

from __future__ import annotations

from gateway.adapters.slurm.associations import Change
from gateway.core.projects import Project, Queue, Quota
from gateway.core.site.clusters import Cluster
from gateway.services.site.slurm_sync import SlurmPlan, on_cluster


def project(name: str, *clusters: str | None) -> Project:
    queues = [Queue(f"q{i}", "cpu", None, [], None, cluster=c) for i, c in enumerate(clusters)]
    return Project(name, "", f"acct{name}", Quota(), [], queues)


def test_a_project_is_on_each_cluster_where_it_has_a_queue():
    both, second, unnamed, none = (
        project("both", "a", "b"),
        project("second", "b"),
        project("unnamed", None),
        project("none"),
    )
    projects = [both, second, unnamed, none]
    assert [p.name for p in on_cluster(projects, "a", "a")] == ["both", "unnamed", "none"]
    assert [p.name for p in on_cluster(projects, "b", "a")] == ["both", "second"]
    assert on_cluster(projects, None, None) == projects  # one unnamed cluster: every project


def test_plan_lines_name_the_cluster_only_when_the_site_names_clusters():
    change = Change("add account", "x", None, {}, {"gpus": 2})
    named = SlurmPlan(((Cluster("a"), [change]), (Cluster("b"), [])), frozenset(), frozenset({"x"}))
    assert named.lines == ["a: add account x: GrpTRES gres/gpu=2"] and named.changes == [change]
    one = SlurmPlan(((None, [change]),), frozenset(), frozenset({"x"}))
    assert one.lines == ["add account x: GrpTRES gres/gpu=2"]
