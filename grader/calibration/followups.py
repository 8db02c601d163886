"""How a judge reads answers to follow-up questions (issue 15): each answer is judged against
its one key point, as the quiz engine does, and counts as credited when that point's verdict
is present or partial ("you got there").

``followups.jsonl`` holds one answer a line: ``id``, ``card_id``, ``point_id`` (the point the
probe leads to), ``kind`` (right-plain, right-terse, wrong, wrong-trap), ``label`` (the
writer's reading of the answer against the point: present, partial, absent or
contradicted) and, optionally, ``author``. Its writers saw only each card's question, probes and key points, never a
judge's code. The offline judge's follow-up reading (``grader.offline.followup``) is fitted on it.
``followups-heldout.jsonl`` is a second set in the same form, written afterwards by two other
writers under the same blindness; nothing is fitted on it, and its figures are the ones
reported.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.base import CREDITED, PointVerdict, read_followup

FOLLOWUP_SET = Path(__file__).resolve().parent / "followups.jsonl"
HELDOUT_FOLLOWUP_SET = Path(__file__).resolve().parent / "followups-heldout.jsonl"
RIGHT_KINDS = ("right-plain", "right-terse")


@dataclass(frozen=True)
class FollowUpAnswer:
    id: str
    card_id: str
    point_id: str
    kind: str
    answer: str
    label: PointVerdict
    author: str = ""

    @property
    def should_credit(self) -> bool:
        return self.label in CREDITED


def load_followups(path: Path | str = FOLLOWUP_SET) -> list[FollowUpAnswer]:
    """The labelled follow-up answers; ``ValueError`` naming the line on a malformed one."""
    answers = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            answer = FollowUpAnswer(
                id=str(data["id"]),
                card_id=str(data["card_id"]),
                point_id=str(data["point_id"]),
                kind=str(data["kind"]),
                answer=str(data["answer"]),
                label=PointVerdict(data["label"]),
                author=str(data.get("author", "")),
            )
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{path}:{number}: {error}") from error
        if not answer.kind.strip() or not answer.answer.strip():
            raise ValueError(f"{path}:{number}: an empty kind or answer")
        answers.append(answer)
    return answers


def problems(deck: Any, answers: Sequence[FollowUpAnswer]) -> list[str]:
    """Answers to cards or points the deck does not have, or to points with no probe."""
    found = []
    for a in answers:
        if a.card_id not in deck:
            found.append(f"{a.id}: no card {a.card_id}")
            continue
        point = next((p for p in deck.get(a.card_id).key_points if p.id == a.point_id), None)
        if point is None or not point.probe:
            found.append(f"{a.id}: {a.card_id} has no probed point {a.point_id}")
    return found


@dataclass(frozen=True)
class Reading:
    """What the judge made of one follow-up answer: its one point's verdict, and whether it
    read a misconception of the card asserted (reported, not used for the credit)."""

    verdict: PointVerdict
    asserts_misconception: bool = False


async def judge_followups(
    judge: Any, deck: Any, answers: Sequence[FollowUpAnswer], *, concurrency: int = 4
) -> tuple[dict[str, Reading], int]:
    """Each answer's verdict on its one point, judged as the engine judges a follow-up (the
    probe as the question, ``interactive=False``); and how many the judge failed on."""
    semaphore = asyncio.Semaphore(max(1, concurrency))
    verdicts: dict[str, Reading] = {}
    errors = 0

    async def one(a: FollowUpAnswer) -> None:
        nonlocal errors
        card = deck.get(a.card_id)
        probe = card.key_point(a.point_id).probe
        async with semaphore:
            try:
                assessment = await read_followup(
                    judge, card.model_copy(update={"question": probe}), a.answer, a.point_id
                )
            except Exception as error:  # noqa: BLE001 - counted and reported, never fatal
                errors += 1
                print(f"{a.id}: {error}", file=sys.stderr)
                return
        if assessment.grade is not None:
            judgement = assessment.grade.judgement
            verdicts[a.id] = Reading(
                judgement.verdict_for(a.point_id), any(m.asserted for m in judgement.misconceptions)
            )

    await asyncio.gather(*(one(a) for a in answers))
    return verdicts, errors


def followup_metrics(
    deck: Any, answers: Sequence[FollowUpAnswer], readings: dict[str, Reading]
) -> dict[str, Any]:
    """Per kind: the share the judge credited and the share labelled as reaching the point;
    agreement on credited-or-not; and per card, whether its right answers to core probes
    are credited."""
    verdicts = {key: reading.verdict for key, reading in readings.items()}
    judged = [a for a in answers if a.id in verdicts]

    def credited(a: FollowUpAnswer) -> bool:
        return verdicts[a.id] in CREDITED

    def core(a: FollowUpAnswer) -> bool:
        return deck.get(a.card_id).key_point(a.point_id).core

    per_kind: dict[str, dict[str, Any]] = {}
    for scope, pick in (("core", core), ("all", lambda a: True)):
        by_kind: dict[str, list[FollowUpAnswer]] = defaultdict(list)
        for a in judged:
            if pick(a):
                by_kind[a.kind].append(a)
        per_kind[scope] = {
            kind: {
                "n": len(rows),
                "credited": round(sum(map(credited, rows)) / len(rows), 3),
                "present": round(
                    sum(verdicts[a.id] is PointVerdict.PRESENT for a in rows) / len(rows), 3
                ),
                "asserts_misconception": round(
                    sum(readings[a.id].asserts_misconception for a in rows) / len(rows), 3
                ),
                "labelled_credit": round(sum(a.should_credit for a in rows) / len(rows), 3),
                "verdicts": dict(sorted(_count(verdicts[a.id].value for a in rows).items())),
            }
            for kind, rows in sorted(by_kind.items())
        }
    right_core = [a for a in judged if a.kind in RIGHT_KINDS and a.should_credit and core(a)]
    cards = sorted({a.card_id for a in right_core})
    every = [c for c in cards if all(credited(a) for a in right_core if a.card_id == c)]
    # A card passes the goal when each of its core probes has a one-sentence right
    # answer (right-plain) that is credited.
    plain = [a for a in right_core if a.kind == "right-plain"]
    plain_cards = [c for c in cards if all(credited(a) for a in plain if a.card_id == c)]
    missed = sorted(a.id for a in plain if not credited(a))
    agree = sum(credited(a) == a.should_credit for a in judged)
    return {
        "n": len(judged),
        "cards": len({a.card_id for a in judged}),
        "agreement": round(agree / len(judged), 3) if judged else None,
        "per_kind": per_kind,
        "cards_with_every_right_core_answer_credited": f"{len(every)}/{len(cards)}",
        "cards_with_every_plain_core_answer_credited": f"{len(plain_cards)}/{len(cards)}",
        "plain_core_answers_not_credited": missed,
    }


def _count(values: Any) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for value in values:
        counts[value] += 1
    return counts


def format_followup_metrics(name: str, figures: dict[str, Any]) -> str:
    lines = [f"{name}: {figures['n']} follow-up answers on {figures['cards']} cards"]
    lines.append(f"  {'agreement with the labels (credited or not)':<50} {figures['agreement']}")
    for scope, title in (("core", "core points"), ("all", "every probed point")):
        lines.append(
            f"  {title}, per kind:    n   credited   present   labelled   trap read   verdicts"
        )
        for kind, row in figures["per_kind"].get(scope, {}).items():
            spread = ", ".join(f"{k} {v}" for k, v in row["verdicts"].items())
            lines.append(
                f"    {kind:<16} {row['n']:>4}   {row['credited']:>7.0%}   {row['present']:>6.0%}"
                f"   {row['labelled_credit']:>7.0%}   {row['asserts_misconception']:>8.0%}   {spread}"
            )
    lines.append(
        '  (credited: the point present or partial, what the bot calls "you got there"; '
        "trap read: the judge read a misconception asserted)"
    )
    lines.append(
        f"  {'cards whose right core answers are all credited':<50} "
        f"{figures['cards_with_every_right_core_answer_credited']}"
    )
    lines.append(
        f"  {'cards whose plain one-sentence core answers all are':<50} "
        f"{figures['cards_with_every_plain_core_answer_credited']}"
    )
    if figures["plain_core_answers_not_credited"]:
        lines.append("  plain one-sentence core answers not credited:")
        lines += [f"    {answer_id}" for answer_id in figures["plain_core_answers_not_credited"]]
    if figures.get("errors"):
        lines.append(f"  {'answers the judge failed on':<50} {figures['errors']}")
    return "\n".join(lines)
