"""models, releases, status events, alias moves and policies, promotions

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 10:45:54
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "alias_policies",
        sa.Column("project", sa.String(length=64), nullable=False),
        sa.Column("scope", sa.String(length=64), nullable=False),
        sa.Column("alias", sa.String(length=32), nullable=False),
        sa.Column("roles", sa.JSON(), nullable=False),
        sa.Column("approvals", sa.Integer(), nullable=False),
        sa.Column("gate_suite", sa.String(length=160), nullable=True),
        sa.Column("updated_by", sa.String(length=128), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("project", "scope", "alias"),
    )
    op.create_table(
        "models",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("project", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("project", "name", name="uq_model_name"),
    )
    with op.batch_alter_table("models", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_models_project"), ["project"], unique=False)

    op.create_table(
        "releases",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("model_id", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("artifact_sha256", sa.String(length=64), nullable=False),
        sa.Column("artifact_path", sa.Text(), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("notes", sa.Text(), nullable=False),
        sa.Column("snapshot", sa.JSON(), nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
        ),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["runs.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("model_id", "version", name="uq_release_version"),
    )
    with op.batch_alter_table("releases", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_releases_artifact_sha256"), ["artifact_sha256"], unique=False)
        batch_op.create_index(batch_op.f("ix_releases_model_id"), ["model_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_releases_run_id"), ["run_id"], unique=False)

    op.create_table(
        "alias_events",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("model_id", sa.String(length=64), nullable=False),
        sa.Column("alias", sa.String(length=32), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("from_release", sa.String(length=64), nullable=True),
        sa.Column("to_release", sa.String(length=64), nullable=True),
        sa.Column("actor", sa.String(length=128), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("request_id", sa.String(length=64), nullable=True),
        sa.Column("approvals", sa.JSON(), nullable=False),
        sa.Column("gate_id", sa.String(length=64), nullable=True),
        sa.Column("override", sa.Boolean(), nullable=False),
        sa.Column("policy", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
        ),
        sa.ForeignKeyConstraint(
            ["to_release"],
            ["releases.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("model_id", "alias", "seq", name="uq_alias_event_seq"),
    )
    with op.batch_alter_table("alias_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_alias_events_at"), ["at"], unique=False)
        batch_op.create_index(batch_op.f("ix_alias_events_model_id"), ["model_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_alias_events_to_release"), ["to_release"], unique=False)

    op.create_table(
        "promotion_requests",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("model_id", sa.String(length=64), nullable=False),
        sa.Column("alias", sa.String(length=32), nullable=False),
        sa.Column("release_id", sa.String(length=64), nullable=False),
        sa.Column("requested_by", sa.String(length=128), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
        ),
        sa.ForeignKeyConstraint(
            ["release_id"],
            ["releases.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("promotion_requests", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_promotion_requests_model_id"), ["model_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_promotion_requests_release_id"), ["release_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_promotion_requests_status"), ["status"], unique=False)

    op.create_table(
        "release_status_events",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("release_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("actor", sa.String(length=128), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["release_id"],
            ["releases.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("release_status_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_release_status_events_release_id"), ["release_id"], unique=False)

    op.create_table(
        "promotion_decisions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("request_id", sa.String(length=64), nullable=False),
        sa.Column("decision", sa.String(length=16), nullable=False),
        sa.Column("decider", sa.String(length=128), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["request_id"],
            ["promotion_requests.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("promotion_decisions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_promotion_decisions_request_id"), ["request_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("promotion_decisions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_promotion_decisions_request_id"))

    op.drop_table("promotion_decisions")
    with op.batch_alter_table("release_status_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_release_status_events_release_id"))

    op.drop_table("release_status_events")
    with op.batch_alter_table("promotion_requests", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_promotion_requests_status"))
        batch_op.drop_index(batch_op.f("ix_promotion_requests_release_id"))
        batch_op.drop_index(batch_op.f("ix_promotion_requests_model_id"))

    op.drop_table("promotion_requests")
    with op.batch_alter_table("alias_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_alias_events_to_release"))
        batch_op.drop_index(batch_op.f("ix_alias_events_model_id"))
        batch_op.drop_index(batch_op.f("ix_alias_events_at"))

    op.drop_table("alias_events")
    with op.batch_alter_table("releases", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_releases_run_id"))
        batch_op.drop_index(batch_op.f("ix_releases_model_id"))
        batch_op.drop_index(batch_op.f("ix_releases_artifact_sha256"))

    op.drop_table("releases")
    with op.batch_alter_table("models", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_models_project"))

    op.drop_table("models")
    op.drop_table("alias_policies")
