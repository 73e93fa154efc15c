"""the OS user of a run; idempotency keys of submissions

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 08:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("os_user", sa.String(length=32), nullable=True))
    op.create_table(
        "idempotency_keys",
        sa.Column("user", sa.String(length=128), nullable=False),
        sa.Column("key", sa.String(length=128), nullable=False),
        sa.Column("operation", sa.String(length=96), nullable=False),
        sa.Column("request_sha256", sa.String(length=64), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("user", "key"),
    )
    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.create_index("ix_idempotency_keys_expires_at", ["expires_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.drop_index("ix_idempotency_keys_expires_at")
    op.drop_table("idempotency_keys")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("os_user")
