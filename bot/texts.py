"""The words trapbot says: builders that turn cards, grades and stats into Markdown."""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from grader.base import Judgement, PointVerdict
from grader.scoring import PASS_QUALITY

if TYPE_CHECKING:
    from cards.schema import Card, KeyPoint, Misconception, Variant

#: The longest label shown beside a mark.
LABEL_CHARS = 60

MARK = {
    PointVerdict.PRESENT: "✅",
    PointVerdict.PARTIAL: "🟡",
    PointVerdict.ABSENT: "❌",
    PointVerdict.CONTRADICTED: "⛔",
}
#: What each SM-2 quality means under the grade rule (``grader.scoring``); falling for the trap
#: is said only when the judge read a misconception in the answer, never by the number alone.
QUALITY_WORDS = {
    0: "the mechanism is not there yet",
    1: "wrong, with a piece of the mechanism",
    2: "part of the core, not all of it",
    3: "right, with real gaps",
    4: "right, a small gap",
    5: "complete",
}

WELCOME = (
    "**trapbot** drills the traps of reinforcement learning and RLHF interviews: one question "
    "a day, the answer most candidates give, and the mechanism that breaks it.\n\n"
    "Answer in your own words. You get a grade point by point against the mechanism, the "
    "explanation with a plot from a small simulation, and the next review date from "
    "spaced repetition (SM-2)."
)

HELP = (
    "**Commands**\n"
    "- /trap: the next due trap, or a new one (a missed trap comes back after 10 minutes, "
    "once the others due are done)\n"
    "- /hint: a nudge for the open trap\n"
    "- /skip: skip the open trap for today\n"
    "- /stats: streak, reviews, what is due, mastery per mechanism\n"
    "- /settings: timezone, push time, new traps a day, interview mode, pause\n"
    "- /undo: take back your last grade\n"
    "- /forget: delete everything stored about you\n"
    "- /help: this message\n\n"
    "To answer, just send your answer as a message after a trap. When an answer misses a "
    "core point, \"Try the follow-up\" asks what an interviewer would ask next: your next "
    "message answers it (it never changes your grade; /skip skips it). "
    "`/settings interview on` asks it straight away. If you don't know, say so: "
    "\"I don't know\" shows the mechanism and counts as 0, with no guess to unlearn."
)


def question_text(card: Card, *, repeat: bool, due_label: str, variant: Variant | None = None) -> str:
    """The trap as asked. A variant (another setting, the same mechanism) goes without the
    card's title and source: those belong to the original wording, and the title would name
    the setting the learner is meant to transfer from."""
    if variant is not None:
        lines = [f"**The same mechanism, another setting**  ·  `{card.id}`", "", variant.question]
    else:
        header = f"**{card.title}**  ·  `{card.id}`"
        source = card.source
        where = " at ".join(part for part in (source.role, source.company) if part)
        lines = [header, f"_{where}, {source.date}_" if where else f"_{source.date}_", "", card.question]
    if repeat:
        lines += ["", "_Again today: SM-2 repeats a trap until it scores 4 or more._"]
    lines += ["", f"_{(due_label + ' ') if due_label else ''}Answer in a message of your own words._"]
    return "\n".join(lines)


def point_label(point: KeyPoint | Misconception) -> str:
    """The point's short label; before a card has one, the first clause of its text."""
    if point.label:
        return point.label
    first = re.split(r"(?<=[.;:])\s|,\s(?:so|and|which)\s", " ".join(point.text.split()))[0]
    return first if len(first) <= LABEL_CHARS else first[: LABEL_CHARS - 1].rstrip() + "…"


def key_text(card: Card) -> str:
    """The mechanism key in full, shown for self-grading and "I disagree"."""
    lines = ["**The mechanism key**"]
    for index, point in enumerate(card.key_points, 1):
        core = " (core)" if point.core else ""
        lines.append(f"{index}. {point.text}{core}")
    lines += ["", f"**The trap:** {card.trap}"]
    return "\n".join(lines)


def self_grade_prompt(card: Card) -> str:
    return (
        key_text(card)
        + "\n\nHow close was your answer? Rate it 0-5: 5 complete, 4 a small gap, 3 right with "
        "real gaps, 2 part of the core, 1 wrong with a piece of it, 0 nothing of it yet."
    )


def marked_points(card: Card, judgement: Judgement, *, numbered: bool = False) -> list[str]:
    """One line per key point: its mark and label, core points in bold."""
    lines = []
    for index, point in enumerate(card.key_points, 1):
        label = f"**{point_label(point)}**" if point.core else point_label(point)
        number = f"{index}. " if numbered else ""
        lines.append(f"{number}{MARK[judgement.verdict_for(point.id)]} {label}")
    return lines


def readings_note(judgement: Judgement, quality: int, second: dict[str, Any]) -> str:
    """Two judges' readings that disagree, the first given (the learner can dispute it)."""
    return (
        f"⚖️ Two readings of your answer disagree: {judgement.judge} gives **{quality}/5**, "
        f"{second.get('judge', 'another judge')} gives **{second.get('quality', '?')}/5**. "
        "You get the first; confirm it, or say what it should be."
    )


def assisted_prompt(
    card: Card,
    judgement: Judgement,
    quality: int,
    *,
    second: dict[str, Any] | None = None,
    doubtful: list[int] | None = None,
) -> str:
    """The judge's reading to confirm. ``doubtful``: the 1-based points it is unsure of, the only
    ones with a button (empty: it is sure of all); None: every point has a button."""
    if doubtful is None:
        head = "**Check my reading of your answer.** Tap a point to correct it, then confirm."
    elif doubtful:
        # The judge's doubt is about the outcome (grader.offline.judge.doubts): a point in doubt
        # could turn pass/fail around; the others could not, but may still be misread.
        names = ", ".join(f"{i}" for i in doubtful)
        head = (
            f"**Check my reading of your answer.** Whether it passes turns on point{'s' if len(doubtful) > 1 else ''} "
            f"{names}, and I am unsure of {'them' if len(doubtful) > 1 else 'it'}: tap {'one' if len(doubtful) > 1 else 'it'} "
            "to correct it, then confirm."
        )
    else:
        outcome = "it passes" if quality >= PASS_QUALITY else "it does not pass yet"
        head = (
            f"**My reading of your answer.** I am sure {outcome}; confirm it, or correct a point "
            "if I misread you."
        )
    lines = [head, ""]
    if second:
        lines[1:1] = ["", readings_note(judgement, quality, second)]
    lines += marked_points(card, judgement, numbered=True)
    fell = _asserted(card, judgement)
    if fell:
        unsure = doubtful is not None and any(m.id in judgement.unsure_points for m in fell)
        doubt = " I am unsure of this: tap **Not the trap** if your answer does not say it." if unsure else ""
        lines += ["", f"⚠️ It reads like the trap: _{point_label(fell[0])}_.{doubt}"]
    lines += ["", f"_Bold points are the core._ As ticked, that grades **{quality}/5**."]
    return "\n".join(lines)


def _asserted(card: Card, judgement: Judgement) -> list[Misconception]:
    asserted = {m.misconception_id for m in judgement.misconceptions if m.asserted}
    return [m for m in card.misconceptions if m.id in asserted]


def biggest_gap(card: Card, judgement: Judgement) -> KeyPoint | None:
    """The most important point the answer did not state: a core one first, then the
    heaviest of the rest; None when nothing is missing."""
    missing = [
        point
        for point in card.key_points
        if judgement.verdict_for(point.id) is not PointVerdict.PRESENT
    ]
    if not missing:
        return None
    return max(missing, key=lambda point: (point.core, point.weight, -card.key_points.index(point)))


def first_sentence(text: str) -> str:
    """The first whole sentence of ``text`` (never cut inside it: a long sentence beats a
    fragment); the whole text when it has no sentence end."""
    text = " ".join(text.split())
    match = re.match(r"(.+?(?<!\bal)(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)(?<!\bcf)[.!?])(?:\s|$)", text)
    return match.group(1) if match else text


def gap_hint(point: KeyPoint) -> str:
    """What the verdict says about a missed point: its hint (a pointer, not the answer); a card
    written before hints shows the point's label to look for."""
    return point.hint or f"Look again at this point: _{point_label(point)}_."


def verdict_text(
    card: Card,
    quality: int,
    judgement: Judgement | None,
    caps: tuple[str, ...],
    next_label: str,
    grader: str,
    *,
    second: dict[str, Any] | None = None,
    follow_up: bool = False,
) -> str:
    """Readable in five seconds: the grade, a mark per point, the one thing that matters most,
    then the first paragraph of the explanation (the rest is a tap away).

    With ``follow_up`` (an interviewer's follow-up question is offered for the missed core
    point) the missed point and the explanation are held back: the follow-up reply shows them
    once the learner has tried."""
    if grader == DONT_KNOW_GRADER:
        return dont_know_text(card, next_label)
    lines = [f"**Grade {quality}/5**: {QUALITY_WORDS[quality]}  ·  {next_label}"]
    if judgement is not None and judgement.points:
        lines += ["", *marked_points(card, judgement)]
        fell = _asserted(card, judgement)
        gap = biggest_gap(card, judgement)
        if fell:
            trap = f"⚠️ **You fell for the trap:** {point_label(fell[0])}."
            lines += ["", f"{trap} {first_sentence(fell[0].why_wrong)}"]
        elif follow_up:
            lines += ["", "**You missed a core point.** Try the follow-up question before you read it."]
        elif gap is not None:
            lead = "**A core point to find:**" if gap.core else "**To make it complete:**"
            lines += ["", f"{lead} {gap_hint(gap)}"]
        if any("instruct the grader" in cap for cap in caps):
            lines += ["", "_Your answer contains instructions to the grader; they were ignored._"]
        if second:
            lines += ["", readings_note(judgement, quality, second).replace("confirm it, or say", 'tap "I disagree" to say')]
    if not follow_up:
        lines += ["", "**Why**", first_paragraph(card.explanation)]
    lines += ["", f"_Graded by: {grader}_"]
    return "\n".join(lines)


#: The grader named on an answer that only said "I don't know" (graded 0, no judge asked).
DONT_KNOW_GRADER = "none: you said you don't know"


def dont_know_text(card: Card, next_label: str) -> str:
    """The verdict on "I don't know": no grade talk about traps, the mechanism to take away."""
    lines = [
        f"**Grade 0/5**: you said you don't know  ·  {next_label}",
        "",
        "Saying so beats a guess. The points to carry into the next try:",
    ]
    for point in card.key_points:
        lines.append(f"- **{point_label(point)}**" if point.core else f"- {point_label(point)}")
    lines += ["", "**Why**", first_paragraph(card.explanation), "", "_Bold points are the core._"]
    return "\n".join(lines)


def first_paragraph(markdown: str) -> str:
    """The explanation's opening, ended where a paragraph ends a thought: a paragraph that
    ends with a colon brings what it announces (a formula, a list) along."""
    blocks = [block.strip() for block in markdown.strip().split("\n\n") if block.strip()]
    taken = blocks[:1]
    while taken and len(taken) < len(blocks) and not _ends_thought(taken[-1]):
        taken.append(blocks[len(taken)])
    return "\n\n".join(taken)


def _ends_thought(block: str) -> bool:
    """Whether a paragraph ends a sentence (not a colon, not prose running into a formula)."""
    return re.search(r"[.?!]['\")\]_*`]*$|\$$", block.rstrip()) is not None and not block.rstrip().endswith(":")


def explanation_text(card: Card) -> str:
    lines = [f"**{card.title}**", "", card.explanation.strip(), "", "**References**"]
    for ref in card.references:
        arxiv = f", arXiv:{ref.arxiv}" if ref.arxiv else ""
        lines.append(f"- {ref.authors} ({ref.year}). _{ref.title}_{arxiv}")
    return "\n".join(lines)


def next_label(today: date, due: date, *, repeat_in: timedelta | None = None) -> str:
    """When a graded trap comes back: after the learning step today, or at its next review."""
    if repeat_in is not None:
        minutes = max(1, round(repeat_in.total_seconds() / 60))
        return f"back in {minutes} minute{'s' if minutes != 1 else ''}, after what else is due"
    return day_label(today, due)


def schedule_sentence(label: str) -> str:
    """A label of ``next_label`` or ``day_label`` as a sentence of its own."""
    if label.startswith("back"):
        return f"It comes {label}."
    return label[0].upper() + label[1:] + "."


def day_label(today: date, due: date) -> str:
    days = (due - today).days
    when = due.strftime("%a %d %b")
    if days <= 0:
        return "back today"
    if days == 1:
        return f"next review tomorrow ({when})"
    return f"next review in {days} days ({when})"
