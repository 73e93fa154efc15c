"""accounting records steps rate versions

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 13:50:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rate_versions",
        sa.Column("version", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("currency", sa.String(length=8), nullable=False),
        sa.Column("rates", sa.JSON(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("applied_by", sa.String(length=128), nullable=False),
        sa.Column("applied_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("version"),
    )
    with op.batch_alter_table("rate_versions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_rate_versions_sha256"), ["sha256"], unique=False)

    op.create_table(
        "accounting_records",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("cluster", sa.String(length=64), nullable=False),
        sa.Column("job_id_raw", sa.String(length=32), nullable=False),
        sa.Column("submit_time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("db_index", sa.BigInteger(), nullable=True),
        sa.Column("job_id", sa.String(length=64), nullable=False),
        sa.Column("array_job_id", sa.String(length=32), nullable=True),
        sa.Column("array_task_id", sa.String(length=64), nullable=True),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("user_name", sa.String(length=64), nullable=False),
        sa.Column("account", sa.String(length=64), nullable=True),
        sa.Column("partition", sa.String(length=64), nullable=True),
        sa.Column("qos", sa.String(length=64), nullable=True),
        sa.Column("state", sa.String(length=32), nullable=False),
        sa.Column("cancelled_by_uid", sa.Integer(), nullable=True),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("exit_signal", sa.Integer(), nullable=True),
        sa.Column("eligible_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("start_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("end_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("elapsed_s", sa.Integer(), nullable=False),
        sa.Column("timelimit_min", sa.Integer(), nullable=True),
        sa.Column("alloc_cpus", sa.Integer(), nullable=False),
        sa.Column("alloc_mem_mb", sa.BigInteger(), nullable=False),
        sa.Column("alloc_gpus", sa.Integer(), nullable=False),
        sa.Column("gpu_type", sa.String(length=64), nullable=True),
        sa.Column("alloc_nodes", sa.Integer(), nullable=False),
        sa.Column("alloc_billing", sa.Integer(), nullable=False),
        sa.Column("req_cpus", sa.Integer(), nullable=False),
        sa.Column("req_mem_mb", sa.BigInteger(), nullable=False),
        sa.Column("req_gpus", sa.Integer(), nullable=False),
        sa.Column("req_nodes", sa.Integer(), nullable=False),
        sa.Column("alloc_tres", sa.Text(), nullable=False),
        sa.Column("req_tres", sa.Text(), nullable=False),
        sa.Column("node_list", sa.Text(), nullable=True),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("max_rss_kb", sa.BigInteger(), nullable=True),
        sa.Column("ended", sa.Boolean(), nullable=False),
        sa.Column("failed", sa.Boolean(), nullable=False),
        sa.Column("gpu_hours", sa.Float(), nullable=False),
        sa.Column("cpu_hours", sa.Float(), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("attempt_id", sa.Integer(), nullable=True),
        sa.Column("attempt_number", sa.Integer(), nullable=True),
        sa.Column("project", sa.String(length=64), nullable=True),
        sa.Column("rate_version", sa.Integer(), nullable=True),
        sa.Column("currency", sa.String(length=8), nullable=True),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("cost_parts", sa.JSON(), nullable=True),
        sa.Column("cost_note", sa.String(length=256), nullable=True),
        sa.Column("first_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["attempt_id"], ["attempts.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(
            ["rate_version"],
            ["rate_versions.version"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("cluster", "job_id_raw", "submit_time", name="uq_accounting_record"),
    )
    with op.batch_alter_table("accounting_records", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_accounting_records_account"), ["account"], unique=False)
        batch_op.create_index(batch_op.f("ix_accounting_records_attempt_id"), ["attempt_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_accounting_records_job_id"), ["job_id"], unique=False)
        batch_op.create_index("ix_accounting_records_job_raw", ["job_id_raw"], unique=False)
        batch_op.create_index(batch_op.f("ix_accounting_records_project"), ["project"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_accounting_records_rate_version"), ["rate_version"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_accounting_records_run_id"), ["run_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_accounting_records_start_time"), ["start_time"], unique=False)
        batch_op.create_index(batch_op.f("ix_accounting_records_user_name"), ["user_name"], unique=False)

    op.create_table(
        "accounting_steps",
        sa.Column("record_id", sa.Integer(), nullable=False),
        sa.Column("step", sa.String(length=64), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("state", sa.String(length=32), nullable=False),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("exit_signal", sa.Integer(), nullable=True),
        sa.Column("start_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("end_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("elapsed_s", sa.Integer(), nullable=False),
        sa.Column("node_list", sa.Text(), nullable=True),
        sa.Column("max_rss_kb", sa.BigInteger(), nullable=True),
        sa.Column("tres_usage_in_max", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["record_id"], ["accounting_records.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("record_id", "step"),
    )


def downgrade() -> None:
    op.drop_table("accounting_steps")
    with op.batch_alter_table("accounting_records", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_accounting_records_user_name"))
        batch_op.drop_index(batch_op.f("ix_accounting_records_start_time"))
        batch_op.drop_index(batch_op.f("ix_accounting_records_run_id"))
        batch_op.drop_index(batch_op.f("ix_accounting_records_rate_version"))
        batch_op.drop_index(batch_op.f("ix_accounting_records_project"))
        batch_op.drop_index("ix_accounting_records_job_raw")
        batch_op.drop_index(batch_op.f("ix_accounting_records_job_id"))
        batch_op.drop_index(batch_op.f("ix_accounting_records_attempt_id"))
        batch_op.drop_index(batch_op.f("ix_accounting_records_account"))

    op.drop_table("accounting_records")
    with op.batch_alter_table("rate_versions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_rate_versions_sha256"))

    op.drop_table("rate_versions")
