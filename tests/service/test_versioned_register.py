"""The registration the three versioned stores share (gateway.store.versioned), on both databases:
a registration that loses the race for a version number is tried once more and finds the winner's.
"""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy.orm import Session

from gateway.core.envs.record import EnvVersion
from gateway.store.audit.audit import AuditEntry
from gateway.store.db import Database
from gateway.store.envs.envs import ENV_VERSIONS, EnvStore, NewEnvVersion, to_version
from gateway.store.envs.models import EnvironmentRow, EnvVersionRow
from gateway.store.versioned import NewParent, new_id

AUDIT = AuditEntry("tester", "env.register", "environment_version", "", "test", "pytest")


@pytest.fixture(scope="module")
def db(database_url):
    database = Database(database_url)
    database.upgrade()
    yield database
    database.dispose()


def _image(digest: str) -> NewEnvVersion:
    return NewEnvVersion(
        kind="image", digest=digest, content={"image": digest}, status="ready", registered_by="t"
    )


def test_a_registration_that_loses_the_race_for_a_number_returns_the_winners_version(db):
    envs, project, name = EnvStore(db), f"p{uuid.uuid4().hex[:10]}", "py"
    first, created = envs.register(project=project, name=name, version=_image("a" * 64), audit=AUDIT)
    assert created and first.number == 1
    won: list[tuple[EnvVersion, bool]] = []
    writes: list[int] = []

    def write(session: Session, env: EnvironmentRow, number: int) -> EnvVersion:
        writes.append(number)
        if not won:  # another registration of the same content commits between numbering and writing
            won.append(envs.register(project=project, name=name, version=_image("b" * 64), audit=AUDIT))
        row = EnvVersionRow(
            id=new_id("ev"),
            environment_id=env.id,
            number=number,
            kind="image",
            digest="b" * 64,
            content={},
            status="ready",
            registered_by="t",
        )
        session.add(row)
        session.flush()  # version 2 is the winner's: the unique number fails this transaction
        return to_version(row, env)

    version, created = ENV_VERSIONS.register(
        db, project=project, name=name, digest="b" * 64, parent=NewParent("env", "", "t"), write=write
    )
    ((winner, winner_created),) = won
    assert winner_created and winner.number == 2
    assert (version.id, version.number, created) == (winner.id, 2, False)
    assert writes == [2]  # the second try found the winner's version and wrote nothing
    assert [v.digest[0] for v in envs.versions(first.environment_id)] == ["a", "b"]
