"""gate policy terms: a policy's pinned suite version and baseline alias; a suite's settings (who may
register new versions, whether self-reviews count); what a gate decision was made for and the reviews
it did not count (issue 27, items 1, 2 and 6)

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02 17:20:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("alias_policies", schema=None) as batch_op:
        # a version number as text, or "latest"; NULL (a policy from before 0011): latest
        batch_op.add_column(sa.Column("gate_version", sa.String(length=16), nullable=True))
        # the alias whose release is the baseline; NULL: the policy's own alias
        batch_op.add_column(sa.Column("gate_baseline", sa.String(length=32), nullable=True))
    with op.batch_alter_table("eval_suites", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("versions_by", sa.String(length=16), nullable=False, server_default="lead")
        )
        batch_op.add_column(
            sa.Column("count_self_reviews", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    with op.batch_alter_table("gate_decisions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("made_for", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("reviews_not_counted", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("gate_decisions", schema=None) as batch_op:
        batch_op.drop_column("reviews_not_counted")
        batch_op.drop_column("made_for")
    with op.batch_alter_table("eval_suites", schema=None) as batch_op:
        batch_op.drop_column("count_self_reviews")
        batch_op.drop_column("versions_by")
    with op.batch_alter_table("alias_policies", schema=None) as batch_op:
        batch_op.drop_column("gate_baseline")
        batch_op.drop_column("gate_version")
