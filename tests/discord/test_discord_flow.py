"""The whole Discord flow through the real engine and a real database: trap, answer form,
verdict with its plot, disagree, undo; privacy; grading with ticks; bad input."""

from __future__ import annotations

from types import SimpleNamespace

import discord
import pytest
from sqlmodel import Session, select

from bot.actions import Action, Verb
from bot.discord import texts
from bot.discord.custom_ids import ButtonId
from bot.discord.format import (
    DESCRIPTION_MAX,
    EMBEDS_PER_MESSAGE,
    FIELD_VALUE_MAX,
    FIELDS_MAX,
    MESSAGE_TOTAL_MAX,
    discord_len,
    embed_size,
)
from bot.models import CardState, Learner, Review, ReviewStatus
from bot.texts import point_label


def reviews(rig, user) -> list[Review]:
    with Session(rig.engine.db) as session:
        learner = session.exec(
            select(Learner).where(Learner.platform_user_id == str(user.id))
        ).first()
        if learner is None:
            return []
        return list(
            session.exec(
                select(Review).where(Review.learner_id == learner.id).order_by(Review.id)
            ).all()
        )


def learner_row(rig, user) -> Learner | None:
    with Session(rig.engine.db) as session:
        return session.exec(select(Learner).where(Learner.platform_user_id == str(user.id))).first()


def naming_every_point(rig, card_id: str) -> str:
    card = rig.engine.deck.get(card_id)
    return "My answer: " + "; ".join(point.id for point in card.key_points) + "."


def assert_within_limits(sent) -> None:
    assert len(sent.embeds) <= EMBEDS_PER_MESSAGE
    assert sum(embed_size(embed) for embed in sent.embeds) <= MESSAGE_TOTAL_MAX
    for embed in sent.embeds:
        assert discord_len(embed.description or "") <= DESCRIPTION_MAX
        assert len(embed.fields) <= FIELDS_MAX
        assert all(discord_len(f.value) <= FIELD_VALUE_MAX for f in embed.fields)


async def open_trap_and_form(rig, user, *, in_dm: bool = False):
    trap = await rig.command("trap", user, in_dm=in_dm)
    question = trap.last
    answer = await rig.press(question, "Answer", user, in_dm=in_dm)
    assert answer.events == ["modal"], "the form must be Discord's first answer to the press"
    return question, answer.modal


async def test_trap_answer_verdict_disagree_undo_in_a_server(make_rig, sim_id) -> None:
    rig = make_rig()
    ada = rig.users["ada"]

    trap = await rig.command("trap", ada)
    assert trap.events[0] == "defer-thinking" and trap.deferred_ephemeral is True
    question = trap.last
    card_id = rig.engine.deck.cards[0].id
    card = rig.engine.deck.get(card_id)
    assert card.title in question.text and card_id in question.text
    assert [b["label"] for b in question.buttons] == ["Answer", "Hint", "Skip"]
    assert (
        question.custom_id("Answer") == ButtonId(Action(Verb.ANSWER, arg=card_id), ada.id).encode()
    )

    press = await rig.press(question, "Answer", ada)
    form = press.modal
    assert form is not None and form.custom_id == f"trapbot-answer:{ada.id}:{card_id}"
    text_input = next(
        child.component for child in form.children if isinstance(child, discord.ui.Label)
    )
    assert text_input.style is discord.TextStyle.paragraph and text_input.max_length == 4000

    submitted = await rig.submit(form, naming_every_point(rig, card_id), ada)
    assert submitted.events[0] == "defer-thinking" and submitted.deferred_ephemeral is True
    verdict = submitted.last
    [review] = reviews(rig, ada)
    assert review.status == ReviewStatus.GRADED and review.card_id == card_id
    assert f"Grade {review.quality}/5" in verdict.text
    for point in card.key_points:
        assert point_label(point) in verdict.text
    plot_name = f"plot-{sim_id}.png"
    assert verdict.files == {plot_name: rig.plots.png_path.read_bytes()}
    assert verdict.embeds[-1].image.url == f"attachment://{plot_name}"
    # A core point whose only evidence is one word ("overoptimization") does not count, so the
    # interviewer's follow-up is offered first (issue 15).
    follow_up = ["Try the follow-up"] if review.quality < 3 else []
    assert [b["label"] for b in verdict.buttons] == [*follow_up, "Full explanation", "I disagree", "Next trap"]
    assert all(sent.ephemeral for sent in submitted.sent)

    explain = await rig.press(verdict, "Full explanation", ada)
    assert any(f.name == "References" for f in explain.last.embeds[0].fields)

    disagree = await rig.press(verdict, "I disagree", ada)
    override = disagree.last
    assert [[b["label"] for b in row] for row in override.rows] == [
        ["0", "1", "2"],
        ["3", "4", "5"],
    ]
    judged = review.quality
    noted = await rig.press(override, "1", ada)
    assert "**1/5**" in noted.last.embeds[0].description
    [review] = reviews(rig, ada)
    assert (review.quality, review.judge_quality) == (1, judged)

    undo = await rig.command("undo", ada)
    assert "Taken back" in undo.last.text
    assert [b["label"] for b in undo.last.buttons] == ["Answer"], (
        "the trap is open again, so it can be answered"
    )
    [review] = reviews(rig, ada)
    assert review.status == ReviewStatus.UNDONE
    with Session(rig.engine.db) as session:
        state = session.exec(select(CardState).where(CardState.card_id == card_id)).one()
    assert state.last_reviewed_on is None and state.repetitions == 0


@pytest.mark.usefixtures("sqlite_is_enough")
async def test_nobody_presses_or_submits_for_someone_else(make_rig) -> None:
    rig = make_rig()
    ada, bob = rig.users["ada"], rig.users["bob"]
    question, form = await open_trap_and_form(rig, ada)
    verdict = (
        await rig.submit(
            form, naming_every_point(rig, question.custom_id("Answer").rsplit(":", 1)[1]), ada
        )
    ).last
    [before] = reviews(rig, ada)

    for label in ("I disagree", "Full explanation", "Answer"):
        sent = verdict if label != "Answer" else question
        press = await rig.press(sent, label, bob)
        assert texts.NOT_YOURS in press.text and press.modal is None

    stolen_form = await rig.submit(form, "bob's words about proxy-not-goal", bob)
    assert texts.FORM_NOT_YOURS in stolen_form.text
    assert reviews(rig, bob) == []

    # A forged id that names bob as owner but ada's review: the engine refuses it.
    forged = ButtonId(Action(Verb.OVERRIDE, before.id, "0"), bob.id).encode()
    press = rig.interaction(bob, kind=discord.InteractionType.component, data={"custom_id": forged})
    await rig.handlers.route(press)
    assert "not yours" in press.text
    [after] = reviews(rig, ada)
    assert after.quality == before.quality


async def test_assisted_grading_updates_in_place_then_confirms(make_rig) -> None:
    rig = make_rig(judge="assisted")
    ada = rig.users["ada"]
    question, form = await open_trap_and_form(rig, ada)
    card = rig.engine.deck.get(question.custom_id("Answer").rsplit(":", 1)[1])
    first_point = card.key_points[0].id
    proposal = (await rig.submit(form, f"Only {first_point} matters.", ada)).last
    assert reviews(rig, ada)[0].status == ReviewStatus.AWAITING
    assert proposal.buttons[0]["label"] == "1. ✅" and "Confirm" in proposal.buttons[-1]["label"]

    tick = await rig.press(proposal, "1. ✅", ada)
    assert tick.events == ["defer-update", "edit"], "a tick edits the grading message, it adds none"
    edited = tick.last
    assert edited.buttons[0]["label"] == "1. 🟡"

    gone = http_error_not_found()
    tick_on_deleted = await rig.press(edited, "1. 🟡", ada, edit_error=gone)
    assert tick_on_deleted.events == ["defer-update", "followup"]
    assert tick_on_deleted.last.buttons[0]["label"] == "1. ❌"

    confirm_label = next(
        b["label"] for b in tick_on_deleted.last.buttons if b["label"].startswith("Confirm")
    )
    confirmed = await rig.press(tick_on_deleted.last, confirm_label, ada)
    [review] = reviews(rig, ada)
    assert review.status == ReviewStatus.GRADED
    assert f"Grade {review.quality}/5" in confirmed.last.text


def http_error_not_found() -> discord.NotFound:
    return discord.NotFound(
        SimpleNamespace(status=404, reason="Not Found"),
        {"code": 10008, "message": "Unknown Message"},
    )


@pytest.mark.usefixtures("sqlite_is_enough")
async def test_self_grading_rates_from_two_rows_of_buttons(make_rig) -> None:
    rig = make_rig(judge="self")
    ada = rig.users["ada"]
    _, form = await open_trap_and_form(rig, ada)
    prompt = (await rig.submit(form, "The reward model is a proxy; keep the KL.", ada)).last
    assert [[b["label"] for b in row] for row in prompt.rows] == [["0", "1", "2"], ["3", "4", "5"]]
    rated = await rig.press(prompt, "4", ada)
    assert "Grade 4/5" in rated.last.text
    assert reviews(rig, ada)[0].quality == 4


@pytest.mark.usefixtures("sqlite_is_enough")
async def test_a_slow_plot_follows_the_verdict(make_rig, sim_id) -> None:
    rig = make_rig(plots_ready=False)
    ada = rig.users["ada"]
    _, form = await open_trap_and_form(rig, ada)
    submitted = await rig.submit(form, "proxy-not-goal and overoptimization", ada)
    assert submitted.last.files == {}, "the verdict does not wait for the plot"
    rig.plots.ready.set()
    await rig.handlers.drain()
    late = submitted.last
    assert late.how == "followup" and late.files == {
        f"plot-{sim_id}.png": rig.plots.png_path.read_bytes()
    }
    assert late.ephemeral is True


@pytest.mark.usefixtures("sqlite_is_enough")
async def test_empty_and_oversized_answers_are_never_lost(make_rig) -> None:
    rig = make_rig()
    ada = rig.users["ada"]
    _, form = await open_trap_and_form(rig, ada)

    empty = await rig.submit(form, "   \n ", ada)
    assert texts.EMPTY_FORM in empty.text and empty.last.buttons[0]["label"] == "Answer"
    assert reviews(rig, ada) == []

    # 4,000 family emoji are 4,000 characters to Discord but 28,000 code points: too long.
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466" * 4000
    too_long = await rig.submit(form, family, ada)
    assert "limit" in too_long.text and reviews(rig, ada) == []
    assert too_long.last.files["your-answer.txt"].decode("utf-8") == family
    assert too_long.last.buttons[0]["label"] == "Answer"

    robots = "\U0001f916" * 4000  # emoji only: nothing to read, refused like an empty answer (issue 42.9)
    refused = await rig.submit(form, robots, ada)
    assert "empty" in refused.text and reviews(rig, ada) == []
    worded = "\U0001f916 the proxy is gamed " * 200  # 4,000 characters with words in them
    graded = await rig.submit(form, worded, ada)
    [review] = reviews(rig, ada)
    assert review.answer == worded.strip() and review.status == ReviewStatus.GRADED
    for sent in graded.sent:
        assert_within_limits(sent)


@pytest.mark.usefixtures("sqlite_is_enough")
async def test_stale_foreign_and_malformed_ids(make_rig) -> None:
    rig = make_rig()
    ada = rig.users["ada"]

    old = rig.interaction(
        ada, kind=discord.InteractionType.component, data={"custom_id": "trapbot:1001:t0:next:-:-"}
    )
    await rig.handlers.route(old)
    assert texts.STALE in old.text and old.sent[0].ephemeral is True

    foreign = rig.interaction(
        ada, kind=discord.InteractionType.component, data={"custom_id": "someone-else:42"}
    )
    await rig.handlers.route(foreign)
    assert foreign.events == [], "another app's component is not ours to answer"

    broken_form = {
        "custom_id": "trapbot-answer:1001:../etc",
        "components": [{"type": 4, "custom_id": "answer", "value": "my careful answer"}],
    }
    submitted = rig.interaction(ada, kind=discord.InteractionType.modal_submit, data=broken_form)
    await rig.handlers.route(submitted)
    assert texts.STALE in submitted.text
    assert submitted.last.files["your-answer.txt"] == b"my careful answer"


async def test_buttons_after_forget_answer_clearly(make_rig) -> None:
    rig = make_rig()
    ada = rig.users["ada"]
    _, form = await open_trap_and_form(rig, ada)
    verdict = (await rig.submit(form, "proxy-not-goal", ada)).last
    confirm = (await rig.command("forget", ada)).last
    assert [b["label"] for b in confirm.buttons] == ["Delete everything", "Cancel"]
    assert confirm.buttons[0]["style"] == discord.ButtonStyle.danger.value
    done = await rig.press(confirm, "Delete everything", ada)
    assert "deleted" in done.text and learner_row(rig, ada) is None
    stale = await rig.press(verdict, "I disagree", ada)
    assert "no longer applies" in stale.text


async def test_privacy_and_reach_in_a_dm_versus_a_server(make_rig) -> None:
    rig = make_rig()
    ada, bob = rig.users["ada"], rig.users["bob"]

    in_server = await rig.command("trap", ada)
    assert in_server.deferred_ephemeral is True
    row = learner_row(rig, ada)
    assert row.chat_id is None and row.active is False, "met in a server: not pushed by DM"

    in_dm = await rig.command("trap", bob, in_dm=True)
    assert in_dm.deferred_ephemeral is False, "a DM is private already, and its buttons stay"
    row = learner_row(rig, bob)
    assert row.chat_id == str(bob.id) and row.active is True and row.next_push_at is not None

    # A push found Bob's DMs closed (the sweep deactivates him): the server does not bring him
    # back into the sweep, a DM from him does.
    with Session(rig.engine.db) as session:
        blocked = session.get(Learner, row.id)
        blocked.active, blocked.next_push_at = False, None
        session.add(blocked)
        session.commit()
    await rig.command("trap", bob)
    assert learner_row(rig, bob).active is False
    await rig.command("hint", bob, in_dm=True)
    assert learner_row(rig, bob).active is True and learner_row(rig, bob).next_push_at is not None


@pytest.mark.usefixtures("sqlite_is_enough")
async def test_commands_in_the_wrong_place(make_rig) -> None:
    rig = make_rig()
    ada = rig.users["ada"]
    for name in ("trapbot-setup", "leaderboard"):
        dm = await rig.command(name, ada, in_dm=True)
        assert dm.events == ["message"] and "works in a server" in dm.text and dm.last.ephemeral
    not_member = rig.interaction(ada, guild_id=777)
    not_member.guild = None
    await rig.client.tree.get_command("leaderboard").callback(not_member)
    assert "not a member of this server" in not_member.text


async def test_settings_and_dm_reminders(make_rig) -> None:
    rig = make_rig()
    ada = rig.users["ada"]
    saved = await rig.command("settings", ada, timezone="Berlin", time="7pm", new_per_day=2)
    row = learner_row(rig, ada)
    assert (row.timezone, row.push_time.strftime("%H:%M"), row.new_per_day) == (
        "Europe/Berlin",
        "19:00",
        2,
    )
    assert "Saved." in saved.text and "DM reminders: **off**" in saved.text

    wrong = await rig.command("settings", ada, timezone="Atlantis")
    assert "Atlantis" in wrong.text and learner_row(rig, ada).timezone == "Europe/Berlin"

    ada.dms_open = False
    closed = await rig.command("settings", ada, reminders=True)
    assert texts.DM_CLOSED in closed.text and learner_row(rig, ada).active is False

    ada.dms_open = True
    opened = await rig.command("settings", ada, reminders=True)
    row = learner_row(rig, ada)
    assert (
        row.chat_id == str(ada.id)
        and row.active
        and not row.paused
        and row.next_push_at is not None
    )
    assert len(ada.dms) == 1 and "DM reminders: **on**" in opened.text

    off = await rig.command("settings", ada, reminders=False)
    assert learner_row(rig, ada).paused and "DM reminders: **off**" in off.text


@pytest.mark.usefixtures("sqlite_is_enough")
async def test_stats_come_with_their_plot(make_rig) -> None:
    rig = make_rig()
    ada = rig.users["ada"]
    _, form = await open_trap_and_form(rig, ada)
    await rig.submit(form, "proxy-not-goal", ada)
    stats = (await rig.command("stats", ada)).last
    [name] = stats.files
    assert (
        stats.files[name].startswith(b"\x89PNG")
        and stats.embeds[-1].image.url == f"attachment://{name}"
    )
    assert "Reviews done: 1" in stats.text


@pytest.mark.usefixtures("sqlite_is_enough")
async def test_help_hint_and_skip(make_rig) -> None:
    rig = make_rig()
    ada = rig.users["ada"]
    shown = await rig.command("help", ada)
    assert "/trapbot-setup" in shown.text and shown.last.ephemeral is True
    nothing_open = await rig.command("hint", ada)
    assert "no open trap" in nothing_open.text
    await rig.command("trap", ada)
    hint = await rig.command("hint", ada)
    assert rig.engine.deck.cards[0].hint.split()[0] in hint.text
    skipped = await rig.command("skip", ada)
    assert "Skipped" in skipped.text


@pytest.mark.usefixtures("sqlite_is_enough")
async def test_typed_answers_in_a_dm(make_rig) -> None:
    rig = make_rig()
    bob = rig.users["bob"]
    question, _ = await open_trap_and_form(rig, bob, in_dm=True)
    channel = FakeDmChannel()
    typed = SimpleNamespace(
        author=bob,
        guild=None,
        channel=channel,
        content="proxy-not-goal, overoptimization",
        reference=None,
    )
    await rig.handlers.on_direct_message(typed)
    [review] = reviews(rig, bob)
    assert (
        review.status == ReviewStatus.GRADED
        and f"Grade {review.quality}/5" in channel.sent[0]["embeds"][0].title
    )
    assert channel.typing_shown == [(0, 0)], "typing shows while grading, before the verdict"

    # No trap is open now, but a reply to the question's message still answers that trap.
    quoted = SimpleNamespace(author=SimpleNamespace(bot=True), embeds=question.embeds)
    reply = SimpleNamespace(
        author=bob,
        guild=None,
        channel=channel,
        content="what-to-do",
        reference=SimpleNamespace(resolved=quoted),
    )
    await rig.handlers.on_direct_message(reply)
    assert [r.card_id for r in reviews(rig, bob)] == [review.card_id, review.card_id]

    typed_command = SimpleNamespace(
        author=bob, guild=None, channel=channel, content="/trap", reference=None
    )
    await rig.handlers.on_direct_message(typed_command)
    assert texts.TYPED_COMMAND in channel.sent[-1]["embeds"][0].description
    assert len(reviews(rig, bob)) == 2


class FakeDmChannel:
    type = discord.ChannelType.private

    def __init__(self) -> None:
        self.sent: list[dict] = []
        self.typing_shown: list[tuple[int, int]] = []  # messages sent when it began and ended

    def typing(self):
        channel = self

        class Typing:
            async def __aenter__(self):
                self.began = len(channel.sent)

            async def __aexit__(self, *exc):
                channel.typing_shown.append((self.began, len(channel.sent)))

        return Typing()

    async def send(self, **kwargs):
        self.sent.append(kwargs)
        return SimpleNamespace(id=len(self.sent))


class EveryPointJudge:
    """Credits every key point, quoting the phrase the card accepts for it (a 5/5 on any card)."""

    name = "every-point"

    @staticmethod
    def answer(card) -> str:
        return "; ".join(p.accepts[0] for p in card.key_points) + "."

    async def assess(self, card, answer: str, *, interactive: bool):
        from grader.base import Assessment, Judgement, PointJudgement, PointVerdict
        from grader.scoring import grade_from_judgement

        points = tuple(PointJudgement(p.id, PointVerdict.PRESENT, p.accepts[0]) for p in card.key_points)
        judgement = Judgement(judge=self.name, points=points)
        return Assessment(grader=self.name, grade=grade_from_judgement(card, judgement, answer))


@pytest.mark.usefixtures("sqlite_is_enough")
async def test_every_verdict_of_the_deck_has_its_plot(make_rig, deck_plots) -> None:
    from cards.deck import default_deck

    deck = default_deck()
    slow_sim = deck.cards[2].sim  # the third trap's simulation outlasts its verdict
    plots = deck_plots(frozenset({slow_sim}))
    rig = make_rig(judge=EveryPointJudge(), plots=plots, deck=deck, new_per_day=len(deck.cards))
    ada = rig.users["ada"]
    seen: list[str] = []
    last_submitted = []
    for _ in deck.cards:
        question, form = await open_trap_and_form(rig, ada)
        [card_id] = [c.id for c in deck.cards if f"· {c.id}" in question.text or c.id in question.text.split()]
        assert card_id not in seen, (card_id, [s.text[:300] for s in last_submitted])
        seen.append(card_id)
        card = deck.get(card_id)
        assert plots.prefetched[-1] == card.sim  # computing while the learner types
        submitted = await rig.submit(form, EveryPointJudge.answer(card), ada)
        last_submitted = submitted.sent
        verdict = next(s for s in submitted.sent if "Grade" in s.text)
        plot_name = f"plot-{card.sim}.png"
        if card.sim == slow_sim and not plots.release.is_set():
            assert verdict.files == {}, "the verdict does not wait for a slow plot"
            plots.release.set()
            await rig.handlers.drain()
            late = submitted.sent[-1]
            assert late.how == "followup" and late.files == {plot_name: plots.png}
            assert late.embeds[0].description  # its caption
        else:
            assert verdict.files == {plot_name: plots.png}, card_id
    assert len(seen) == 26


@pytest.mark.usefixtures("sqlite_is_enough")
async def test_a_late_plot_goes_by_dm_once_the_interaction_expired(make_rig, sim_id) -> None:
    rig = make_rig(plots_ready=False)
    ada = rig.users["ada"]
    _, form = await open_trap_and_form(rig, ada)
    submitted = await rig.submit(form, "proxy-not-goal and overoptimization", ada)
    submitted.followup_error = http_error_expired()
    rig.plots.ready.set()
    await rig.handlers.drain()
    assert [set(dm.files) for dm in ada.dms] == [{f"plot-{sim_id}.png"}]


@pytest.mark.usefixtures("sqlite_is_enough")
async def test_a_plot_that_cannot_be_made_is_said(make_rig, sim_id) -> None:
    class Failing:
        async def plot_for(self, sim_id: str, wait_seconds: float | None = 3.0):
            return None  # the service's answer when the simulation failed

    rig = make_rig(plots=Failing())
    ada = rig.users["ada"]
    _, form = await open_trap_and_form(rig, ada)
    submitted = await rig.submit(form, "proxy-not-goal and overoptimization", ada)
    await rig.handlers.drain()
    assert "could not be made" in submitted.sent[-1].text


def http_error_expired():
    from types import SimpleNamespace as Response

    import discord

    return discord.NotFound(Response(status=404, reason="test"), {"code": 10015, "message": "Unknown Webhook"})


@pytest.mark.usefixtures("sqlite_is_enough")
async def test_the_first_grade_during_the_warm_up_says_so_once(make_rig) -> None:
    import asyncio

    rig = make_rig()
    ada = rig.users["ada"]
    loaded = asyncio.Event()
    rig.handlers.warmup.task = asyncio.ensure_future(loaded.wait())  # as serve() sets it
    try:
        _, form = await open_trap_and_form(rig, ada)
        submitted = await rig.submit(form, "proxy-not-goal and overoptimization", ada)
        assert submitted.events[0] == "defer-thinking"
        texts_sent = [s.text for s in submitted.sent]
        assert "Grade" in texts_sent[0] and "judge was still loading" in texts_sent[-1]
        loaded.set()
        rig.clock.advance(minutes=10)  # the missed trap's learning step
        _, form = await open_trap_and_form(rig, ada)
        again = await rig.submit(form, "proxy-not-goal again", ada)
        assert not any("judge was still loading" in s.text for s in again.sent)
    finally:
        loaded.set()
