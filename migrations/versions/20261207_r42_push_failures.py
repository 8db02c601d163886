"""push failures: a learner's daily pushes can be stopped after failing on several days
running (the reason is kept until they are told); learners who cannot be pushed lose any
push moment an older version left them (a snooze or "skip today" while paused)

Revision ID: r42_push_failures
Revises: i41_decks
Create Date: 2026-12-07 03:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = 'r42_push_failures'
down_revision = 'i41_decks'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('learner', schema=None) as batch_op:
        batch_op.add_column(sa.Column('push_stopped', sa.String(length=64), nullable=True))
    op.execute(
        "UPDATE learner SET next_push_at = NULL, push_due_at = NULL "
        "WHERE next_push_at IS NOT NULL AND (NOT active OR paused OR platform NOT IN ('telegram', 'discord'))"
    )


def downgrade() -> None:
    with op.batch_alter_table('learner', schema=None) as batch_op:
        batch_op.drop_column('push_stopped')
