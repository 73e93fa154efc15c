"""environments, environment_versions, environment_observations (issue 30: training environments as
versioned records; what each job found at its start)

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-03 09:10:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "environments",
        sa.Column("id", sa.String(length=64), primary_key=True),
        sa.Column("project", sa.String(length=64), nullable=False, index=True),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("project", "name", name="uq_environment_name"),
    )
    op.create_table(
        "environment_versions",
        sa.Column("id", sa.String(length=64), primary_key=True),
        sa.Column(
            "environment_id",
            sa.String(length=64),
            sa.ForeignKey("environments.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        ),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False, index=True),
        sa.Column("content", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("location", sa.Text(), nullable=True),
        sa.Column("packages", sa.JSON(), nullable=False),
        sa.Column("packages_sha256", sa.String(length=64), nullable=True),
        sa.Column("build_run_id", sa.String(length=64), nullable=True, index=True),
        sa.Column("failure", sa.Text(), nullable=True),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("registered_by", sa.String(length=128), nullable=False),
        sa.Column("registered_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "parent_id",
            sa.String(length=64),
            sa.ForeignKey("environment_versions.id"),
            nullable=True,
            index=True,
        ),
        sa.Column("parent_diff", sa.JSON(), nullable=True),
        sa.UniqueConstraint("environment_id", "number", name="uq_environment_version_number"),
        sa.UniqueConstraint("environment_id", "digest", name="uq_environment_version_digest"),
    )
    op.create_table(
        "environment_observations",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column(
            "run_id",
            sa.String(length=64),
            sa.ForeignKey("runs.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        ),
        sa.Column("job_id", sa.String(length=64), nullable=False),
        sa.Column(
            "version_id",
            sa.String(length=64),
            sa.ForeignKey("environment_versions.id"),
            nullable=False,
            index=True,
        ),
        sa.Column("observed", sa.JSON(), nullable=False),
        sa.Column("drift", sa.JSON(), nullable=True),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("run_id", "job_id", name="uq_environment_observation_job"),
    )


def downgrade() -> None:
    op.drop_table("environment_observations")
    op.drop_table("environment_versions")
    op.drop_table("environments")
