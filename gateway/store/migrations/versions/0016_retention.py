"""retention: holds, deletions (intent, then done), run-directory sizes and their history, departures
(issue 32)

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-03 09:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "retention_holds",
        sa.Column("id", sa.String(length=64), primary_key=True),
        sa.Column("target_type", sa.String(length=16), nullable=False),
        sa.Column("target_id", sa.String(length=160), nullable=False),
        sa.Column("project", sa.String(length=64), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lifted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("lifted_by", sa.String(length=128), nullable=True),
        sa.Column("lift_reason", sa.Text(), nullable=True),
    )
    op.create_index("ix_retention_holds_target_id", "retention_holds", ["target_id"])
    op.create_index("ix_retention_holds_project", "retention_holds", ["project"])
    op.create_index("ix_retention_holds_lifted_at", "retention_holds", ["lifted_at"])
    op.create_table(
        "retention_deletions",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column(
            "run_id", sa.String(length=64), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("project", sa.String(length=64), nullable=False),
        sa.Column("rule", sa.String(length=32), nullable=False),
        sa.Column("rel_path", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("run_dir", sa.String(length=1024), nullable=False),
        sa.Column("os_user", sa.String(length=64), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("files", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("sweep_id", sa.String(length=64), nullable=False),
        sa.Column("planned_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("done_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
    )
    for column in ("run_id", "project", "state", "sweep_id"):
        op.create_index(f"ix_retention_deletions_{column}", "retention_deletions", [column])
    op.create_table(
        "run_storage",
        sa.Column(
            "run_id", sa.String(length=64), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("project", sa.String(length=64), nullable=False),
        sa.Column("submitter", sa.String(length=128), nullable=False),
        sa.Column("run_dir", sa.String(length=1024), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("files", sa.Integer(), nullable=False),
        sa.Column("freeable_bytes", sa.BigInteger(), nullable=False),
        sa.Column("measured_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
    )
    op.create_index("ix_run_storage_project", "run_storage", ["project"])
    op.create_index("ix_run_storage_submitter", "run_storage", ["submitter"])
    op.create_table(
        "storage_samples",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("project", sa.String(length=64), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
    )
    op.create_index("ix_storage_samples_project", "storage_samples", ["project"])
    op.create_index("ix_storage_samples_at", "storage_samples", ["at"])
    op.create_table(
        "retention_departures",
        sa.Column("project", sa.String(length=64), primary_key=True),
        sa.Column("user_name", sa.String(length=64), primary_key=True),
        sa.Column("left_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("steward", sa.String(length=64), nullable=True),
    )


def downgrade() -> None:
    for table in (
        "retention_departures",
        "storage_samples",
        "run_storage",
        "retention_deletions",
        "retention_holds",
    ):
        op.drop_table(table)
