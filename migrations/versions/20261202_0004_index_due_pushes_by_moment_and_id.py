"""index due pushes by moment and id

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02 11:42:09.877208
"""

from __future__ import annotations

from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('learner', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_learner_next_push_at'))
        batch_op.create_index('ix_learner_push_due', ['next_push_at', 'id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('learner', schema=None) as batch_op:
        batch_op.drop_index('ix_learner_push_due')
        batch_op.create_index(batch_op.f('ix_learner_next_push_at'), ['next_push_at'], unique=False)

