"""replicas: due index per platform, claimed push moment, shared send pace, push-log pruning;
learners who cannot be pushed get no push moment

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02 15:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'pushpace',
        sa.Column('platform', sa.String(length=16), nullable=False),
        sa.Column('next_slot', sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint('platform', name=op.f('pk_pushpace')),
    )
    with op.batch_alter_table('learner', schema=None) as batch_op:
        batch_op.add_column(sa.Column('push_due_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.drop_index('ix_learner_push_due')
        batch_op.create_index('ix_learner_push_due', ['platform', 'next_push_at', 'id'], unique=False)
    with op.batch_alter_table('pushlog', schema=None) as batch_op:
        batch_op.create_index('ix_pushlog_local_date', ['local_date'], unique=False)
    op.execute(
        "UPDATE learner SET next_push_at = NULL "
        "WHERE NOT active OR paused OR platform NOT IN ('telegram', 'discord')"
    )


def downgrade() -> None:
    with op.batch_alter_table('pushlog', schema=None) as batch_op:
        batch_op.drop_index('ix_pushlog_local_date')
    with op.batch_alter_table('learner', schema=None) as batch_op:
        batch_op.drop_index('ix_learner_push_due')
        batch_op.create_index('ix_learner_push_due', ['next_push_at', 'id'], unique=False)
        batch_op.drop_column('push_due_at')
    op.drop_table('pushpace')
