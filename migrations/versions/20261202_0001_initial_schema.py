"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-12-02 09:52:55.808162
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('learner',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('platform', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('platform_user_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('chat_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    sa.Column('display_name', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('timezone', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('push_time', sa.Time(), server_default='09:00:00', nullable=False),
    sa.Column('new_per_day', sa.Integer(), server_default='1', nullable=False),
    sa.Column('paused', sa.Boolean(), server_default=sa.false(), nullable=False),
    sa.Column('active', sa.Boolean(), server_default=sa.true(), nullable=False),
    sa.Column('reminders', sa.Boolean(), server_default=sa.true(), nullable=False),
    sa.Column('snoozed_until', sa.DateTime(timezone=True), nullable=True),
    sa.Column('current_card_id', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True),
    sa.Column('current_asked_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_learner')),
    sa.UniqueConstraint('platform', 'platform_user_id', name=op.f('uq_learner_platform_platform_user_id'))
    )
    op.create_table('cardstate',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('learner_id', sa.Integer(), nullable=False),
    sa.Column('card_id', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('repetitions', sa.Integer(), nullable=False),
    sa.Column('easiness_hundredths', sa.Integer(), nullable=False),
    sa.Column('interval_days', sa.Integer(), nullable=False),
    sa.Column('due_on', sa.Date(), nullable=False),
    sa.Column('lapses', sa.Integer(), nullable=False),
    sa.Column('introduced_on', sa.Date(), nullable=False),
    sa.Column('last_reviewed_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_reviewed_on', sa.Date(), nullable=True),
    sa.Column('repeat_today', sa.Boolean(), nullable=False),
    sa.Column('skipped_on', sa.Date(), nullable=True),
    sa.ForeignKeyConstraint(['learner_id'], ['learner.id'], name=op.f('fk_cardstate_learner_id_learner'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_cardstate')),
    sa.UniqueConstraint('learner_id', 'card_id', name=op.f('uq_cardstate_learner_id_card_id'))
    )
    with op.batch_alter_table('cardstate', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_cardstate_due_on'), ['due_on'], unique=False)
        batch_op.create_index(batch_op.f('ix_cardstate_learner_id'), ['learner_id'], unique=False)

    op.create_table('pushlog',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('learner_id', sa.Integer(), nullable=False),
    sa.Column('local_date', sa.Date(), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('claimed_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('sent_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['learner_id'], ['learner.id'], name=op.f('fk_pushlog_learner_id_learner'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_pushlog')),
    sa.UniqueConstraint('learner_id', 'local_date', name=op.f('uq_pushlog_learner_id_local_date'))
    )
    op.create_table('review',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('learner_id', sa.Integer(), nullable=False),
    sa.Column('card_id', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('card_version', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('answer', sa.Text(), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('same_day_repeat', sa.Boolean(), nullable=False),
    sa.Column('grader', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    sa.Column('score', sa.Float(), nullable=True),
    sa.Column('quality', sa.Integer(), nullable=True),
    sa.Column('judge_quality', sa.Integer(), nullable=True),
    sa.Column('verdict', sa.JSON(), nullable=True),
    sa.Column('state_before', sa.JSON(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('graded_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['learner_id'], ['learner.id'], name=op.f('fk_review_learner_id_learner'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_review'))
    )
    with op.batch_alter_table('review', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_review_learner_id'), ['learner_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_review_status'), ['status'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('review', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_review_status'))
        batch_op.drop_index(batch_op.f('ix_review_learner_id'))

    op.drop_table('review')
    op.drop_table('pushlog')
    with op.batch_alter_table('cardstate', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_cardstate_learner_id'))
        batch_op.drop_index(batch_op.f('ix_cardstate_due_on'))

    op.drop_table('cardstate')
    op.drop_table('learner')
