"""The quiz engine's answer path: what to ask, storing and grading answers, scheduling, the
verdict. Settings, stats, snooze and undo/forget live in rooms beside it (``bot.settings_flow``,
``bot.stats``, ``bot.snooze``, ``bot.history``, ``bot.recovery``), which ``QuizEngine`` joins.

Transport-agnostic: adapters call these coroutines with a learner id and render the
``Reply`` objects that come back. Time comes from the injected clock, grading from the
injected grader, plots from the injected simulation service.
"""

from __future__ import annotations

import logging
import random
import time as _time
from collections import defaultdict
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Engine as DbEngine
from sqlmodel import Session, col, select

from bot import texts, wordings
from bot.actions import Action, InvalidAction, Verb
from bot.answers import MAX_ANSWER_CHARS, answer_problem, clean_answer, is_dont_know
from bot.clock import Clock, local_date
from bot.confirming import SHOW_ALL, TRAP, ConfirmRoom, with_second
from bot.followups import FollowUps, point_to_probe
from bot.groups import GroupRoom
from bot.history import HistoryRoom, snapshot_of
from bot.locks import LearnerLocks
from bot.models import CardState, Learner, Review, ReviewStatus, fit_grader_name
from bot.ops import GRADING
from bot.recovery import RecoveryRoom
from bot.replies import Button, PlotImage, Reply, ReplyKind
from bot.settings_flow import SettingsRoom
from bot.snooze import SnoozeRoom
from bot.stats import Stats, StatsRoom
from cards.deck import Deck
from cards.schema import Card
from cards.sm2 import Sm2State, needs_same_day_repeat
from cards.sm2 import review as sm2_review
from cards.wording import as_asked, parse_wording_ref, variant_index
from grader.base import Assessment, Grade, Grader, Judgement
from grader.scoring import grade_from_judgement

__all__ = ["MAX_ANSWER_CHARS", "PlotSource", "QuizEngine", "Stats"]

log = logging.getLogger(__name__)

#: How long a trap graded below 4 waits before it is asked again the same day (Anki's
#: default first learning step); traps due meanwhile come first.
LEARNING_STEP = timedelta(minutes=10)


class PlotSource(Protocol):
    """The simulation service, as the engine sees it."""

    async def plot_for(self, sim_id: str, wait_seconds: float | None = ...) -> Any: ...


class QuizEngine(ConfirmRoom, SettingsRoom, StatsRoom, SnoozeRoom, HistoryRoom, RecoveryRoom, GroupRoom):
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
        learning_step: timedelta = LEARNING_STEP,
    ):
        self.db = db
        self.deck = deck
        self.grader = grader
        self.clock = clock
        self.sims = sims
        self.rng = rng or random.Random(0)
        self.interactive = interactive
        self.default_new_per_day = default_new_per_day
        self.learning_step = learning_step
        self._locks = LearnerLocks(db)
        self.followups = FollowUps(db, deck, grader, clock)
        self.zone_notices: dict[int, str] = {}

    # ----- asking -----------------------------------------------------------------------

    async def next_trap(
        self, learner_id: int, *, extra_new: bool = False, repeat_now: bool = False, decks: Sequence[str] | None = None
    ) -> list[Reply]:
        """The next trap: a waiting confirmation first, then due reviews, repeats, new traps.
        ``decks``: the decks to draw from instead of the learner's own (a group's decks)."""
        async with self._locks[learner_id]:
            self.get_learner(learner_id)  # a setting an older version stored badly is repaired first
            replies = self._next_trap(learner_id, extra_new=extra_new, repeat_now=repeat_now, decks=decks)
            return self.with_notices(learner_id, replies)

    def _next_trap(
        self, learner_id: int, *, extra_new: bool, repeat_now: bool = False, bind: sa.Connection | None = None,
        decks: Sequence[str] | None = None,
    ) -> list[Reply]:
        # One session and one commit for the whole choice (the trap, the learner's open card,
        # closed follow-ups, the wording shown): a push is one transaction, not four. Given
        # ``bind`` (a push holding the learner's lock in its transaction) the session joins it.
        with Session(bind or self.db, expire_on_commit=False) as session:
            chosen = self._next_traps_in(session, [learner_id], extra_new=extra_new, repeat_now=repeat_now, decks=decks)
        if learner_id not in chosen:
            raise InvalidAction("unknown learner; send /start")
        return chosen[learner_id]

    def _next_traps_in(
        self, session: Session, learner_ids: list[int], *, extra_new: bool, repeat_now: bool = False,
        decks: Sequence[str] | None = None,
    ) -> dict[int, list[Reply]]:
        """The next trap of each learner (unknown ids left out), opened, in one commit and a
        fixed number of statements however many learners: the daily push asks a page at once."""
        learners = session.exec(select(Learner).where(col(Learner.id).in_(learner_ids)).order_by(col(Learner.id))).all()
        waiting: dict[int, Review] = {}
        for review in session.exec(
            select(Review)
            .where(col(Review.learner_id).in_(learner_ids), Review.status == ReviewStatus.AWAITING)
            .order_by(col(Review.id))
        ):
            if review.card_id in self.deck:  # an answer to a card whose deck was removed stays in the history
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
                        self._confirmation_reply(review, as_asked(self.deck.get(review.card_id), review.variant_id)),
                    ]
                    continue
                choice = self._choose(learner, states[learner.id], extra_new=extra_new, repeat_now=repeat_now, decks=decks)  # type: ignore[index]
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
        self, learner: Learner, states: list[CardState], *, extra_new: bool, repeat_now: bool = False,
        decks: Sequence[str] | None = None,
    ) -> tuple[Card, bool, str, CardState | None] | Reply:
        """What to ask ``learner`` now: (card, asked again today, due label, the state of a card
        met for the first time, for the caller to insert); or the "nothing due" reply.

        Order: due reviews; then traps to repeat today (graded below 4) whose learning step
        has passed; then new traps. A trap to repeat waits ``learning_step`` after its grade
        (Anki's learning step) unless ``repeat_now``, so it never comes straight back.

        Only cards of ``decks`` (a group's), or else of the learner's own decks, are asked;
        today's new traps count across every loaded deck, so a member who met theirs in
        private is not given another by a group with other decks (they can ask for one more)."""
        today, now = self.today(learner), self.clock.now()
        # The given decks or the learner's; all when none of them is loaded.
        chosen = self.deck.in_decks(decks if decks is not None else learner.decks) or list(self.deck)
        allowed = {card.id for card in chosen}
        known = {state.card_id: state for state in states if state.card_id in allowed}
        due = sorted(
            (
                s
                for s in known.values()
                if s.due_on <= today and s.last_reviewed_on != today and s.skipped_on != today
            ),
            key=lambda s: (s.due_on, s.introduced_on, s.card_id),
        )
        waiting = sorted(
            (s for s in known.values() if s.repeat_today and s.last_reviewed_on == today and s.skipped_on != today),
            key=lambda s: (s.last_reviewed_at or now, s.card_id),
        )
        ready = [s for s in waiting if repeat_now or (s.last_reviewed_at or now) + self.learning_step <= now]
        if due:
            remaining = len(due) - 1
            return self.deck.get(due[0].card_id), False, f"{remaining} more due today." if remaining > 0 else "", None
        if ready:
            return self.deck.get(ready[0].card_id), True, "", None
        introduced_today = sum(
            1
            for s in states
            if s.card_id in self.deck  # a card whose deck folder was removed is gone from the day too
            and s.introduced_on == today and not (s.skipped_on == today and s.last_reviewed_on is None)
        )
        fresh = [card for card in chosen if card.id not in known]
        if fresh and (extra_new or introduced_today < learner.new_per_day):
            new = CardState(learner_id=learner.id, card_id=fresh[0].id, due_on=today, introduced_on=today)  # type: ignore[arg-type]
            return self.deck.get(new.card_id), False, "", new
        return self._done_for_today(known, today, more_new=bool(fresh), waiting=waiting)

    def _done_for_today(
        self, known: dict[str, CardState], today: date, *, more_new: bool, waiting: Sequence[CardState] = ()
    ) -> Reply:
        """Nothing to ask now: when the next trap comes, and what the learner can ask for instead."""
        if not known and not more_new:
            return Reply("The deck is empty.", kind=ReplyKind.INFO)
        rows: list[tuple[Button, ...]] = []
        if waiting:
            first = waiting[0]
            back = (first.last_reviewed_at or self.clock.now()) + self.learning_step - self.clock.now()
            minutes = max(1, -(-int(back.total_seconds()) // 60))
            text = (
                f"**Nothing else due right now.** `{first.card_id}` comes back in {minutes} minute{'s' if minutes != 1 else ''}: "
                "a trap graded below 4/5 returns after a pause, so the answer comes from memory rather than from the explanation you just read."
            )
            rows.append((Button("Repeat it now", Action(Verb.NEXT, arg="repeat").encode()),))
        else:
            upcoming = sorted(s.due_on for s in known.values() if s.due_on > today)
            text = "**Nothing due right now.**" + (f" {texts.schedule_sentence(texts.day_label(today, upcoming[0]))}" if upcoming else "")
        if more_new:
            text += "\n\nYou have met today's new traps. Want one more?"
            rows.append((Button("One more new trap", Action(Verb.EXTRA).encode()),))
        elif not waiting:
            text += "\n\nYou have met every trap in the deck. Reviews come back when they are due."
        return Reply(text, kind=ReplyKind.INFO, buttons=tuple(rows))

    async def hint(self, learner_id: int) -> list[Reply]:
        learner = self._require(learner_id)
        if learner.current_card_id not in self.deck:
            return [self._no_open_trap()]
        with Session(self.db) as session:
            variant_id = wordings.open_variant(session, learner.id, learner.current_card_id)  # type: ignore[arg-type]
        card = as_asked(self.deck.get(learner.current_card_id), variant_id)  # type: ignore[arg-type]
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
            back = today + timedelta(days=1)
            with Session(self.db) as session:
                state = self._state(session, learner.id, learner.current_card_id)
                if state is not None:  # skipped for today, a repeat included
                    state.skipped_on = today
                    back = max(back, state.due_on)
                    session.add(state)
                db_learner = session.get(Learner, learner.id)
                assert db_learner is not None
                db_learner.current_card_id = None
                session.add(db_learner)
                session.commit()
            return [
                Reply(
                    f"Skipped for today: it comes back {texts.day_label(today, back).removeprefix('next review ')}.",
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
        prefetch = getattr(self.sims, "prefetch", None)
        if card.sim and prefetch is not None:
            try:  # the plot computes while the learner reads and types
                prefetch(card.sim)
            except Exception:  # a plot never stops a question
                log.exception("could not start the plot for %s", card.sim)
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
        problem = answer_problem(answer)
        if problem is not None:
            return [Reply(problem, kind=ReplyKind.ERROR)]
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
        card = as_asked(card, review.variant_id)  # the judge, the verdict and the follow-up read the wording asked
        if is_dont_know(review.answer):  # an honest blank: quality 0, no judge, no trap talk
            return self._finalize(review.id, card, None, grader=texts.DONT_KNOW_GRADER, quality=0)  # type: ignore[arg-type]
        started = _time.perf_counter()
        try:
            assessment = await self.grader.assess(card, review.answer, interactive=interactive)
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
            review.state_before = snapshot_of(state)
            self._schedule(state, quality, today, now, same_day_repeat=review.same_day_repeat)
            review.status = ReviewStatus.GRADED
            review.grader = fit_grader_name(grader)
            review.quality = quality
            review.score = grade.score if grade else None
            if grade:
                kept = (review.verdict or {}).get("second_reading")
                review.verdict = with_second(grade.judgement.to_json(), _reading(second) if second else kept)
            review.graded_at = now
            session.add_all([state, review])
            session.commit()
            next_label = texts.next_label(today, state.due_on, repeat_in=self.learning_step if state.repeat_today else None)
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
            text, kind=ReplyKind.VERDICT, buttons=buttons, plot_sim=card.sim or (CARD_IMAGE if card.image else None),
            card_id=card.id, review_id=review.id,
        )

    # ----- buttons ----------------------------------------------------------------------

    async def act(self, learner_id: int, data: str, *, decks: Sequence[str] | None = None) -> list[Reply]:
        """Carry out a button press; stale or forged data gets a clear message. ``decks``: the
        decks a "Next trap" pressed here draws from instead of the learner's (a group's)."""
        try:
            action = Action.decode(data)
        except InvalidAction:
            return [Reply("That button is not one of mine anymore. Send /trap to go on.", kind=ReplyKind.ERROR)]
        try:
            replies = await self._act(learner_id, action, decks)
            return self.with_notices(learner_id, replies)
        except InvalidAction as error:
            return [Reply(f"That button no longer applies: {error}.", kind=ReplyKind.ERROR)]

    async def _act(self, learner_id: int, action: Action, decks: Sequence[str] | None = None) -> list[Reply]:
        verb = action.verb
        if verb is Verb.NEXT:
            return await self.next_trap(learner_id, repeat_now=action.arg == "repeat", decks=decks)
        if verb is Verb.EXTRA:
            return await self.next_trap(learner_id, extra_new=True, decks=decks)
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
            card = as_asked(self.deck.get(review.card_id), review.variant_id) if review.card_id in self.deck else None
            if card is None:
                raise InvalidAction("that trap is no longer in the deck")
            if verb is Verb.RATE:
                self._expect(review, ReviewStatus.AWAITING)
                return self._finalize(review.id, card, None, grader="self", quality=action.int_arg(0, 5))
            if verb is Verb.TICK:
                self._expect(review, ReviewStatus.AWAITING)
                if action.arg == SHOW_ALL:
                    return [self._show_every_point(review, card)]
                if action.arg == TRAP:
                    return [self._toggle_trap(review, card)]
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

    # ----- plots, recovery ------------------------------------------------------------

    async def plot(
        self, sim_id: str, wait_seconds: float | None = 3.0, *, card_id: str | None = None
    ) -> PlotImage | None:
        """The card's own picture, or the simulation's plot; None if there is no service, it
        failed, or it is not ready within ``wait_seconds`` (None: wait until it is; then None
        means it failed)."""
        image = self.deck.image_path(card_id) if card_id is not None and card_id in self.deck else None
        if image is not None:
            return card_image(self.deck.get(card_id), image)  # type: ignore[arg-type]
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


#: ``Reply.plot_sim`` of a verdict whose card brings its own picture (``QuizEngine.plot`` reads it).
CARD_IMAGE = "card-image"


def card_image(card: Card, path: Any) -> PlotImage | None:
    """A card's own picture from its deck folder, with its caption; None (logged) when unreadable."""
    try:
        png = path.read_bytes()
    except OSError:
        log.exception("the image of card %s is unreadable", card.id)
        return None
    return PlotImage(sim_id=CARD_IMAGE, png=png, caption=card.caption or "", title=card.title, path=str(path))


def _reading(grade: Grade) -> dict[str, Any]:
    """A judge's reading as stored beside the verdict the learner was given."""
    return {"judge": grade.judgement.judge, "quality": grade.quality, "score": grade.score, "judgement": grade.judgement.to_json()}
