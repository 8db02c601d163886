"""daily push schedule

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02 10:04:42.563577
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("learner", schema=None) as batch_op:
        batch_op.add_column(sa.Column("next_push_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("last_pushed_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index(batch_op.f("ix_learner_next_push_at"), ["next_push_at"], unique=False)
        batch_op.drop_column("snoozed_until")
    # Existing learners become due now; after their first push the sweep keeps the schedule.
    op.execute(sa.text("UPDATE learner SET next_push_at = CURRENT_TIMESTAMP WHERE next_push_at IS NULL"))


def downgrade() -> None:
    with op.batch_alter_table("learner", schema=None) as batch_op:
        batch_op.add_column(sa.Column("snoozed_until", sa.DateTime(timezone=True), nullable=True))
        batch_op.drop_index(batch_op.f("ix_learner_next_push_at"))
        batch_op.drop_column("last_pushed_at")
        batch_op.drop_column("next_push_at")
