"""The quiz engine: what to ask, storing and grading answers, scheduling, stats.

Transport-agnostic: adapters call these coroutines with a learner id and render the
``Reply`` objects that come back. Time comes from the injected clock, grading from the
injected grader, plots from the injected simulation service.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time as _time
import unicodedata
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Engine as DbEngine
from sqlmodel import Session, col, select

from bot import texts, wordings
from bot.actions import Action, InvalidAction, Verb
from bot.clock import Clock, local_date
from bot.followups import FollowUps, point_to_probe, rescue_line
from bot.locks import LearnerLocks
from bot.models import (
    CardState,
    Learner,
    PushLog,
    PushStatus,
    Review,
    ReviewStatus,
    fit_grader_name,
)
from bot.ops import GRADING
from bot.prefs import (
    PreferenceError,
    parse_new_per_day,
    parse_on_off,
    parse_push_time,
    parse_timezone,
)
from bot.pushtime import PUSH_PLATFORMS, next_push_at, tomorrows_push_at
from bot.reminders import with_push_notice
from bot.replies import Button, PlotImage, Reply, ReplyKind
from cards.deck import Deck
from cards.schema import Card
from cards.sm2 import Sm2State, needs_same_day_repeat
from cards.sm2 import review as sm2_review
from cards.wording import as_asked, parse_wording_ref, variant_index, wording_ref
from grader.base import Assessment, Grade, Grader, Judgement, PointJudgement, PointVerdict
from grader.scoring import grade_from_judgement

log = logging.getLogger(__name__)

#: Longest answer graded; Discord's modal allows 4,000 characters, a thorough answer fits in 8,000.
MAX_ANSWER_CHARS = 8000
MIN_ANSWER_CHARS = 2


class PlotSource(Protocol):
    """The simulation service, as the engine sees it."""

    async def plot_for(self, sim_id: str, wait_seconds: float = ...) -> Any: ...


@dataclass(frozen=True)
class Stats:
    streak_days: int
    reviews_done: int
    cards_seen: int
    cards_total: int
    due_forecast: list[tuple[date, int]]  # the next 7 local days
    mastery: dict[str, float]  # tag -> mean of the latest quality / 5 over seen cards
    followups_answered: int = 0
    followups_rescued: int = 0  # follow-ups that got the learner to the missed point
    variant_reviews: int = 0  # graded reviews asked in a variant's wording
    variant_recalled: int = 0  # of them, graded 3 or more


_KEEP_FORMAT = {"\u200c", "\u200d"}  # joiners shape emoji and some scripts


def clean_answer(text: str) -> str:
    """NFC text without control, private-use or invisible format characters, trimmed."""
    text = unicodedata.normalize("NFC", text)
    return "".join(
        ch
        for ch in text
        if ch in "\n\t"
        or ch in _KEEP_FORMAT
        or unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co")
    ).strip()


class QuizEngine:
    def __init__(
        self,
        db: DbEngine,
        deck: Deck,
        grader: Grader,
        clock: Clock,
        *,
        sims: PlotSource | None = None,
        rng: random.Random | None = None,
        interactive: bool = True,
        default_new_per_day: int = 1,
    ):
        self.db = db
        self.deck = deck
        self.grader = grader
        self.clock = clock
        self.sims = sims
        self.rng = rng or random.Random(0)
        self.interactive = interactive
        self.default_new_per_day = default_new_per_day
        self._locks = LearnerLocks(db)
        self.followups = FollowUps(db, deck, grader, clock)

    # ----- learners ---------------------------------------------------------------------

    def learner(
        self,
        platform: str,
        platform_user_id: str | int,
        *,
        display_name: str = "",
        chat_id: str | int | None = None,
    ) -> Learner:
        """The learner for this platform user, created on first contact."""
        user_id = str(platform_user_id)
        with Session(self.db, expire_on_commit=False) as session:
            found = session.exec(
                select(Learner).where(Learner.platform == platform, Learner.platform_user_id == user_id)
            ).first()
            if found is not None:
                changed = False
                if display_name and found.display_name != display_name[:128]:
                    found.display_name, changed = display_name[:128], True
                if chat_id is not None and found.chat_id != str(chat_id):
                    found.chat_id, changed = str(chat_id), True
                if changed:
                    session.add(found)
                    session.commit()
                return found
            learner = Learner(
                platform=platform,
                platform_user_id=user_id,
                display_name=display_name[:128],
                chat_id=str(chat_id) if chat_id is not None else None,
                new_per_day=self.default_new_per_day,
                created_at=self.clock.now(),
            )
            learner.next_push_at = self._push_moment(learner)
            session.add(learner)
            try:
                session.commit()
            except sa.exc.IntegrityError:  # created by a concurrent first message
                session.rollback()
                return self.learner(platform, user_id, display_name=display_name, chat_id=chat_id)
            return learner

    def set_active(self, learner_id: int | None, active: bool) -> bool:
        """Mark a learner reachable or not (blocked the bot, came back); True when it changed.
        The reminder sweep skips inactive learners."""
        if learner_id is None:
            return False
        with Session(self.db) as session:
            learner = session.get(Learner, learner_id)
            if learner is None or learner.active == active:
                return False
            learner.active = active
            learner.next_push_at = self._push_moment(learner)
            session.add(learner)
            session.commit()
            return True

    def _push_moment(self, learner: Learner) -> datetime | None:
        """The learner's next daily push; None while they cannot be pushed (blocked, paused,
        no push platform), so the reminder sweep never scans them."""
        if not learner.active or learner.paused or learner.platform not in PUSH_PLATFORMS:
            return None
        return next_push_at(learner.push_time, learner.timezone, self.clock.now(), learner.last_pushed_at)

    def get_learner(self, learner_id: int) -> Learner | None:
        with Session(self.db, expire_on_commit=False) as session:
            return session.get(Learner, learner_id)

    def today(self, learner: Learner) -> date:
        return local_date(self.clock.now(), learner.timezone)

    # ----- asking -----------------------------------------------------------------------

    async def start(self, learner_id: int) -> list[Reply]:
        learner = self._require(learner_id)
        settings = self._settings_summary(learner)
        buttons = (
            (Button("Keep these settings", Action(Verb.SETTINGS, arg="accept").encode()),),
            (Button("Give me a trap now", Action(Verb.NEXT).encode()),),
        )
        return [
            Reply(
                texts.WELCOME
                + "\n\n"
                + settings
                + "\n\nChange them with /settings, or keep them with one tap.",
                kind=ReplyKind.SETTINGS,
                buttons=buttons,
            )
        ]

    async def next_trap(self, learner_id: int, *, extra_new: bool = False) -> list[Reply]:
        """The next trap: a waiting confirmation first, then due reviews, repeats, new traps."""
        async with self._locks[learner_id]:
            return with_push_notice(self.db, learner_id, self._next_trap(learner_id, extra_new=extra_new))

    def _next_trap(self, learner_id: int, *, extra_new: bool, bind: sa.Connection | None = None) -> list[Reply]:
        # One session and one commit for the whole choice (the trap, the learner's open card,
        # closed follow-ups, the wording shown): a push is one transaction, not four. Given
        # ``bind`` (a push holding the learner's lock in its transaction) the session joins it.
        with Session(bind or self.db, expire_on_commit=False) as session:
            chosen = self._next_traps_in(session, [learner_id], extra_new=extra_new)
        if learner_id not in chosen:
            raise InvalidAction("unknown learner; send /start")
        return chosen[learner_id]

    def _next_traps_in(self, session: Session, learner_ids: list[int], *, extra_new: bool) -> dict[int, list[Reply]]:
        """The next trap of each learner (unknown ids left out), opened, in one commit and a
        fixed number of statements however many learners: the daily push asks a page at once."""
        learners = session.exec(select(Learner).where(col(Learner.id).in_(learner_ids)).order_by(col(Learner.id))).all()
        waiting: dict[int, Review] = {}
        for review in session.exec(
            select(Review)
            .where(col(Review.learner_id).in_(learner_ids), Review.status == ReviewStatus.AWAITING)
            .order_by(col(Review.id))
        ):
            waiting[review.learner_id] = review  # the latest one wins
        states: dict[int, list[CardState]] = defaultdict(list)
        choosing = [learner.id for learner in learners if learner.id not in waiting]
        if choosing:
            for state in session.exec(select(CardState).where(col(CardState.learner_id).in_(choosing))):
                states[state.learner_id].append(state)
        replies: dict[int, list[Reply]] = {}
        opened: list[tuple[Learner, Card, bool, str]] = []
        introduced: list[CardState] = []
        with session.no_autoflush:  # one flush, at the commit, instead of one per statement
            for learner in learners:
                if learner.id in waiting:
                    review = waiting[learner.id]
                    replies[learner.id] = [  # type: ignore[index]
                        Reply("You have an answer waiting for its grade.", kind=ReplyKind.INFO),
                        self._confirmation_reply(review, self.deck.get(review.card_id)),
                    ]
                    continue
                choice = self._choose(learner, states[learner.id], extra_new=extra_new)  # type: ignore[index]
                if isinstance(choice, Reply):
                    replies[learner.id] = [choice]  # type: ignore[index]
                    continue
                card, repeat, label, new_state = choice
                if new_state is not None:
                    introduced.append(new_state)
                opened.append((learner, card, repeat, label))
            if introduced:  # one multi-row insert: nothing here needs the new rows' ids
                session.execute(sa.insert(CardState), [state.model_dump(exclude={"id"}) for state in introduced])
            if opened:
                self._open_in(session, [(learner, card.id) for learner, card, *_ in opened])
                variants = wordings.ask_many(
                    session, [(learner.id, card) for learner, card, *_ in opened],  # type: ignore[misc]
                    rng=self.rng, now=self.clock.now(),
                )
                for learner, card, repeat, label in opened:
                    variant = variants[learner.id, card.id]  # type: ignore[index]
                    replies[learner.id] = [self._question_for(card, variant, repeat=repeat, label=label)]  # type: ignore[index]
        session.commit()
        return replies

    def _choose(
        self, learner: Learner, states: list[CardState], *, extra_new: bool
    ) -> tuple[Card, bool, str, CardState | None] | Reply:
        """What to ask ``learner`` now: (card, asked again today, due label, the state of a card
        met for the first time, for the caller to insert); or the "nothing due" reply."""
        today = self.today(learner)
        known = {state.card_id: state for state in states if state.card_id in self.deck}
        pick: CardState | None = None
        repeat = False
        due = sorted(
            (
                s
                for s in known.values()
                if s.due_on <= today and s.last_reviewed_on != today and s.skipped_on != today
            ),
            key=lambda s: (s.due_on, s.introduced_on, s.card_id),
        )
        repeats = sorted(
            (s for s in known.values() if s.repeat_today and s.last_reviewed_on == today),
            key=lambda s: (s.last_reviewed_at or self.clock.now(), s.card_id),
        )
        if due:
            pick = due[0]
        elif repeats:
            pick, repeat = repeats[0], True
        else:
            introduced_today = sum(
                1
                for s in known.values()
                if s.introduced_on == today and not (s.skipped_on == today and s.last_reviewed_on is None)
            )
            fresh = [card for card in self.deck if card.id not in known]
            if fresh and (extra_new or introduced_today < learner.new_per_day):
                new = CardState(learner_id=learner.id, card_id=fresh[0].id, due_on=today, introduced_on=today)  # type: ignore[arg-type]
                return self.deck.get(new.card_id), False, "", new
            else:
                return self._done_for_today(known, today, more_new=bool(fresh))
        remaining = len(due) - 1 if due else 0
        return self.deck.get(pick.card_id), repeat, f"{remaining} more due today." if remaining > 0 else "", None

    def _done_for_today(self, known: dict[str, CardState], today: date, *, more_new: bool) -> Reply:
        upcoming = sorted(s.due_on for s in known.values() if s.due_on > today)
        when = texts.day_label(today, upcoming[0]).replace("next review", "the next review is") if upcoming else ""
        text = "**Nothing due right now.**" + (f" {when[0].upper() + when[1:]}." if when else "")
        buttons: tuple[tuple[Button, ...], ...] = ()
        if more_new:
            text += "\n\nYou have met today's new traps. Want one more?"
            buttons = ((Button("One more new trap", Action(Verb.EXTRA).encode()),),)
        elif not known:
            text = "The deck is empty."
        else:
            text += "\n\nYou have met every trap in the deck. Reviews come back when they are due."
        return Reply(text, kind=ReplyKind.INFO, buttons=buttons)

    async def hint(self, learner_id: int) -> list[Reply]:
        learner = self._require(learner_id)
        if learner.current_card_id not in self.deck:
            return [self._no_open_trap()]
        card = self.deck.get(learner.current_card_id)  # type: ignore[arg-type]
        return [Reply(f"💡 {card.hint}", kind=ReplyKind.HINT, card_id=card.id)]

    async def skip(self, learner_id: int) -> list[Reply]:
        """Put the open trap back: a due one stays due, a new one returns tomorrow."""
        async with self._locks[learner_id]:
            learner = self._require(learner_id)
            skipped_follow_up = self.followups.skip(learner_id)
            if skipped_follow_up is not None:
                return skipped_follow_up
            if learner.current_card_id is None:
                return [self._no_open_trap()]
            today = self.today(learner)
            with Session(self.db) as session:
                state = self._state(session, learner.id, learner.current_card_id)
                if state is not None:
                    state.skipped_on = today
                    session.add(state)
                db_learner = session.get(Learner, learner.id)
                assert db_learner is not None
                db_learner.current_card_id = None
                session.add(db_learner)
                session.commit()
            return [
                Reply(
                    "Skipped. It comes back later.",
                    buttons=((Button("Next trap", Action(Verb.NEXT).encode()),),),
                )
            ]

    # ----- answering --------------------------------------------------------------------

    async def open_card(self, learner_id: int, card_id: str) -> list[Reply]:
        """Open a given trap for this learner (a push, a server's trap of the day)."""
        card_id = parse_wording_ref(card_id)[0]
        if card_id not in self.deck:
            return [Reply(f"There is no trap {card_id!r}.", kind=ReplyKind.ERROR)]
        async with self._locks[learner_id]:
            learner = self._require(learner_id)
            self._set_current(learner.id, card_id)
            card = self.deck.get(card_id)
            return [self._question_reply(learner.id, card, repeat=False, label="")]

    def _set_current(self, learner_id: int | None, card_id: str | None) -> None:
        with Session(self.db) as session:
            learner = session.get(Learner, learner_id)
            assert learner is not None
            self._open_in(session, [(learner, card_id)])
            session.commit()

    def _open_in(self, session: Session, openings: Sequence[tuple[Learner, str | None]]) -> None:
        """Make each card its learner's open trap in ``session`` (None: no open trap); the
        caller commits."""
        for learner, card_id in openings:
            learner.current_card_id = card_id
            learner.current_asked_at = self.clock.now() if card_id else learner.current_asked_at
            session.add(learner)
        # A new trap is open: the next free text answers it, not an old follow-up.
        started = [learner.id for learner, card_id in openings if card_id]
        if started:
            self.followups.close_open_in(session, started)  # type: ignore[arg-type]

    def _question_reply(self, learner_id: int | None, card: Card, *, repeat: bool, label: str) -> Reply:
        """The trap in the wording this learner is asked (``bot.wordings``), recorded."""
        with Session(self.db, expire_on_commit=False) as session:
            variant = wordings.ask(session, learner_id, card, rng=self.rng, now=self.clock.now())  # type: ignore[arg-type]
            session.commit()
        return self._question_for(card, variant, repeat=repeat, label=label)

    def _question_for(self, card: Card, variant, *, repeat: bool, label: str) -> Reply:
        return Reply(
            texts.question_text(card, repeat=repeat, due_label=label, variant=variant),
            kind=ReplyKind.QUESTION,
            buttons=(
                (
                    Button("Hint", Action(Verb.HINT).encode()),
                    Button("Skip", Action(Verb.SKIP).encode()),
                ),
            ),
            card_id=card.id,
            wording=variant_index(card, variant.id if variant else None),
        )

    async def submit_answer(
        self,
        learner_id: int,
        text: str,
        *,
        card_id: str | None = None,
        follow_up_of: int | None = None,
        to_follow_up: bool = False,
    ) -> list[Reply]:
        """Store the answer, then grade it. The answer is stored before anything can fail.

        It answers trap ``card_id`` when given (a reply to a trap's message, a trap's form);
        else the open follow-up when there is one (``bot.followups``), else the open trap.
        ``follow_up_of`` (Discord's follow-up form) and ``to_follow_up`` (a reply to a
        follow-up's message, about ``card_id``) answer a follow-up or nothing.
        """
        answer = clean_answer(text if isinstance(text, str) else "")
        if len(answer) < MIN_ANSWER_CHARS:
            return [Reply("That answer is empty. Write what you would say in the interview.", kind=ReplyKind.ERROR)]
        if len(answer) > MAX_ANSWER_CHARS:
            return [
                Reply(
                    f"That answer is {len(answer):,} characters; the limit is {MAX_ANSWER_CHARS:,}. "
                    "Shorten it to the mechanism and send it again: nothing was stored.",
                    kind=ReplyKind.ERROR,
                )
            ]
        async with self._locks[learner_id]:
            learner = self._require(learner_id)
            if follow_up_of is not None or to_follow_up:
                follow_up = (
                    self.followups.open_on(learner_id, follow_up_of)
                    if follow_up_of is not None
                    else self.followups.open_for(learner_id, card_id=card_id)
                )
                if follow_up is None:
                    return [self.followups.closed_reply()]
            else:
                follow_up = self.followups.open_for(learner_id) if card_id is None else None
            if follow_up is not None:
                return await self.followups.answer(follow_up, answer)
            target = card_id or learner.current_card_id
            if target is None or target not in self.deck:
                return [self._no_open_trap()]
            card = self.deck.get(target)
            review = self._store_answer(learner, card, answer)
            return await self._grade_stored(review, card)

    def _store_answer(self, learner: Learner, card: Card, answer: str) -> Review:
        today = self.today(learner)
        with Session(self.db, expire_on_commit=False) as session:
            state = self._state(session, learner.id, card.id)
            repeat = bool(state and state.repeat_today and state.last_reviewed_on == today)
            review = Review(
                learner_id=learner.id,
                card_id=card.id,
                card_version=card.version,
                answer=answer,
                same_day_repeat=repeat,
                created_at=self.clock.now(),
            )
            session.add(review)
            session.flush()
            review.variant_id = wordings.answered(session, learner.id, card.id, review.id)  # type: ignore[arg-type]
            db_learner = session.get(Learner, learner.id)
            assert db_learner is not None
            if db_learner.current_card_id == card.id:
                db_learner.current_card_id = None
                session.add(db_learner)
            session.commit()
            return review

    async def _grade_stored(self, review: Review, card: Card, *, interactive: bool | None = None) -> list[Reply]:
        interactive = self.interactive if interactive is None else interactive
        started = _time.perf_counter()
        try:
            assessment = await self.grader.assess(as_asked(card, review.variant_id), review.answer, interactive=interactive)
            GRADING.labels(assessment.grader.split(" ")[0]).observe(_time.perf_counter() - started)
        except Exception:  # a judge must never lose an answer; fall back to self-grading
            log.exception("grader %s failed on review %s", getattr(self.grader, "name", "?"), review.id)
            if not interactive:
                self._update_review(review.id, status=ReviewStatus.FAILED)
                return [Reply("Grading failed; your answer is kept.", kind=ReplyKind.ERROR)]
            assessment = Assessment(grader="self", grade=None, needs_confirmation=True)
        if assessment.needs_confirmation or assessment.grade is None:
            judgement = assessment.grade.judgement.to_json() if assessment.grade else None
            if judgement is not None and assessment.second_reading is not None:
                judgement["second_reading"] = _reading(assessment.second_reading)
            self._update_review(
                review.id, status=ReviewStatus.AWAITING, grader=assessment.grader, verdict=judgement
            )
            review = self._load_review(review.id)
            return [self._confirmation_reply(review, card)]
        return self._finalize(
            review.id, card, assessment.grade, grader=assessment.grader, second=assessment.second_reading
        )

    def _confirmation_reply(self, review: Review, card: Card) -> Reply:
        if review.verdict is None:  # self-grading: rate 0-5 after seeing the key
            row = tuple(Button(str(q), Action(Verb.RATE, review.id, str(q)).encode()) for q in range(6))
            return Reply(
                texts.self_grade_prompt(card), kind=ReplyKind.CONFIRM, buttons=(row,), review_id=review.id, card_id=card.id
            )
        judgement = Judgement.from_json(review.verdict)
        grade = grade_from_judgement(card, judgement, review.answer, check_quotes=False)
        ticks = tuple(
            (Button(f"{i}. {texts.MARK[judgement.verdict_for(p.id)]}", Action(Verb.TICK, review.id, str(i)).encode()),)
            for i, p in enumerate(card.key_points, 1)
        )
        buttons = _rows([b for (b,) in ticks], 3) + (
            (Button(f"Confirm {grade.quality}/5", Action(Verb.CONFIRM, review.id).encode()),),
        )
        return Reply(
            texts.assisted_prompt(card, judgement, grade.quality, second=review.verdict.get("second_reading")),
            kind=ReplyKind.CONFIRM,
            buttons=buttons,
            review_id=review.id,
            card_id=card.id,
        )

    def _finalize(
        self, review_id: int, card: Card, grade: Grade | None, *, grader: str, quality: int | None = None,
        second: Grade | None = None,
    ) -> list[Reply]:
        """Record the grade, schedule the card, and build the verdict; a disagreeing second
        reading (given, or kept from the awaiting verdict) is recorded and shown beside it."""
        quality = grade.quality if quality is None else quality
        now = self.clock.now()
        with Session(self.db, expire_on_commit=False) as session:
            review = session.get(Review, review_id)
            assert review is not None
            learner = session.get(Learner, review.learner_id)
            assert learner is not None
            today = local_date(now, learner.timezone)
            state = self._state(session, learner.id, card.id) or CardState(
                learner_id=learner.id, card_id=card.id, due_on=today, introduced_on=today
            )
            review.state_before = _snapshot(state)
            self._schedule(state, quality, today, now, same_day_repeat=review.same_day_repeat)
            review.status = ReviewStatus.GRADED
            review.grader = fit_grader_name(grader)
            review.quality = quality
            review.score = grade.score if grade else None
            if grade:
                kept = (review.verdict or {}).get("second_reading")
                review.verdict = _with_second(grade.judgement.to_json(), _reading(second) if second else kept)
            review.graded_at = now
            session.add_all([state, review])
            session.commit()
            next_label = texts.day_label(today, state.due_on) if not state.repeat_today else "again later today"
            interview = learner.interview
        follow_up = point_to_probe(card, grade.judgement if grade else None) is not None
        verdict = self._verdict_reply(review, card, grade, quality, next_label, follow_up=follow_up, offer=not interview)
        if follow_up and interview:  # interview mode: the interviewer asks straight away
            return [verdict, self.followups.ask(review.learner_id, review, card)]
        return [verdict]

    @staticmethod
    def _schedule(state: CardState, quality: int, today: date, now: datetime, *, same_day_repeat: bool) -> None:
        if same_day_repeat:
            # SM-2 step 7: repeats within the day change neither EF nor the interval.
            state.repeat_today = needs_same_day_repeat(quality)
        else:
            new = sm2_review(
                Sm2State(state.repetitions, Decimal(state.easiness_hundredths) / 100, state.interval_days),
                quality,
            )
            state.repetitions = new.repetitions
            state.easiness_hundredths = new.easiness_hundredths
            state.interval_days = new.interval_days
            state.due_on = today + timedelta(days=new.interval_days)
            state.lapses += quality < 3
            state.repeat_today = needs_same_day_repeat(quality)
            state.last_reviewed_on = today
        state.last_reviewed_at = now
        state.skipped_on = None

    def _verdict_reply(
        self, review: Review, card: Card, grade: Grade | None, quality: int, next_label: str, *, follow_up: bool = False, offer: bool = True
    ) -> Reply:
        judgement = grade.judgement if grade else None
        text = texts.verdict_text(
            card, quality, judgement, grade.caps if grade else (), next_label, review.grader or "",
            second=(review.verdict or {}).get("second_reading"),
            follow_up=follow_up,
        )
        first = ((Button("Try the follow-up", Action(Verb.FOLLOWUP, review.id).encode()),),) if follow_up and offer else ()
        buttons = first + (
            (
                Button("Full explanation", Action(Verb.EXPLAIN, review.id).encode()),
                Button("I disagree", Action(Verb.DISAGREE, review.id).encode()),
            ),
            (Button("Next trap", Action(Verb.NEXT).encode()),),
        )
        return Reply(
            text, kind=ReplyKind.VERDICT, buttons=buttons, plot_sim=card.sim, card_id=card.id, review_id=review.id
        )

    # ----- buttons ----------------------------------------------------------------------

    async def act(self, learner_id: int, data: str) -> list[Reply]:
        """Carry out a button press; stale or forged data gets a clear message."""
        try:
            action = Action.decode(data)
        except InvalidAction:
            return [Reply("That button is not one of mine anymore. Send /trap to go on.", kind=ReplyKind.ERROR)]
        try:
            return with_push_notice(self.db, learner_id, await self._act(learner_id, action))
        except InvalidAction as error:
            return [Reply(f"That button no longer applies: {error}.", kind=ReplyKind.ERROR)]

    async def _act(self, learner_id: int, action: Action) -> list[Reply]:
        verb = action.verb
        if verb is Verb.NEXT:
            return await self.next_trap(learner_id)
        if verb is Verb.EXTRA:
            return await self.next_trap(learner_id, extra_new=True)
        if verb is Verb.HINT:
            return await self.hint(learner_id)
        if verb is Verb.SKIP:
            return await self.skip(learner_id)
        if verb is Verb.UNDO:
            return await self.undo(learner_id)
        if verb is Verb.FORGET:
            return await self.forget(learner_id, confirmed=action.arg == "yes", cancelled=action.arg == "no")
        if verb is Verb.SETTINGS:
            return await self._settings_action(learner_id, action.arg)
        if verb in (Verb.SNOOZE, Verb.SKIP_TODAY):
            return await self._snooze(learner_id, action)
        if verb is Verb.ANSWER:
            return await self.open_card(learner_id, action.arg or "")
        async with self._locks[learner_id]:
            review = self._owned_review(learner_id, action.review_id)
            card = self.deck.get(review.card_id) if review.card_id in self.deck else None
            if card is None:
                raise InvalidAction("that trap is no longer in the deck")
            if verb is Verb.RATE:
                self._expect(review, ReviewStatus.AWAITING)
                return self._finalize(review.id, card, None, grader="self", quality=action.int_arg(0, 5))
            if verb is Verb.TICK:
                self._expect(review, ReviewStatus.AWAITING)
                return [self._toggle_point(review, card, action.int_arg(1, len(card.key_points)))]
            if verb is Verb.CONFIRM:
                self._expect(review, ReviewStatus.AWAITING)
                if review.verdict is None:
                    raise InvalidAction("rate the answer 0-5 instead")
                judgement = Judgement.from_json(review.verdict)
                grade = grade_from_judgement(card, judgement, review.answer, check_quotes=False)
                return self._finalize(review.id, card, grade, grader=f"{review.grader} + you")
            if verb is Verb.EXPLAIN:
                return [Reply(texts.explanation_text(card), kind=ReplyKind.EXPLANATION, card_id=card.id)]
            if verb is Verb.DISAGREE:
                self._expect(review, ReviewStatus.GRADED)
                row = tuple(Button(str(q), Action(Verb.OVERRIDE, review.id, str(q)).encode()) for q in range(6))
                return [
                    Reply(
                        texts.key_text(card) + f"\n\nThe grade was **{review.quality}/5**. What should it be?",
                        kind=ReplyKind.CONFIRM,
                        buttons=(row,),
                        review_id=review.id,
                        card_id=card.id,
                    )
                ]
            if verb is Verb.OVERRIDE:
                self._expect(review, ReviewStatus.GRADED)
                return self._override(review, card, action.int_arg(0, 5))
            if verb is Verb.FOLLOWUP:
                if action.arg in (None, "answer"):
                    return [self.followups.ask(learner_id, review, card)]
                if action.arg == "skip":
                    skipped = self.followups.skip(learner_id, review)
                    if skipped is None:
                        raise InvalidAction("that follow-up is not open")
                    return skipped
                if action.arg in ("yes", "no"):
                    return self.followups.self_check(learner_id, review, card, action.arg == "yes")
                raise InvalidAction("unknown follow-up button")
        raise InvalidAction(f"unexpected button {verb.value}")

    def _toggle_point(self, review: Review, card: Card, index: int) -> Reply:
        judgement = Judgement.from_json(review.verdict or {"judge": "self", "points": []})
        point = card.key_points[index - 1]
        cycle = {
            PointVerdict.PRESENT: PointVerdict.PARTIAL,
            PointVerdict.PARTIAL: PointVerdict.ABSENT,
            PointVerdict.ABSENT: PointVerdict.PRESENT,
            PointVerdict.CONTRADICTED: PointVerdict.PRESENT,
        }
        new_verdict = cycle[judgement.verdict_for(point.id)]
        points = [p for p in judgement.points if p.point_id != point.id]
        points.append(PointJudgement(point.id, new_verdict, ""))
        order = {p.id: i for i, p in enumerate(card.key_points)}
        points.sort(key=lambda p: order.get(p.point_id, 99))
        judgement = Judgement(
            judge=judgement.judge,
            points=tuple(points),
            misconceptions=judgement.misconceptions,
            injection_suspected=judgement.injection_suspected,
            feedback=judgement.feedback,
        )
        second = (review.verdict or {}).get("second_reading")
        self._update_review(review.id, verdict=_with_second(judgement.to_json(), second))
        return self._confirmation_reply(self._load_review(review.id), card)

    def _override(self, review: Review, card: Card, quality: int) -> list[Reply]:
        """"I disagree": the learner's quality replaces the judge's, rescheduling from the same state."""
        with Session(self.db) as session:
            db_review = session.get(Review, review.id)
            assert db_review is not None and db_review.state_before is not None
            state = self._state(session, review.learner_id, card.id)
            assert state is not None
            _restore(state, db_review.state_before)
            learner = session.get(Learner, review.learner_id)
            assert learner is not None
            today = local_date(self.clock.now(), learner.timezone)
            # The original review day counts, so an override later in the day schedules the same way.
            self._schedule(state, quality, today, self.clock.now(), same_day_repeat=db_review.same_day_repeat)
            if db_review.judge_quality is None:
                db_review.judge_quality = db_review.quality
            db_review.quality = quality
            db_review.grader = fit_grader_name(
                f"{db_review.grader} (overridden by you)" if "overridden" not in (db_review.grader or "") else db_review.grader
            )
            session.add_all([state, db_review])
            session.commit()
            label = "again later today" if state.repeat_today else texts.day_label(today, state.due_on)
        return [
            Reply(
                f"Noted: **{quality}/5** is your grade. The {label.replace('next review', 'next review is')}.",
                buttons=((Button("Next trap", Action(Verb.NEXT).encode()),),),
                review_id=review.id,
            )
        ]

    # ----- undo, forget, settings ------------------------------------------------------

    async def undo(self, learner_id: int) -> list[Reply]:
        """Take back the last grade: the card's state is restored and the trap is open again."""
        async with self._locks[learner_id]:
            with Session(self.db) as session:
                review = session.exec(
                    select(Review)
                    .where(Review.learner_id == learner_id, Review.status == ReviewStatus.GRADED)
                    .order_by(col(Review.graded_at).desc(), col(Review.id).desc())
                ).first()
                if review is None or review.state_before is None:
                    return [Reply("There is no grade to take back.", kind=ReplyKind.INFO)]
                state = self._state(session, learner_id, review.card_id)
                assert state is not None
                _restore(state, review.state_before)
                review.status = ReviewStatus.UNDONE
                wordings.reopen(session, review.id)  # type: ignore[arg-type]
                learner = session.get(Learner, learner_id)
                assert learner is not None
                learner.current_card_id = review.card_id
                learner.current_asked_at = self.clock.now()
                session.add_all([state, review, learner])
                session.commit()
                card_id, review_id = review.card_id, review.id
            self.followups.close_open(learner_id, review_id=review_id)
            card = self.deck.get(card_id)
            return [
                Reply(
                    f"Taken back: the grade for **{card.title}** is undone and its schedule restored. "
                    "Send a new answer whenever you like.",
                    kind=ReplyKind.QUESTION,
                    card_id=card_id,
                )
            ]

    async def forget(self, learner_id: int, *, confirmed: bool = False, cancelled: bool = False) -> list[Reply]:
        if cancelled:
            return [Reply("Nothing deleted.")]
        if not confirmed:
            return [
                Reply(
                    "This deletes everything stored about you: answers, grades, schedule and settings. "
                    "It cannot be undone.",
                    kind=ReplyKind.CONFIRM,
                    buttons=(
                        (
                            Button("Delete everything", Action(Verb.FORGET, arg="yes").encode()),
                            Button("Cancel", Action(Verb.FORGET, arg="no").encode()),
                        ),
                    ),
                )
            ]
        async with self._locks[learner_id]:
            with Session(self.db) as session:
                # Explicit deletes: SQLite enforces ON DELETE CASCADE only with the pragma on.
                FollowUps.forget(session, learner_id)
                wordings.forget(session, learner_id)
                for table in (Review, CardState):
                    session.exec(sa.delete(table).where(table.learner_id == learner_id))  # type: ignore[call-overload]
                session.exec(sa.delete(PushLog).where(PushLog.learner_id == learner_id))  # type: ignore[call-overload]
                session.exec(sa.delete(Learner).where(Learner.id == learner_id))  # type: ignore[call-overload]
                session.commit()
        self._locks.pop(learner_id, None)
        return [Reply("Done: everything about you is deleted. Send /start to begin again.")]

    def settings(self, learner_id: int) -> list[Reply]:
        learner = self._require(learner_id)
        pause = (
            Button("Resume reminders", Action(Verb.SETTINGS, arg="resume").encode())
            if learner.paused
            else Button("Pause reminders", Action(Verb.SETTINGS, arg="pause").encode())
        )
        interview = Button(
            "Interview mode off" if learner.interview else "Interview mode on",
            Action(Verb.SETTINGS, arg="interview-off" if learner.interview else "interview-on").encode(),
        )
        return [
            Reply(
                self._settings_summary(learner)
                + "\n\nTo change one, send for example `/settings timezone Europe/Berlin`, "
                "`/settings time 07:30`, `/settings new 2` or `/settings interview on`.",
                kind=ReplyKind.SETTINGS,
                buttons=((pause, interview),),
            )
        ]

    def _settings_summary(self, learner: Learner) -> str:
        state = "paused" if learner.paused else "on"
        return (
            "**Your settings**\n"
            f"- Timezone: {learner.timezone}\n"
            f"- Daily push: {learner.push_time.strftime('%H:%M')} ({state})\n"
            f"- New traps a day: {learner.new_per_day}\n"
            f"- Interview mode: {'on' if learner.interview else 'off'} (a missed core point brings a follow-up question at once)"
        )

    async def update_settings(self, learner_id: int, field: str, value: str) -> list[Reply]:
        """Change one setting from what the learner typed; a clear message when it does not parse."""
        changes: dict[str, Any] = {}
        try:
            key = field.strip().casefold()
            if key in ("timezone", "tz", "zone"):
                changes["timezone"] = parse_timezone(value)
            elif key in ("time", "push", "push_time"):
                changes["push_time"] = parse_push_time(value)
            elif key in ("new", "new_per_day"):
                changes["new_per_day"] = parse_new_per_day(value)
            elif key in ("pause", "paused"):
                changes["paused"] = True
            elif key in ("resume",):
                changes["paused"] = False
            elif key in ("interview",):
                changes["interview"] = parse_on_off(value)
            else:
                raise PreferenceError(
                    f"I have no setting called {field!r}: try timezone, time, new, interview, pause or resume."
                )
        except PreferenceError as error:
            return [Reply(str(error), kind=ReplyKind.ERROR)]
        return self._apply_settings(learner_id, changes)

    def _apply_settings(self, learner_id: int, changes: dict[str, Any]) -> list[Reply]:
        with Session(self.db, expire_on_commit=False) as session:
            learner = session.get(Learner, learner_id)
            if learner is None:
                return [self._unknown_learner()]
            for name, value in changes.items():
                setattr(learner, name, value)
            if {"timezone", "push_time", "paused"} & changes.keys():
                learner.next_push_at = self._push_moment(learner)
            session.add(learner)
            session.commit()
        return [Reply("Saved.\n\n" + self._settings_summary(learner), kind=ReplyKind.SETTINGS)]

    async def _settings_action(self, learner_id: int, arg: str | None) -> list[Reply]:
        if arg == "accept":
            learner = self._require(learner_id)
            return [
                Reply(
                    f"All set: a trap every day at {learner.push_time.strftime('%H:%M')} ({learner.timezone}).",
                    buttons=((Button("Give me a trap now", Action(Verb.NEXT).encode()),),),
                )
            ]
        if arg in ("pause", "resume"):
            return self._apply_settings(learner_id, {"paused": arg == "pause"})
        if arg in ("interview-on", "interview-off"):
            return self._apply_settings(learner_id, {"interview": arg == "interview-on"})
        raise InvalidAction("unknown settings button")

    async def _snooze(self, learner_id: int, action: Action) -> list[Reply]:
        """Snooze today's push for some hours, or skip it until tomorrow."""
        learner = self._require(learner_id)
        now = self.clock.now()
        today = self.today(learner)
        if action.verb is Verb.SKIP_TODAY:
            due, status = tomorrows_push_at(learner.push_time, learner.timezone, now), PushStatus.SKIPPED
            message = "No more reminders today. See you tomorrow."
        else:
            hours = action.int_arg(1, 12)
            due, status = now + timedelta(hours=hours), PushStatus.SNOOZED
            message = f"Snoozed: I'll remind you in {hours} h."
        with Session(self.db) as session:
            db_learner = session.get(Learner, learner_id)
            assert db_learner is not None
            db_learner.next_push_at = due
            log_row = session.exec(
                select(PushLog).where(PushLog.learner_id == learner_id, PushLog.local_date == today)
            ).first()
            if log_row is None:
                log_row = PushLog(learner_id=learner_id, local_date=today, claimed_at=now)
            log_row.status = status
            session.add_all([db_learner, log_row])
            session.commit()
        return [Reply(message)]

    async def push_replies(self, learner_id: int) -> list[Reply]:
        """The daily push: the next trap with answer, snooze and skip-today buttons; empty when
        there is nothing to ask."""
        # The lock, the database work and the unlock run in one worker-thread call, off the
        # event loop.
        replies = await self._locks.run(
            learner_id, lambda bind: self._next_trap(learner_id, extra_new=False, bind=bind)
        )
        return self._as_push(replies)

    async def push_replies_many(self, learner_ids: list[int]) -> dict[int, list[Reply]]:
        """``push_replies`` for a page of learners in one transaction (the sweep's path). A
        learner left out (busy right now, or unknown) is the caller's to ask with
        ``push_replies``."""

        def work(bind: sa.Connection | None, held: list[int]) -> dict[int, list[Reply]]:
            with Session(bind or self.db, expire_on_commit=False) as session:
                return self._next_traps_in(session, held, extra_new=False)

        chosen = await self._locks.run_free(learner_ids, work)
        return {learner_id: self._as_push(replies) for learner_id, replies in (chosen or {}).items()}

    def _as_push(self, replies: list[Reply]) -> list[Reply]:
        question = replies[-1]
        if question.kind not in (ReplyKind.QUESTION, ReplyKind.CONFIRM):
            return []
        extra = (
            Button("Snooze 1 h", Action(Verb.SNOOZE, arg="1").encode()),
            Button("Snooze 3 h", Action(Verb.SNOOZE, arg="3").encode()),
            Button("Skip today", Action(Verb.SKIP_TODAY).encode()),
        )
        first = ()
        if question.kind is ReplyKind.QUESTION and question.card_id:
            ref = wording_ref(question.card_id, question.wording)
            first = ((Button("Answer now", Action(Verb.ANSWER, arg=ref).encode()),),)
        pushed = replace(question, buttons=first + question.buttons + (extra,), ephemeral=False)
        return [*replies[:-1], pushed]

    # ----- stats ------------------------------------------------------------------------

    def stats_data(self, learner_id: int) -> Stats:
        learner = self._require(learner_id)
        today = self.today(learner)
        with Session(self.db) as session:
            states = session.exec(select(CardState).where(CardState.learner_id == learner_id)).all()
            reviews = session.exec(
                select(Review).where(Review.learner_id == learner_id, Review.status == ReviewStatus.GRADED)
            ).all()
        days = {local_date(r.graded_at, learner.timezone) for r in reviews if r.graded_at}
        streak = 0
        cursor = today if today in days else today - timedelta(days=1)
        while cursor in days:
            streak += 1
            cursor -= timedelta(days=1)
        forecast = []
        for offset in range(7):
            day = today + timedelta(days=offset)
            if offset == 0:
                count = sum(1 for s in states if s.due_on <= day and s.last_reviewed_on != today)
            else:
                count = sum(1 for s in states if s.due_on == day)
            forecast.append((day, count))
        latest: dict[str, int] = {}
        for review in sorted(reviews, key=lambda r: r.id or 0):
            if review.quality is not None and not review.same_day_repeat:
                latest[review.card_id] = review.quality
        by_tag: dict[str, list[float]] = defaultdict(list)
        for card_id, quality in latest.items():
            if card_id in self.deck:
                for tag in self.deck.get(card_id).tags:
                    by_tag[tag].append(quality / 5)
        mastery = {tag: sum(v) / len(v) for tag, v in sorted(by_tag.items())}
        answered, rescued = self.followups.counts(learner_id)
        return Stats(
            streak_days=streak,
            reviews_done=len(reviews),
            cards_seen=sum(1 for s in states if s.last_reviewed_on is not None),
            cards_total=len(self.deck),
            due_forecast=forecast,
            mastery=mastery,
            followups_answered=answered,
            followups_rescued=rescued,
            variant_reviews=sum(1 for r in reviews if r.variant_id),
            variant_recalled=sum(1 for r in reviews if r.variant_id and (r.quality or 0) >= 3),
        )

    async def stats(self, learner_id: int, *, with_plot: bool = True) -> list[Reply]:
        if self.get_learner(learner_id) is None:
            return [self._unknown_learner()]
        data = self.stats_data(learner_id)
        lines = [
            "**Your progress**",
            f"- Streak: {data.streak_days} day{'s' if data.streak_days != 1 else ''}",
            f"- Reviews done: {data.reviews_done}",
            f"- Traps met: {data.cards_seen} of {data.cards_total}",
            "- Due this week: "
            + ", ".join(f"{day.strftime('%a')} {count}" for day, count in data.due_forecast),
        ]
        if data.variant_reviews:
            lines.append(
                f"- In another setting: {data.variant_recalled} of {data.variant_reviews} reviews recalled (3+)"
            )
        rescues = rescue_line(data.followups_answered, data.followups_rescued)
        if rescues:
            lines.append(rescues)
        if data.mastery:
            lines += ["", "**Mastery per mechanism**"]
            for tag, value in sorted(data.mastery.items(), key=lambda kv: kv[1]):
                lines.append(f"- {tag}: {round(value * 100)}%")
        image = None
        if with_plot and data.reviews_done:
            from bot.stats_plot import render_stats

            image = await asyncio.to_thread(render_stats, data)
        return [Reply("\n".join(lines), kind=ReplyKind.STATS, image=image, image_caption="Due this week and mastery per mechanism")]

    # ----- plots, recovery ------------------------------------------------------------

    async def plot(
        self, sim_id: str, wait_seconds: float = 3.0, *, card_id: str | None = None
    ) -> PlotImage | None:
        """The simulation's plot, or None if there is no service or it is not ready in time."""
        if self.sims is None:
            return None
        try:
            found = await self.sims.plot_for(sim_id, wait_seconds=wait_seconds)
        except Exception:  # a missing plot never breaks a verdict
            log.exception("plot for %s failed", sim_id)
            return None
        if found is None:
            return None
        from sims.registry import caption, title

        return PlotImage(
            sim_id=sim_id,
            png=found.png_path.read_bytes(),
            caption=caption(sim_id, card_id),
            title=title(sim_id),
            path=str(found.png_path),
        )

    async def recover_pending(
        self,
        *,
        platforms: tuple[str, ...] | None = None,
        learner_id: int | None = None,
        deliver: Callable[[int, list[Reply]], Awaitable[object]] | None = None,
    ) -> list[tuple[int, list[Reply]]]:
        """Grade answers left pending by a crash; returns the replies owed to each learner.

        Only answers of learners on ``platforms`` (or of the one ``learner_id``) are taken, so
        a process recovers only what it can deliver; ``deliver`` gets each learner's replies as
        soon as they are graded. Another replica recovering at the same time is harmless: the
        answer is re-read under the learner's lock and skipped once it is no longer pending.
        """
        query = select(Review).where(Review.status == ReviewStatus.PENDING).order_by(col(Review.id))
        if platforms is not None:
            query = query.join(Learner, col(Learner.id) == Review.learner_id).where(col(Learner.platform).in_(platforms))
        if learner_id is not None:
            query = query.where(Review.learner_id == learner_id)

        def load() -> list[Review]:
            with Session(self.db, expire_on_commit=False) as session:
                return list(session.exec(query).all())

        owed: list[tuple[int, list[Reply]]] = []
        for review in await asyncio.to_thread(load):
            async with self._locks[review.learner_id]:
                current = self._load_review(review.id)
                if current is None or current.status != ReviewStatus.PENDING:
                    continue
                if current.card_id not in self.deck:
                    self._update_review(current.id, status=ReviewStatus.FAILED)
                    continue
                replies = await self._grade_stored(current, self.deck.get(current.card_id))
            item = (review.learner_id, [Reply("Your last answer was graded after a restart:"), *replies])
            owed.append(item)
            if deliver is not None:
                try:
                    await deliver(*item)
                except Exception:
                    log.exception("delivering a recovered grade to learner %s failed", review.learner_id)
        for follow_learner, row_id in self.followups.left_judging():  # follow-up answers, likewise
            if learner_id is not None and follow_learner != learner_id:
                continue
            async with self._locks[follow_learner]:
                replies = await self.followups.judge_stored(row_id)
            if replies:
                item = (follow_learner, [Reply("Your follow-up answer was read after a restart:"), *replies])
                owed.append(item)
                if deliver is not None:
                    try:
                        await deliver(*item)
                    except Exception:
                        log.exception("delivering a recovered follow-up to learner %s failed", follow_learner)
        return owed

    # ----- helpers ----------------------------------------------------------------------

    def _require(self, learner_id: int) -> Learner:
        learner = self.get_learner(learner_id)
        if learner is None:
            raise InvalidAction("unknown learner; send /start")
        return learner

    def _state(self, session: Session, learner_id: int | None, card_id: str) -> CardState | None:
        return session.exec(
            select(CardState).where(CardState.learner_id == learner_id, CardState.card_id == card_id)
        ).first()

    def _awaiting_review(self, learner_id: int | None) -> Review | None:
        with Session(self.db, expire_on_commit=False) as session:
            return self._awaiting_review_in(session, learner_id)

    @staticmethod
    def _awaiting_review_in(session: Session, learner_id: int | None) -> Review | None:
        return session.exec(
            select(Review)
            .where(Review.learner_id == learner_id, Review.status == ReviewStatus.AWAITING)
            .order_by(col(Review.id).desc())
        ).first()

    def _owned_review(self, learner_id: int, review_id: int | None) -> Review:
        if review_id is None:
            raise InvalidAction("the button names no answer")
        review = self._load_review(review_id)
        if review is None or review.learner_id != learner_id:
            raise InvalidAction("that answer is not yours")
        return review

    def _load_review(self, review_id: int | None) -> Review:
        with Session(self.db, expire_on_commit=False) as session:
            return session.get(Review, review_id)  # type: ignore[return-value]

    def _update_review(self, review_id: int | None, **values: Any) -> None:
        with Session(self.db) as session:
            review = session.get(Review, review_id)
            assert review is not None
            if "grader" in values:
                values["grader"] = fit_grader_name(values["grader"])
            for name, value in values.items():
                setattr(review, name, value)
            session.add(review)
            session.commit()

    @staticmethod
    def _expect(review: Review, status: ReviewStatus) -> None:
        if review.status != status:
            raise InvalidAction(f"that answer is already {review.status}")

    @staticmethod
    def _no_open_trap() -> Reply:
        return Reply(
            "There is no open trap to answer. Send /trap for one.",
            kind=ReplyKind.INFO,
            buttons=((Button("Give me a trap", Action(Verb.NEXT).encode()),),),
        )

    @staticmethod
    def _unknown_learner() -> Reply:
        return Reply("I don't know you yet: send /start.", kind=ReplyKind.ERROR)


def _reading(grade: Grade) -> dict[str, Any]:
    """A judge's reading as stored beside the verdict the learner was given."""
    return {"judge": grade.judgement.judge, "quality": grade.quality, "score": grade.score, "judgement": grade.judgement.to_json()}


def _with_second(verdict: dict[str, Any], second: dict[str, Any] | None) -> dict[str, Any]:
    if second:
        verdict["second_reading"] = second
    return verdict


def _rows(buttons: list[Button], width: int) -> tuple[tuple[Button, ...], ...]:
    return tuple(tuple(buttons[i : i + width]) for i in range(0, len(buttons), width))


def _snapshot(state: CardState) -> dict[str, Any]:
    return {
        "exists": state.id is not None,
        "repetitions": state.repetitions,
        "easiness_hundredths": state.easiness_hundredths,
        "interval_days": state.interval_days,
        "due_on": state.due_on.isoformat(),
        "lapses": state.lapses,
        "last_reviewed_on": state.last_reviewed_on.isoformat() if state.last_reviewed_on else None,
        "last_reviewed_at": state.last_reviewed_at.isoformat() if state.last_reviewed_at else None,
        "repeat_today": state.repeat_today,
        "skipped_on": state.skipped_on.isoformat() if state.skipped_on else None,
    }


def _restore(state: CardState, snap: dict[str, Any]) -> None:
    state.repetitions = snap["repetitions"]
    state.easiness_hundredths = snap["easiness_hundredths"]
    state.interval_days = snap["interval_days"]
    state.due_on = date.fromisoformat(snap["due_on"])
    state.lapses = snap["lapses"]
    state.last_reviewed_on = date.fromisoformat(snap["last_reviewed_on"]) if snap["last_reviewed_on"] else None
    state.last_reviewed_at = datetime.fromisoformat(snap["last_reviewed_at"]) if snap["last_reviewed_at"] else None
    state.repeat_today = snap["repeat_today"]
    state.skipped_on = date.fromisoformat(snap["skipped_on"]) if snap.get("skipped_on") else None
