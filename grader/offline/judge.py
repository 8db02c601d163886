"""The decision: the learnt reading's verdicts, how sure they are, and the judge around them.

``PointModel`` (fitted by ``grader.calibration.train``) reads ``evidence.features`` and gives
per key point P(present), P(present or partial) and P(contradicted), per misconception
P(asserted); its cut-points make the verdicts. ``doubts`` names the verdicts within
``SURE_MARGIN`` of their cut that could turn pass/fail. ``OfflineJudge.judge`` screens the
answer first (``screens``): a list of terms or a copy of the question earns nothing, a leading
denial frame contradicts what its claim states, and an answer nearer another card's question
passes no core point. Instructions to the grader can only cost: the answer earns no more than
its text without them would, and the grade rule caps it.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from grader.base import (
    CREDITED,
    Assessment,
    Judgement,
    MisconceptionJudgement,
    PointJudgement,
    PointVerdict,
)
from grader.offline.evidence import (
    ALL_MISCONCEPTION_FEATURES,
    ALL_POINT_FEATURES,
    EXEMPLAR_FEATURES,
    MAX_ANSWER_CHARS,
    READER_FEATURES,
    Analysis,
    CardIndex,
    Negations,
    analyse,
    by_target,
    card_index,
    exemplar_vectors,
    features,
    negations,
)
from grader.offline.exemplars import Exemplars, card_exemplars
from grader.offline.followup import FollowUpModel, followup_row, probe_exemplars
from grader.offline.reader import SentenceReader, shipped_reader
from grader.offline.screens import (
    OFF_TOPIC_MARGIN,
    denial_frame,
    is_term_list,
    restates_question,
    stem_pairs,
    topic_index,
)
from grader.offline.text import clauses, sentences, word_count
from grader.offline.vectors import load_model
from grader.scoring import grade_from_judgement

if TYPE_CHECKING:
    from cards.schema import Card

MODEL_PATH = Path(__file__).resolve().parents[1] / "offline_model.json"
#: A verdict whose probability is nearer its cut than this is unsure: the smallest margin at
#: which the sure grades of the fitting answers, each read by a model fitted without its card,
#: agree with the labels on pass/fail at least 95% of the time (``offline_eval sure``).
SURE_MARGIN = 0.2


class TreeEnsemble:
    """Gradient-boosted trees exported by ``grader.calibration.train`` as plain numbers (no
    pickle tied to one scikit-learn version), every tree walked at once, a depth per step."""

    def __init__(self, data: dict[str, Any]):
        trees = data["trees"]  # per tree: feature, threshold, left, right, value, leaf, missing_left
        sizes = [len(t["value"]) for t in trees]
        offset = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        flat = {key: np.concatenate([np.asarray(t[key]) for t in trees]) for key in trees[0]}
        self.feature = flat["feature"].astype(np.int64)
        self.threshold = flat["threshold"].astype(np.float64)
        self.left = flat["left"].astype(np.int64) + np.repeat(offset, sizes)
        self.right = flat["right"].astype(np.int64) + np.repeat(offset, sizes)
        self.value = flat["value"].astype(np.float64)
        self.leaf = flat["leaf"].astype(bool)
        self.missing_left = flat["missing_left"].astype(bool)
        self.roots = offset
        self.tree_class = np.asarray(data["tree_class"], dtype=np.int64)
        self.baseline = np.asarray(data["baseline"], dtype=np.float64)
        self.depth = int(data["depth"])

    def logits(self, x: np.ndarray) -> np.ndarray:
        """(rows, classes, or 1 for a binary model): the baseline plus each tree's leaf."""
        node = np.broadcast_to(self.roots, (len(x), len(self.roots))).copy()
        rows = np.arange(len(x))[:, None]
        for _ in range(self.depth):
            value = x[rows, self.feature[node]]
            go_left = (value <= self.threshold[node]) | (np.isnan(value) & self.missing_left[node])
            node = np.where(self.leaf[node], node, np.where(go_left, self.left[node], self.right[node]))
        out = np.tile(self.baseline, (len(x), 1))
        for k in range(len(self.baseline)):
            out[:, k] += self.value[node[:, self.tree_class == k]].sum(axis=1)
        return out


class PointModel:
    """The learnt reading: a classifier per key point and per misconception over the
    ``features`` it names, and its cut-points (present, partial, asserted[, contradicted])."""

    def __init__(self, data: dict[str, Any]):
        self.data = data
        self.cuts = tuple(data["cuts"])
        self.point_columns = [ALL_POINT_FEATURES.index(name) for name in data["point_features"]]
        self.misc_columns = [ALL_MISCONCEPTION_FEATURES.index(name) for name in data["misconception_features"]]
        self.forests = {
            part: TreeEnsemble(data[part]) for part in ("point", "misconception") if data[part].get("kind") == "trees"
        }
        names = {*data["point_features"], *data["misconception_features"]}
        self.uses_exemplars = bool(names & EXEMPLAR_FEATURES)
        self.uses_reader = bool(names & READER_FEATURES)

    @classmethod
    def load(cls, path: Path | None = None) -> PointModel | None:
        """The model at ``path``, else at ``TRAPBOT_OFFLINE_MODEL``, else the shipped one."""
        path = path or Path(os.environ.get("TRAPBOT_OFFLINE_MODEL") or MODEL_PATH)
        return cls(json.loads(path.read_text(encoding="utf-8"))) if path.exists() else None

    def _proba(self, part: str, x: np.ndarray) -> np.ndarray:
        x = x[:, self.point_columns if part == "point" else self.misc_columns]
        if part in self.forests:
            logits = self.forests[part].logits(x)
        else:  # logistic: standardised, then linear
            w = self.data[part]
            z = (x - np.asarray(w["mean"])) / np.asarray(w["scale"])
            logits = z @ np.asarray(w["coef"]).T + np.asarray(w["intercept"])
        if logits.shape[1] == 1:
            p = 1.0 / (1.0 + np.exp(-logits[:, 0]))
            return np.stack([1 - p, p], axis=1)
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def point_probabilities(self, point_x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per key point P(present), P(present or partial), P(contradicted) (0 without that class)."""
        if not len(point_x):
            return np.zeros(0), np.zeros(0), np.zeros(0)
        p = self._proba("point", point_x)
        classes = self.data["point"]["classes"]
        present = p[:, classes.index(2)]
        contradicted = p[:, classes.index(3)] if 3 in classes else np.zeros(len(p))
        return present, present + p[:, classes.index(1)], contradicted

    def asserted_probabilities(self, misc_x: np.ndarray) -> np.ndarray:
        return self._proba("misconception", misc_x)[:, 1] if len(misc_x) else np.zeros(0)

    @staticmethod
    def verdicts_at(
        present: np.ndarray, partial: np.ndarray, contradicted: np.ndarray, cuts: Sequence[float]
    ) -> list[PointVerdict]:
        """Verdicts at ``cuts``: a credit first, then a contradiction, then a partial credit."""
        cut_contradicted = cuts[3] if len(cuts) > 3 else math.inf
        return [
            PointVerdict.PRESENT
            if a >= cuts[0]
            else PointVerdict.CONTRADICTED
            if c >= cut_contradicted
            else PointVerdict.PARTIAL
            if b >= cuts[1]
            else PointVerdict.ABSENT
            for a, b, c in zip(present, partial, contradicted, strict=True)
        ]

    def verdicts(self, point_x: np.ndarray) -> list[PointVerdict]:
        return self.verdicts_at(*self.point_probabilities(point_x), self.cuts)

    def asserted(self, misc_x: np.ndarray) -> list[bool]:
        return [bool(p >= self.cuts[2]) for p in self.asserted_probabilities(misc_x)]

    def judgement(
        self, card: Card, point_x: np.ndarray, misc_x: np.ndarray, point_quotes: Sequence[str] = (), misc_quotes: Sequence[str] = ()
    ) -> Judgement:
        points = tuple(
            PointJudgement(p.id, v, point_quotes[k] if point_quotes and v is not PointVerdict.ABSENT else "")
            for k, (p, v) in enumerate(zip(card.key_points, self.verdicts(point_x), strict=True))
        )
        misconceptions = tuple(
            MisconceptionJudgement(m.id, a, misc_quotes[i] if misc_quotes and a else "")
            for i, (m, a) in enumerate(zip(card.misconceptions, self.asserted(misc_x), strict=True))
        )
        return Judgement(judge="offline", points=points, misconceptions=misconceptions)


def doubts(
    card: Card, model: PointModel, point_x: np.ndarray, misc_x: np.ndarray, learnt: Judgement,
    judgement: Judgement, sure_margin: float = SURE_MARGIN,
) -> tuple[tuple[str, ...], float]:
    """The ids whose verdict could turn pass/fail around, and the reading's distance (in
    probability) from doing so. A passing reading is as sure as its least sure decisive verdict
    (a core point present, a point not contradicted, a misconception not asserted); a failing
    one is unsure only when every verdict that fails it is. A verdict a negation rule changed
    (``learnt`` is the reading before the rules) is sure."""
    present, _, contradicted = model.point_probabilities(point_x)
    asserted = model.asserted_probabilities(misc_x)
    cut_present, cut_asserted = model.cuts[0], model.cuts[2]
    cut_contradicted = model.cuts[3] if len(model.cuts) > 3 else math.inf

    def distance(p: float, cut: float, overridden: bool) -> float:
        return abs(p - cut) if math.isfinite(cut) and not overridden else math.inf

    core = {p.id for p in card.core_points}
    items: list[tuple[str, float, bool]] = []  # (id, distance, fails the answer as read)
    for k, (first, point) in enumerate(zip(learnt.points, judgement.points, strict=True)):
        changed = first.verdict is not point.verdict
        is_contradicted = point.verdict is PointVerdict.CONTRADICTED
        if point.point_id in core:
            fails = point.verdict is not PointVerdict.PRESENT
            items.append((point.point_id, distance(present[k], cut_present, changed), fails))
        if not (point.point_id in core and is_contradicted):
            items.append((point.point_id, distance(contradicted[k], cut_contradicted, changed), is_contradicted))
    for i, (first, m) in enumerate(zip(learnt.misconceptions, judgement.misconceptions, strict=True)):
        items.append((m.misconception_id, distance(asserted[i], cut_asserted, first.asserted != m.asserted), m.asserted))
    blockers = [(i, d) for i, d, fails in items if fails]
    if blockers:  # failing: every blocker must flip for a pass
        margin = max(d for _, d in blockers)
        chosen = blockers if margin < sure_margin else []
    else:
        margin = min((d for _, d, _ in items), default=math.inf)
        chosen = [(i, d) for i, d, _ in items if d < sure_margin]
    return tuple(dict.fromkeys(i for i, _ in chosen)), float(min(margin, 1.0))


#: Below this P from the sentence reader, a credit whose closest match says the opposite is
#: taken back (``negation_rules``).
READER_DENIAL_CUT = 0.5


def negation_rules(judgement: Judgement, point_x: np.ndarray, found: Negations) -> Judgement:
    """The learnt reading corrected where an answer says a point or a misconception negated,
    unless it also says it outright: a partial credit whose closest match says the opposite,
    and a credit that an accepted phrasing under a negation, or an opposite-sign match no
    sentence states otherwise, contradicts, are no credit ("the KL term does NOT keep the policy
    close"); a misconception said only negated, or whose nearest sentence has the other
    polarity, is not asserted ("a climbing reward does not mean the model is better").
    Fitted rows gain nothing from them; answers that negate the key in its own words
    (``negations.jsonl``) do (docs/offline-judge-history.md)."""
    opposed, support, reader = (
        point_x[:, ALL_POINT_FEATURES.index(name)] for name in ("nearest_opposed", "support_any", "reader_point")
    )
    points = tuple(
        PointJudgement(p.point_id, PointVerdict.ABSENT, "")
        if not found.point_said[k]
        and (
            (p.verdict is PointVerdict.PARTIAL and opposed[k])
            or (p.verdict in CREDITED and (found.point_denied[k] or (opposed[k] and (support[k] < 0 or reader[k] < READER_DENIAL_CUT))))
        )
        else p
        for k, p in enumerate(judgement.points)
    )
    misconceptions = tuple(
        MisconceptionJudgement(m.misconception_id, False)
        if m.asserted and not found.misc_said[i] and (found.misc_denied[i] or found.misc_negated[i])
        else m
        for i, m in enumerate(judgement.misconceptions)
    )
    return replace(judgement, points=points, misconceptions=misconceptions)


def _quote(analysis: Analysis, sims: np.ndarray, mask: np.ndarray) -> str:
    """The most similar unit of three words or more that ``mask`` allows; "" when none."""
    allowed = mask & np.asarray([word_count(u.span.text) >= 3 for u in analysis.units], dtype=bool)
    return analysis.units[int(np.where(allowed, sims, -2.0).argmax())].span.text if allowed.any() else ""


_CREDIT_ORDER = {PointVerdict.CONTRADICTED: 0, PointVerdict.ABSENT: 1, PointVerdict.PARTIAL: 2, PointVerdict.PRESENT: 3}


def weaker_of(a: Judgement, b: Judgement) -> Judgement:
    """Per point the lesser credit of two readings, every misconception either asserts: the
    grade rule is monotone in both, so this grades no higher than either."""
    return replace(
        a,
        points=tuple(
            pa if _CREDIT_ORDER[pa.verdict] <= _CREDIT_ORDER[pb.verdict] else pb
            for pa, pb in zip(a.points, b.points, strict=True)
        ),
        misconceptions=tuple(
            ma if ma.asserted or not mb.asserted else mb for ma, mb in zip(a.misconceptions, b.misconceptions, strict=True)
        ),
        injection_suspected=a.injection_suspected or b.injection_suspected,
        unsure_points=tuple(dict.fromkeys(a.unsure_points + b.unsure_points)),
    )


LISTS_TERMS = "The answer is a list of terms; a list states no mechanism, so it earns nothing."
COPIES_QUESTION = "The answer repeats the question; say what happens and why."
OFF_TOPIC = "This reads like an answer to another question, so no core point is credited in full."


def nothing_stated(card: Card, reason: str) -> Judgement:
    return Judgement(
        judge="offline",
        points=tuple(PointJudgement(p.id, PointVerdict.ABSENT) for p in card.key_points),
        misconceptions=tuple(MisconceptionJudgement(m.id, False) for m in card.misconceptions),
        feedback=reason,
    )


def off_topic(card: Card, judgement: Judgement) -> Judgement:
    """``judgement`` with its core points present at most in part: it cannot pass."""
    core = {p.id for p in card.core_points}
    points = tuple(
        replace(p, verdict=PointVerdict.PARTIAL) if p.point_id in core and p.verdict is PointVerdict.PRESENT else p
        for p in judgement.points
    )
    judgement = replace(judgement, points=points)
    return replace(judgement, feedback=f"{OFF_TOPIC} {feedback_for(card, judgement)}")


def feedback_for(card: Card, judgement: Judgement) -> str:
    """Two or three sentences for the learner, built from the verdicts."""
    said: list[str] = []
    if judgement.injection_suspected:
        said.append("Your answer contains instructions to the grader; they were ignored and the grade is capped at 1.")
    asserted = {m.misconception_id for m in judgement.misconceptions if m.asserted}
    trap = next((m for m in card.misconceptions if m.id in asserted), None)
    if trap is not None:
        said.append(f"It repeats the trap: {trap.text.rstrip('.')}.")
    verdict = judgement.verdict_for
    missing = [p for p in card.key_points if verdict(p.id) in (PointVerdict.ABSENT, PointVerdict.CONTRADICTED)]
    vague = [p for p in card.key_points if verdict(p.id) is PointVerdict.PARTIAL]
    core_missing = [p for p in missing if p.core]
    if core_missing:
        said.append(f"The core point I could not find: {_short(core_missing[0].text)}")
    elif missing:
        said.append(f"To make it complete, add: {_short(missing[0].text)}")
    elif vague:
        said.append(f"Every key point is touched; say this one more precisely: {_short(vague[0].text)}")
    else:
        said.append("Every key point of the mechanism is there.")
    return " ".join(said[:3])


def _short(text: str) -> str:
    first = sentences(text)[0].text if sentences(text) else text
    return re.split(r";\s", first)[0].strip().rstrip(".") + "."


class OfflineJudge:
    """Grades on this machine. Interactive grading proposes verdicts the learner confirms."""

    name = "offline"

    def __init__(self, model: PointModel | None | str = "default", followup_model: FollowUpModel | None | str = "default"):
        # "default": the shipped learnt readings; None: no model (features only, for fitting).
        self.model = PointModel.load() if model == "default" else model
        self.followup_model = FollowUpModel.load() if followup_model == "default" else followup_model

    async def warm(self, cards: Iterable[Card] = ()) -> None:
        """Load the sentence model (and index ``cards``, embed their exemplars) in a thread."""
        cards = list(cards)

        def work() -> None:
            load_model()
            self.reader()
            for card in cards:
                self.index(card)
                if self.model is not None and self.model.uses_exemplars:
                    self.exemplars(card)
                if self.followup_model is not None:
                    probe_exemplars(card.id)

        await asyncio.to_thread(work)

    def index(self, card: Card) -> CardIndex:
        return card_index(card)

    def reader(self) -> SentenceReader | None:
        """The shipped sentence reader when the model reads it; missing, a broken install."""
        if self.model is None or not self.model.uses_reader:
            return None
        reader = shipped_reader()
        if reader is None:
            raise FileNotFoundError("the offline model reads the sentence reader, and it is not installed")
        return reader

    def exemplars(self, card: Card) -> Exemplars:
        """The card's labelled answers, embedded once per card version."""
        index = self.index(card)
        return card_exemplars(card, index.version, lambda text: exemplar_vectors(card, index, text))

    def analyse(self, card: Card, answer: str) -> Analysis:
        return analyse(card, self.index(card), answer)

    def features(self, card: Card, analysis: Analysis) -> tuple[np.ndarray, np.ndarray]:
        exemplars = self.exemplars(card) if self.model is not None and self.model.uses_exemplars else None
        return features(card, self.index(card), analysis, exemplars, self.reader())

    def judge(self, card: Card, answer: str, *, screens: bool = True) -> Judgement:
        """The verdicts for ``answer`` (blocking: embeds on the calling thread). ``screens``:
        first screen a whole answer (see the module docstring); a piece of an answer (a quote
        the LLM judge's cross-check reads) is read as it is."""
        answer = answer[:MAX_ANSWER_CHARS]
        if not screens:
            return self._read_cleanly(card, answer, piece=True)
        if is_term_list(answer):
            return nothing_stated(card, LISTS_TERMS)
        question = stem_pairs(card.question)
        if restates_question(answer, question):
            return nothing_stated(card, COPIES_QUESTION)
        found = sentences(answer)
        kept = [s for s in found if not restates_question(s.text, question)]
        text = answer if len(kept) == len(found) else " ".join(s.text for s in kept)
        if not text.strip():
            return nothing_stated(card, COPIES_QUESTION)
        judgement = self._read_cleanly(card, text)
        frame = denial_frame(text)
        if frame:
            judgement = self._denied(card, text, frame, judgement)
        if topic_index(card).margin(card.id, text) < OFF_TOPIC_MARGIN:
            judgement = off_topic(card, judgement)
        return judgement

    def _denied(self, card: Card, text: str, frame: int, judgement: Judgement) -> Judgement:
        """Every point the denied claim (the clause after "It is not true that") states, read
        alone, marked contradicted."""
        first = sentences(text[frame:])
        if not first:
            return judgement
        claim = clauses(text[frame:], first[0])[0].text
        stated = {p.point_id for p in self._read_cleanly(card, claim).points if p.verdict in CREDITED}
        if not stated:
            return judgement
        points = tuple(
            PointJudgement(p.point_id, PointVerdict.CONTRADICTED, claim) if p.point_id in stated else p
            for p in judgement.points
        )
        judgement = replace(judgement, points=points)
        return replace(judgement, feedback=feedback_for(card, judgement))

    def _read_cleanly(self, card: Card, answer: str, *, piece: bool = False) -> Judgement:
        """``read``, and for an answer that instructs the grader, no more than its text without
        the instructions earns."""
        analysis = self.analyse(card, answer)
        judgement = self.read(card, analysis, piece=piece)
        if judgement.injection_suspected:
            kept = analysis.without_instructions()
            if kept and kept != analysis.answer:
                judgement = weaker_of(judgement, self.read(card, self.analyse(card, kept), piece=piece))
                judgement = replace(judgement, feedback=feedback_for(card, judgement))
        return judgement

    def read(self, card: Card, analysis: Analysis, *, piece: bool = False) -> Judgement:
        """The learnt reading of one analysed text: verdicts, quotes, doubts. A ``piece`` of an
        answer proves only the points some sentence of it is nearest to (the learnt reading
        knows whole answers, whose neighbours credit their other points too)."""
        if self.model is None:
            raise FileNotFoundError("the offline judge's model (grader/offline_model.json) is not installed")
        index = self.index(card)
        point_x, misc_x = self.features(card, analysis)
        support = by_target(analysis.point_sims, index.points, len(card.key_points), analysis.point_same)
        misc = by_target(analysis.misc_sims, index.misconceptions, len(card.misconceptions), analysis.misc_same)
        learnt = self.model.judgement(
            card,
            point_x,
            misc_x,
            [_quote(analysis, support[:, k], analysis.listed) for k in range(len(card.key_points))],
            [_quote(analysis, misc[:, m], analysis.stated) for m in range(len(card.misconceptions))],
        )
        judgement = negation_rules(learnt, point_x, negations(card, index, analysis))
        if piece:
            focused = point_x[:, ALL_POINT_FEATURES.index("support_focused")]
            points = tuple(
                PointJudgement(p.point_id, PointVerdict.ABSENT) if focused[k] < 0 and p.verdict in CREDITED else p
                for k, p in enumerate(judgement.points)
            )
            judgement = replace(judgement, points=points)
        instructs = analysis.instructs
        unsure, margin = doubts(card, self.model, point_x, misc_x, learnt, judgement)
        judgement = replace(
            judgement,
            injection_suspected=instructs,
            unsure_points=() if instructs else unsure,
            margin=None if instructs else margin,
        )
        return replace(judgement, feedback=feedback_for(card, judgement))

    async def judge_async(self, card: Card, answer: str) -> Judgement:
        return await asyncio.to_thread(self.judge, card, answer)

    async def assess(self, card: Card, answer: str, *, interactive: bool) -> Assessment:
        judgement = await self.judge_async(card, answer)
        return Assessment(
            grader=self.name,
            grade=grade_from_judgement(card, judgement, answer),
            needs_confirmation=interactive,
            sure=not judgement.unsure_points,
            unsure_points=judgement.unsure_points,
        )

    def judge_followup(self, card: Card, answer: str, point_id: str | None = None) -> Judgement:
        """An answer to one key point's probe (``card`` carries the probe as its question): the
        learnt reading of the text, with that point decided by the follow-up reading."""
        answer = answer[:MAX_ANSWER_CHARS]
        analysis = self.analyse(card, answer)
        judgement = self.read(card, analysis)
        if self.followup_model is None or point_id is None:
            return judgement
        row = followup_row(*self.features(card, analysis), card, point_id, answer)
        return self.followup_model.judgement(judgement, point_id, row, " ".join(answer.split()))

    async def assess_followup(self, card: Card, answer: str, point_id: str | None = None) -> Assessment:
        """``judge_followup``, graded (the engine reads only the probed point's verdict)."""
        judgement = await asyncio.to_thread(self.judge_followup, card, answer, point_id)
        return Assessment(grader=self.name, grade=grade_from_judgement(card, judgement, answer), needs_confirmation=False)
