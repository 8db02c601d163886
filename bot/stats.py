"""/stats: streak, reviews, the week's forecast and mastery per mechanism, as data and as a reply."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, timedelta

from sqlmodel import Session, select

from bot.clock import local_date
from bot.followups import FollowUps, rescue_line
from bot.learners import LearnerRoom
from bot.models import CardState, Review, ReviewStatus
from bot.replies import Reply, ReplyKind
from cards.deck import Deck


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
    # Traps met in loaded decks the learner does not study now: left out of the figures above
    # that are about cards (met, forecast, mastery), kept in the history.
    set_aside: int = 0
    all_decks: bool = True  # whether the learner studies every loaded deck


_KEEP_FORMAT = {"\u200c", "\u200d"}  # joiners shape emoji and some scripts


class StatsRoom(LearnerRoom):
    deck: Deck
    followups: FollowUps

    def stats_data(self, learner_id: int) -> Stats:
        """The learner's figures. Streak and reviews count the whole history; what is about
        cards (traps met of how many, the forecast, mastery) counts the cards of the decks the
        learner studies now, as /trap serves them. Cards of a deck they dropped are counted in
        ``set_aside``; cards of a deck folder no longer loaded are in no figure but the history."""
        learner = self._require(learner_id)
        today = self.today(learner)
        studied = {card.id for card in (self.deck.in_decks(learner.decks) or list(self.deck))}  # as _choose
        with Session(self.db) as session:
            every_state = session.exec(select(CardState).where(CardState.learner_id == learner_id)).all()
            reviews = session.exec(
                select(Review).where(Review.learner_id == learner_id, Review.status == ReviewStatus.GRADED)
            ).all()
        states = [s for s in every_state if s.card_id in studied]
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
            if card_id in studied:
                for tag in self.deck.get(card_id).tags:
                    by_tag[tag].append(quality / 5)
        mastery = {tag: sum(v) / len(v) for tag, v in sorted(by_tag.items())}
        answered, rescued = self.followups.counts(learner_id)
        return Stats(
            streak_days=streak,
            reviews_done=len(reviews),
            cards_seen=sum(1 for s in states if s.last_reviewed_on is not None),
            cards_total=len(studied),
            due_forecast=forecast,
            mastery=mastery,
            followups_answered=answered,
            followups_rescued=rescued,
            variant_reviews=sum(1 for r in reviews if r.variant_id),
            variant_recalled=sum(1 for r in reviews if r.variant_id and (r.quality or 0) >= 3),
            set_aside=sum(
                1 for s in every_state if s.card_id not in studied and s.card_id in self.deck and s.last_reviewed_on is not None
            ),
            all_decks=len(studied) == len(self.deck),
        )

    async def stats(self, learner_id: int, *, with_plot: bool = True) -> list[Reply]:
        if self.get_learner(learner_id) is None:
            return [self._unknown_learner()]
        data = self.stats_data(learner_id)
        lines = [
            "**Your progress**",
            f"- Streak: {data.streak_days} day{'s' if data.streak_days != 1 else ''}",
            f"- Reviews done: {data.reviews_done}",
            f"- Traps met: {data.cards_seen} of {data.cards_total}" + ("" if data.all_decks else " in your decks"),
            "- Due this week: "
            + ", ".join(f"{day.strftime('%a')} {count}" for day, count in data.due_forecast),
        ]
        if data.variant_reviews:
            lines.append(
                f"- In another setting: {data.variant_recalled} of {data.variant_reviews} reviews recalled (3+)"
            )
        if data.set_aside:
            lines.append(
                f"- Set aside: {data.set_aside} trap{'s' if data.set_aside != 1 else ''} you met in decks you do not study now, "
                "not counted above (history kept; add their decks in /settings to review them again)"
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
            from bot.stats_plot import render_stats  # matplotlib only when a plot is drawn

            image = await asyncio.to_thread(
                render_stats, data.due_forecast, data.mastery, streak_days=data.streak_days, reviews_done=data.reviews_done
            )
        return self.with_notices(learner_id, [Reply("\n".join(lines), kind=ReplyKind.STATS, image=image, image_caption="Due this week and mastery per mechanism")])
