"""The site's environments: who reads them, and when a run may name a version still building."""

from __future__ import annotations

import pytest

from gateway.core.access.values import Principal
from gateway.core.envs.lockfile import lock_content
from gateway.core.envs.record import SITE_PROJECT, content_digest
from gateway.services.envs.catalog import readable, waits_for

HASH = "ab" * 32


@pytest.mark.parametrize(
    ("dependency", "job", "waits"),
    [
        ("afterok:17", "17", True),
        ("afterany:3,afterok:9:17", "17", True),
        ("afterok:170", "17", False),
        ("afterany:17", "17", False),  # it would start when the build failed
        ("afterok:17?afterany:3", "17", False),  # '?': another condition could start it first
        (None, "17", False),
        ("afterok:17", None, False),  # the build job is not submitted yet
        ("singleton", "17", False),
    ],
)
def test_a_run_waits_for_a_build_only_with_afterok_on_its_job_all_required(dependency, job, waits):
    assert waits_for(dependency, job) is waits


def test_everyone_reads_the_sites_environments_and_only_members_a_projects():
    outsider = Principal(user="o", roles={}, is_admin=False)
    viewer = Principal(user="v", roles={"demo": "viewer"}, is_admin=False)
    assert readable(outsider, SITE_PROJECT) and not readable(outsider, "demo") and readable(viewer, "demo")


def test_a_lock_that_may_build_sources_is_another_content_than_the_wheels_only_one():
    lock = f"gwtoy==1.0 --hash=sha256:{HASH}\n"
    wheels, sources = lock_content(lock), lock_content(lock, pip_sources=True)
    assert wheels["locked"] == {"gwtoy": "1.0"} and "pip_sources" not in wheels and sources["pip_sources"]
    assert content_digest("python", wheels) != content_digest("python", sources)
    with pytest.raises(ValueError, match="not pinned"):
        lock_content("gwtoy>=1\n")
