"""environment builds retried (issue 30): a python version's build attempts, when the current one was
asked for, and the failures of the earlier ones (the site's built-in eval environment rebuilds a
failed build on its next need, a bounded number of times; a build whose registering request died
before submitting its job is found and marked failed, or resubmitted)

Revision ID: 0023
Revises: 0021
Create Date: 2026-12-04 19:10:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("environment_versions") as batch:
        batch.add_column(sa.Column("build_attempts", sa.Integer(), nullable=False, server_default="1"))
        batch.add_column(sa.Column("build_requested_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("build_failures", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("environment_versions") as batch:
        batch.drop_column("build_failures")
        batch.drop_column("build_requested_at")
        batch.drop_column("build_attempts")
