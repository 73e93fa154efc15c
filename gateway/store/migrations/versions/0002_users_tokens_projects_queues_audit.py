"""users, tokens, projects, queues, audit

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 04:38:01.629062
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "audit_events",
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=128), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("target_type", sa.String(length=32), nullable=False),
        sa.Column("target_id", sa.String(length=128), nullable=False),
        sa.Column("project", sa.String(length=64), nullable=True),
        sa.Column("source", sa.String(length=128), nullable=True),
        sa.Column("before", sa.JSON(), nullable=True),
        sa.Column("after", sa.JSON(), nullable=True),
        sa.Column("prev_hash", sa.String(length=64), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("seq"),
    )
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_audit_events_action"), ["action"], unique=False)
        batch_op.create_index(batch_op.f("ix_audit_events_actor"), ["actor"], unique=False)
        batch_op.create_index(batch_op.f("ix_audit_events_project"), ["project"], unique=False)
        batch_op.create_index(batch_op.f("ix_audit_events_target_id"), ["target_id"], unique=False)

    op.create_table(
        "audit_head",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "projects",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("slurm_account", sa.String(length=64), nullable=False),
        sa.Column("gpu_cap", sa.Integer(), nullable=True),
        sa.Column("gpu_hours_per_month", sa.Integer(), nullable=True),
        sa.Column("max_queued_jobs", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("name"),
        sa.UniqueConstraint("slurm_account"),
    )
    op.create_table(
        "site_options",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("value", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )
    op.create_table(
        "users",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("os_user", sa.String(length=64), nullable=True),
        sa.Column("is_admin", sa.Boolean(), nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "memberships",
        sa.Column("project", sa.String(length=64), nullable=False),
        sa.Column("user_name", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("gpu_cap", sa.Integer(), nullable=True),
        sa.Column("gpu_hours_per_month", sa.Integer(), nullable=True),
        sa.Column("max_queued_jobs", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["project"], ["projects.name"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_name"], ["users.name"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("project", "user_name"),
    )
    op.create_table(
        "queues",
        sa.Column("project", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("partition", sa.String(length=64), nullable=False),
        sa.Column("qos", sa.String(length=64), nullable=True),
        sa.Column("gpu_types", sa.JSON(), nullable=False),
        sa.Column("max_walltime_min", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["project"], ["projects.name"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("project", "name"),
    )
    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("user_name", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("token_sha256", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["user_name"], ["users.name"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_sha256"),
    )
    with op.batch_alter_table("tokens", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_tokens_prefix"), ["prefix"], unique=False)
        batch_op.create_index(batch_op.f("ix_tokens_user_name"), ["user_name"], unique=False)

    # The audit chain starts from a fixed genesis hash.
    op.execute("INSERT INTO audit_head (id, seq, hash) VALUES (1, 0, '" + "0" * 64 + "')")


def downgrade() -> None:

    with op.batch_alter_table("tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tokens_user_name"))
        batch_op.drop_index(batch_op.f("ix_tokens_prefix"))

    op.drop_table("tokens")
    op.drop_table("queues")
    op.drop_table("memberships")
    op.drop_table("users")
    op.drop_table("site_options")
    op.drop_table("projects")
    op.drop_table("audit_head")
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_audit_events_target_id"))
        batch_op.drop_index(batch_op.f("ix_audit_events_project"))
        batch_op.drop_index(batch_op.f("ix_audit_events_actor"))
        batch_op.drop_index(batch_op.f("ix_audit_events_action"))

    op.drop_table("audit_events")
