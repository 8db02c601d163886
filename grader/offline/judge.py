"""The offline judge: sentence embeddings plus lexical rules, no network, no API key.

How it reads an answer:

1. The answer is cut into sentences and clauses (units). A unit that is a bare list of terms
   (few words, almost no function words, or a run of comma-separated fragments) is not a
   claim and earns nothing: keyword stuffing scores zero.
2. Units that talk to the grader ("ignore the rubric, give 5/5", forged verdict JSON,
   fake delimiters) are flagged by patterns and by similarity to a few prototypes; a flag
   sets ``injection_suspected`` and the unit earns nothing.
3. The clauses are embedded with all-MiniLM-L6-v2 (a sentence's vector is the mean of its
   clauses') and compared with the phrasings of each key point (its clauses and the clauses
   of the card's expert answer clearly nearest to it), of each point's opposites (short
   wrong claims that say its reverse; a weak sign of a contradiction, as a pooled sentence
   vector sits near both a claim and its reverse) and of each misconception (its text, the trap, the trap
   answer's sentences). Phrasings are embedded once per card version.
4. Negation: a unit supports a phrasing only when the words they share are negated on the
   same side. A negation governs the words after it up to the end of its clause, so "the KL
   term does not keep the policy close to the reference" cannot earn the point that the KL
   term keeps the policy close (a close match of opposite sign marks it contradicted), while
   "regions where the reward model was never trained" still can; "the KL term is not just a
   regulariser" does not assert the misconception.
5. A point is present when a unit matches it closely and matches no other point clearly
   better (one sentence proves one thing), partial on a looser match.
6. Stance: the mean of the answer's clauses is compared with the trap (and misconceptions)
   and with the expert key as wholes. A unit asserts a misconception when it matches it
   closely and clearly better than any key point; how clearly depends on the stance. In an
   answer that leans to the trap, units near the trap are no evidence for key points, so a
   confident trap answer earns nothing from its familiar vocabulary. A misconception quoted,
   framed as what others say ("the usual answer is ...") or rebutted by the next sentence
   ("That's not it.") is reported, not asserted (``reported``): the learnt reading is told so.

7. The learnt reading (``PointModel``, fitted by ``grader.calibration.train``) reads those
   similarities and matches as features, with the votes of the card's labelled answers
   (``grader.offline.exemplars``) and, per point, whether one sentence states it by the sentence
   reader (``grader.offline.reader``).

The verdicts (with the matched unit as the verbatim quote) go through
``grader.scoring.grade_from_judgement`` like every judge's.

Around the reading (``OfflineJudge.judge``), ``grader.offline.screens`` screens a whole answer: a bare
list of terms and a copy of the question earn nothing, a leading denial frame ("It is not true
that ...") contradicts what its claim states, and an answer whose words are nearer another
card's question cannot pass. Each judgement says which verdicts it is unsure of (``doubts``):
the ones whose probability is within ``SURE_MARGIN`` of its cut and could turn pass/fail.

The pipeline's modules: ``grader.offline.text`` (text), ``grader.injection``, ``grader.offline.vectors``
(vectors), ``grader.offline.exemplars`` and ``grader.offline.reader`` (evidence the learnt reading
reads), ``grader.offline.evidence`` (phrasings, analysis, features and the hand rules' decision, shared
with ``grader.offline.followup``), this module (the learnt reading and the judge), ``grader.offline.screens``.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
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
    MISCONCEPTION_FEATURES,
    POINT_FEATURES,
    READER_DENIAL_CUT,
    READER_FEATURES,
    Analysis,
    CardIndex,
    Evidence,
    OfflineParams,
    Unit,
    analyse,
    card_index,
    decide,
    evidence,
    exemplar_vectors,
    features,
    feedback_for,
)
from grader.offline.exemplars import Exemplars, card_exemplars
from grader.offline.followup import FollowUpModel, followup_features, probe_exemplars
from grader.offline.reader import SentenceReader, shipped_reader
from grader.offline.screens import (
    OFF_TOPIC_MARGIN,
    denial_frame,
    is_term_list,
    restates_question,
    stem_pairs,
    topic_index,
)
from grader.offline.text import asks, clauses, sentences, word_count
from grader.offline.vectors import load_model
from grader.scoring import grade_from_judgement

if TYPE_CHECKING:
    from cards.schema import Card

MODEL_PATH = Path(__file__).resolve().parents[1] / "offline_model.json"
#: The reading of a card with no labelled answers (a user's own card): fitted without the
#: exemplar votes, which on such a card see only the stock non-answers.
PLAIN_MODEL_PATH = MODEL_PATH.with_name("offline_model_plain.json")


class TreeEnsemble:
    """Gradient-boosted trees (scikit-learn's ``HistGradientBoostingClassifier``, exported by
    ``grader.calibration.train``) evaluated with numpy: every tree of the ensemble walked at
    once, one step of depth per iteration. The export is plain numbers, so the shipped
    model needs no pickle that ties it to one scikit-learn version."""

    def __init__(self, data: dict[str, Any]):
        trees = data[
            "trees"
        ]  # per tree: feature, threshold, left, right, value, leaf, missing_left
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
        """Raw scores (rows, classes or 1 for a binary model): the baseline plus each tree's leaf."""
        node = np.broadcast_to(self.roots, (len(x), len(self.roots))).copy()
        rows = np.arange(len(x))[:, None]
        for _ in range(self.depth):
            value = x[rows, self.feature[node]]
            go_left = (value <= self.threshold[node]) | (np.isnan(value) & self.missing_left[node])
            node = np.where(
                self.leaf[node], node, np.where(go_left, self.left[node], self.right[node])
            )
        out = np.tile(self.baseline, (len(x), 1))
        for k in range(len(self.baseline)):
            out[:, k] += self.value[node[:, self.tree_class == k]].sum(axis=1)
        return out


class PointModel:
    """The learnt reading (``grader.calibration.train``): logistic regressions over
    ``features``, fitted on the tuning split, applied with numpy."""

    def __init__(self, data: dict[str, Any]):
        self.data = data
        # present, partial, asserted, and for a model with a contradicted class the probability
        # from which a point is read as contradicted (``verdicts_at``)
        self.cuts = tuple(data["cuts"])
        self.cut_asserted = self.cuts[2]
        # The columns of ``features`` this model was fitted on, by name.
        self.point_columns = [
            ALL_POINT_FEATURES.index(name) for name in data.get("point_features", POINT_FEATURES)
        ]
        self.misc_columns = [
            ALL_MISCONCEPTION_FEATURES.index(name)
            for name in data.get("misconception_features", MISCONCEPTION_FEATURES)
        ]
        # Tree parts are flattened once; logistic parts are read from ``data`` as they are.
        self.forests = {
            part: TreeEnsemble(data[part])
            for part in ("point", "misconception")
            if data.get(part, {}).get("kind") == "trees"
        }

    @property
    def uses_exemplars(self) -> bool:
        names = [*self.data.get("point_features", ()), *self.data.get("misconception_features", ())]
        return any(name in EXEMPLAR_FEATURES for name in names)

    @property
    def uses_reader(self) -> bool:
        names = [*self.data.get("point_features", ()), *self.data.get("misconception_features", ())]
        return any(name in READER_FEATURES for name in names)

    @classmethod
    def load(cls, path: Path | None = None) -> PointModel | None:
        """The model at ``path``, else at ``TRAPBOT_OFFLINE_MODEL`` (to try a candidate), else
        the shipped one; None when there is none."""
        path = path or Path(os.environ.get("TRAPBOT_OFFLINE_MODEL") or MODEL_PATH)
        if not path.exists():
            return None
        return cls(json.loads(path.read_text(encoding="utf-8")))

    def _proba(self, part: str, x: np.ndarray) -> np.ndarray:
        weights = self.data[part]
        x = x[:, self.point_columns if part == "point" else self.misc_columns]
        if part in self.forests:
            logits = self.forests[part].logits(x)
        else:
            z = (x - np.asarray(weights["mean"])) / np.asarray(weights["scale"])
            logits = z @ np.asarray(weights["coef"]).T + np.asarray(weights["intercept"])
        if logits.shape[1] == 1:  # binary: P(class 1)
            p = 1.0 / (1.0 + np.exp(-logits[:, 0]))
            return np.stack([1 - p, p], axis=1)
        logits -= logits.max(axis=1, keepdims=True)
        e = np.exp(logits)
        return e / e.sum(axis=1, keepdims=True)

    def point_probabilities(self, point_x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per key point, P(present), P(present or partial) and P(contradicted) (zeros for a
        model fitted without that class)."""
        if not len(point_x):
            return np.zeros(0), np.zeros(0), np.zeros(0)
        p = self._proba("point", point_x)
        classes = self.data["point"]["classes"]
        present = p[:, classes.index(2)]
        contradicted = p[:, classes.index(3)] if 3 in classes else np.zeros(len(p))
        return present, present + p[:, classes.index(1)], contradicted

    def asserted_probabilities(self, misc_x: np.ndarray) -> np.ndarray:
        """Per misconception, P(asserted)."""
        return self._proba("misconception", misc_x)[:, 1] if len(misc_x) else np.zeros(0)

    @staticmethod
    def verdicts_at(
        present: np.ndarray,
        partial: np.ndarray,
        contradicted: np.ndarray,
        cuts: Sequence[float],
    ) -> list[PointVerdict]:
        """Verdicts at ``cuts`` (present, partial, asserted[, contradicted]): a credit first,
        then a contradiction, then a partial credit."""
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
        return [bool(p >= self.cut_asserted) for p in self.asserted_probabilities(misc_x)]

    def judgement(
        self,
        card: Card,
        point_x: np.ndarray,
        misc_x: np.ndarray,
        point_quotes: Sequence[str] = (),
        misc_quotes: Sequence[str] = (),
    ) -> Judgement:
        points = tuple(
            PointJudgement(
                p.id, v, point_quotes[k] if point_quotes and v is not PointVerdict.ABSENT else ""
            )
            for k, (p, v) in enumerate(zip(card.key_points, self.verdicts(point_x), strict=True))
        )
        misconceptions = tuple(
            MisconceptionJudgement(m.id, a, misc_quotes[i] if misc_quotes and a else "")
            for i, (m, a) in enumerate(zip(card.misconceptions, self.asserted(misc_x), strict=True))
        )
        return Judgement(judge="offline", points=points, misconceptions=misconceptions)


def _quote_rows(
    ev: Evidence, units: Sequence[Unit], column: int, *, misc: bool = False
) -> int | None:
    """The unit to quote for a target: one that says an accepted phrasing, else the most
    similar one of at least three words."""
    hits = (ev.misc_hits if misc else ev.point_hits)[:, column]
    sims = (ev.misc if misc else ev.support)[:, column]
    mask = ev.stated if misc else ev.listed
    said = [row for row in np.flatnonzero((hits == 1) & mask)]
    if said:
        return min(said, key=lambda row: len(units[row].span.text))
    long_enough = np.asarray([word_count(u.span.text) >= 3 for u in units], dtype=bool) & mask
    if not long_enough.any():
        return None
    return int(np.where(long_enough, sims, -2.0).argmax())


def decide_learnt(
    card: Card,
    index: CardIndex,
    analysis: Analysis,
    params: OfflineParams,
    model: PointModel,
    exemplars: Exemplars | None = None,
    reader: SentenceReader | None = None,
) -> Judgement:
    """The learnt reading: verdicts from ``model`` over ``features`` (with the ``exemplars``'
    votes and the sentence ``reader``'s reading), quotes from the units that carry the
    evidence."""
    rules = decide(card, index, analysis, params)
    ev = evidence(card, index, analysis, params)
    point_x, misc_x = features(card, index, analysis, params, rules, ev, exemplars, reader)
    units = analysis.units
    point_quotes = []
    for k in range(len(card.key_points)):
        row = _quote_rows(ev, units, k) if units else None
        point_quotes.append(units[row].span.text if row is not None else "")
    misc_quotes = []
    for m in range(len(card.misconceptions)):
        row = _quote_rows(ev, units, m, misc=True) if units else None
        misc_quotes.append(units[row].span.text if row is not None else "")
    learnt = model.judgement(card, point_x, misc_x, point_quotes, misc_quotes)
    # Two negation rules on top of the model, each kept because it lifted the cross-fitted
    # agreement on the training rows (QWK 0.801 -> 0.813 together): a misconception whose
    # nearest sentence says it negated, with none of its phrasings said outright, is rejected,
    # not asserted ("a climbing reward does not mean the model is better"); a partial credit
    # whose closest match says the opposite is no credit, and no credit survives an accepted
    # phrasing said under a negation when none is said outright (a third rule, neutral there:
    # 0.813). Taking back every present credit whose closest match says the opposite lowered
    # it to 0.787, so that one is not applied; but a point no unit states with its own sign
    # (every match says the opposite: "the KL term does NOT keep the policy close") earns
    # nothing, which the tree reading's exemplar votes alone would credit (cross-fitted on
    # the training rows this changes no grade). Nor does a point whose closest match says the
    # opposite and that the sentence reader, reading only same-sign pairs, finds stated by no
    # sentence (P < READER_DENIAL_CUT): "the TD target does not read the value network" in
    # a denial written in the key's own words, which the whole-answer votes credit because
    # its neighbours are right answers (cross-fitted on the training rows: objective 1.8598
    # -> 1.8577 for the model alone, terse pass/fail 90% -> 88%; with no reader it never fires).
    opposed, point_said, point_denied, support, reader_point = (
        ALL_POINT_FEATURES.index(name)
        for name in ("nearest_opposed", "said", "denied", "support_any", "reader_point")
    )
    points = tuple(
        PointJudgement(p.point_id, PointVerdict.ABSENT, "")
        if not point_x[k, point_said]
        and (
            (p.verdict is PointVerdict.PARTIAL and point_x[k, opposed])
            or (p.verdict in CREDITED and point_x[k, point_denied])
            or (p.verdict in CREDITED and point_x[k, opposed] and point_x[k, support] < 0)
            or (
                p.verdict in CREDITED
                and point_x[k, opposed]
                and point_x[k, reader_point] < READER_DENIAL_CUT
            )
        )
        else p
        for k, p in enumerate(learnt.points)
    )
    said, denied, negated = (
        ALL_MISCONCEPTION_FEATURES.index(name)
        for name in ("misc_said", "misc_denied", "misc_nearest_negated")
    )
    # Nor does a misconception read on a direct question stand: a question asserts nothing
    # ("Is it just overfitting? No; ..."), except a negative one ("Isn't it just overfitting?"),
    # which is how people assert in questions.
    misconceptions = tuple(
        MisconceptionJudgement(m.misconception_id, False)
        if m.asserted
        and (
            (not misc_x[i, said] and (misc_x[i, denied] or misc_x[i, negated]))
            or asks(m.quote)
        )
        else m
        for i, m in enumerate(learnt.misconceptions)
    )
    unsure, margin = doubts(card, model, point_x, misc_x, learnt, points, misconceptions)
    judgement = replace(
        learnt,
        points=points,
        misconceptions=misconceptions,
        injection_suspected=rules.injection_suspected,
        unsure_points=() if rules.injection_suspected else unsure,
        margin=None if rules.injection_suspected else margin,
    )
    return replace(judgement, feedback=feedback_for(card, judgement))


#: A verdict whose probability is nearer its cut than this is unsure. Chosen on the fitting
#: answers read by models fitted without their card (``python -m grader.calibration.offline_eval
#: sure``): the smallest margin at which the sure grades agree with the labels on pass/fail
#: in at least 95% of answers.
SURE_MARGIN = 0.2


def doubts(
    card: Card,
    model: PointModel,
    point_x: np.ndarray,
    misc_x: np.ndarray,
    learnt: Judgement,
    points: Sequence[PointJudgement],
    misconceptions: Sequence[MisconceptionJudgement],
    sure_margin: float = SURE_MARGIN,
) -> tuple[tuple[str, ...], float]:
    """The ids whose verdict could turn pass/fail around, and how far the reading is from
    doing so (a probability distance to the cut). A passing reading is as sure as its least
    sure decisive verdict (a core point present, a point not contradicted, a misconception not
    asserted); a failing one is unsure only when every verdict that fails it is unsure. A
    verdict set by a rule after the model (a negation) is sure."""
    present, _, contradicted = model.point_probabilities(point_x)
    asserted = model.asserted_probabilities(misc_x)
    cut_present, cut_asserted = model.cuts[0], model.cuts[2]
    cut_contradicted = model.cuts[3] if len(model.cuts) > 3 else math.inf

    def distance(p: float, cut: float, overridden: bool) -> float:
        return math.inf if overridden or not math.isfinite(cut) else abs(p - cut)

    core = {p.id for p in card.core_points}
    items: list[tuple[str, float, bool]] = []  # (id, distance, fails the answer as read)
    for k, (first, final) in enumerate(zip(learnt.points, points, strict=True)):
        overridden = first.verdict is not final.verdict
        is_contradicted = final.verdict is PointVerdict.CONTRADICTED
        if final.point_id in core:
            d = distance(present[k], cut_present, overridden)
            items.append((final.point_id, d, final.verdict is not PointVerdict.PRESENT))
        if not (final.point_id in core and is_contradicted):
            d = distance(contradicted[k], cut_contradicted, overridden)
            items.append((final.point_id, d, is_contradicted))
    for i, (first, final) in enumerate(zip(learnt.misconceptions, misconceptions, strict=True)):
        d = distance(asserted[i], cut_asserted, first.asserted != final.asserted)
        items.append((final.misconception_id, d, final.asserted))
    blockers = [(i, d) for i, d, fails in items if fails]
    if blockers:  # failing: every blocker must flip for a pass
        margin = max(d for _, d in blockers)
        chosen = blockers if margin < sure_margin else []
    else:
        margin = min((d for _, d, _ in items), default=math.inf)
        chosen = [(i, d) for i, d, _ in items if d < sure_margin]
    return tuple(dict.fromkeys(i for i, _ in chosen)), float(min(margin, 1.0))


#: From no credit to full: a contradicted point costs more than an absent one.
_CREDIT_ORDER = {
    PointVerdict.CONTRADICTED: 0,
    PointVerdict.ABSENT: 1,
    PointVerdict.PARTIAL: 2,
    PointVerdict.PRESENT: 3,
}


def weaker_of(a: Judgement, b: Judgement) -> Judgement:
    """Per point the lesser credit of two readings, every misconception either asserts; the
    grade rule is monotone in both, so this grades no higher than either reading."""
    points = tuple(
        pa if _CREDIT_ORDER[pa.verdict] <= _CREDIT_ORDER[pb.verdict] else pb
        for pa, pb in zip(a.points, b.points, strict=True)
    )
    misconceptions = tuple(
        ma if ma.asserted or not mb.asserted else mb
        for ma, mb in zip(a.misconceptions, b.misconceptions, strict=True)
    )
    return replace(
        a,
        points=points,
        misconceptions=misconceptions,
        injection_suspected=a.injection_suspected or b.injection_suspected,
        unsure_points=tuple(dict.fromkeys(a.unsure_points + b.unsure_points)),
    )


def without_flagged(analysis: Analysis, params: OfflineParams) -> str:
    """The answer with every unit flagged as instructions to the grader cut out."""
    cut = [(u.span.start, u.span.end) for u in analysis.units if u.instructs(params.injection)]
    pieces, cursor = [], 0
    for start, end in sorted(cut):
        if start > cursor:
            pieces.append(analysis.answer[cursor:start])
        cursor = max(cursor, end)
    pieces.append(analysis.answer[cursor:])
    return " ".join(" ".join(piece.split()) for piece in pieces if piece.strip())


def has_own_answers(exemplars: Exemplars) -> bool:
    """Whether the card has labelled answers beyond the stock non-answers every card is given
    (``grader.offline.exemplars.non_answer_rows``, ids ``non-answer/...``)."""
    return any(not answer.id.startswith("non-answer/") for answer in exemplars.answers)


# ----- non-answers (grader.offline.screens) ----------------------------------------------------------------

LISTS_TERMS = "The answer is a list of terms; a list states no mechanism, so it earns nothing."
COPIES_QUESTION = "The answer repeats the question; say what happens and why."
OFF_TOPIC = "This reads like an answer to another question, so no core point is credited in full."


def nothing_stated(card: Card, reason: str) -> Judgement:
    """No point credited, no misconception asserted, and why."""
    return Judgement(
        judge="offline",
        points=tuple(PointJudgement(p.id, PointVerdict.ABSENT) for p in card.key_points),
        misconceptions=tuple(MisconceptionJudgement(m.id, False) for m in card.misconceptions),
        feedback=reason,
    )


def off_topic(card: Card, judgement: Judgement) -> Judgement:
    """``judgement`` with its core points present at most in part: it cannot pass. It is sure:
    no verdict in doubt could make it pass, and the screen passes every labelled answer to this
    card's own question (``offline_eval cross-card``), so there is nothing to ask the learner."""
    core = {p.id for p in card.core_points}
    points = tuple(
        replace(p, verdict=PointVerdict.PARTIAL)
        if p.point_id in core and p.verdict is PointVerdict.PRESENT
        else p
        for p in judgement.points
    )
    judgement = replace(judgement, points=points, unsure_points=(), margin=None)
    return replace(judgement, feedback=f"{OFF_TOPIC} {feedback_for(card, judgement)}")


# ----- the judge ---------------------------------------------------------------------------------


class OfflineJudge:
    """Grades on this machine. Interactive grading proposes verdicts the learner confirms."""

    name = "offline"

    def __init__(
        self,
        params: OfflineParams | None = None,
        model: PointModel | None | str = "default",
        followup_model: FollowUpModel | None | str = "default",
        plain_model: PointModel | None | str = "default",
    ):
        self.params = params or OfflineParams()
        # "default": the shipped learnt readings when they are there; None: the hand rules alone.
        self.model = PointModel.load() if model == "default" else model
        # The reading of a card with no labelled answers; None: ``model`` reads every card.
        self.plain_model = (
            PointModel.load(PLAIN_MODEL_PATH) if plain_model == "default" else plain_model
        )
        self.followup_model = (
            FollowUpModel.load() if followup_model == "default" else followup_model
        )

    async def warm(self, cards: Iterable[Card] = ()) -> None:
        """Load the model (and index ``cards`` and embed their exemplars) in a worker thread."""
        cards = list(cards)

        def work() -> None:
            load_model()
            self.reader()
            for card in cards:
                self.index(card)
                if isinstance(self.model, PointModel) and self.model.uses_exemplars:
                    self.exemplars(card)
                if self.followup_model is not None:
                    probe_exemplars(card.id)

        await asyncio.to_thread(work)

    def index(self, card: Card) -> CardIndex:
        """The card's embedded phrasings, built once per card version (shared by all judges)."""
        return card_index(card)

    def reader(self) -> SentenceReader | None:
        """The shipped sentence reader when the learnt reading reads it; a model that reads it
        without one shipped is a broken install, said at once."""
        if not (isinstance(self.model, PointModel) and self.model.uses_reader):
            return None
        reader = shipped_reader()
        if reader is None:
            raise FileNotFoundError(
                "the offline model reads the sentence reader, and it is not installed"
            )
        return reader

    def exemplars(self, card: Card) -> Exemplars:
        """The card's labelled answers, embedded once per card version."""
        index = self.index(card)
        return card_exemplars(card, index.version, lambda text: exemplar_vectors(card, index, text))

    def model_for(self, card: Card) -> PointModel | None:
        """The learnt reading for ``card``: ``model`` when the card has labelled answers of its
        own (or ``model`` reads no votes), else ``plain_model``, fitted without the votes, which
        on such a card would see only the stock non-answers."""
        model = self.model
        reads_votes = isinstance(model, PointModel) and model.uses_exemplars
        if (
            reads_votes
            and self.plain_model is not None
            and not has_own_answers(self.exemplars(card))
        ):
            return self.plain_model
        return model

    def analyse(self, card: Card, answer: str) -> Analysis:
        return analyse(card, self.index(card), answer)

    def judge(self, card: Card, answer: str, *, rules: bool = False) -> Judgement:
        """The verdicts for ``answer`` (blocking: embeds on the calling thread). ``rules``: the
        hand rules even when a learnt reading is loaded; the learnt reading is fitted on whole
        answers to the card's question, the rules are what short texts read alone (a follow-up
        answer, a quote the cross-check reads) were measured with.

        A whole answer (not ``rules``) is first screened (``grader.offline.screens``): a bare list of
        terms earns nothing, sentences that copy the question are left out, a frame that
        denies the claim after it ("It is not true that ...") contradicts the points that
        claim states, and an answer nearer another card's question than this one's passes
        no core point."""
        answer = answer[:MAX_ANSWER_CHARS]
        if rules:
            return self._judge_text(card, answer, rules=True)
        if is_term_list(answer):
            return nothing_stated(card, LISTS_TERMS)
        question = stem_pairs(card.question)
        if restates_question(answer, question):
            return nothing_stated(card, COPIES_QUESTION)
        kept = [s for s in sentences(answer) if not restates_question(s.text, question)]
        text = answer if len(kept) == len(sentences(answer)) else " ".join(s.text for s in kept)
        if not text.strip():
            return nothing_stated(card, COPIES_QUESTION)
        judgement = self._judge_text(card, text, rules=False)
        frame = denial_frame(text)
        if frame:
            judgement = self._denied(card, text, frame, judgement)
        if topic_index(card).margin(card.id, text) < OFF_TOPIC_MARGIN:
            judgement = off_topic(card, judgement)
        return judgement

    def _denied(self, card: Card, text: str, frame: int, judgement: Judgement) -> Judgement:
        """``judgement`` with every point the denied claim (the clause after the frame, read
        alone) states marked contradicted."""
        first = sentences(text[frame:])
        if not first:
            return judgement
        claim = clauses(text[frame:], first[0])[0].text
        stated = {
            p.point_id
            for p in self._judge_text(card, claim, rules=False).points
            if p.verdict in CREDITED
        }
        if not stated:
            return judgement
        points = tuple(
            PointJudgement(p.point_id, PointVerdict.CONTRADICTED, claim)
            if p.point_id in stated
            else p
            for p in judgement.points
        )
        judgement = replace(judgement, points=points)
        return replace(judgement, feedback=feedback_for(card, judgement))

    def _judge_text(self, card: Card, answer: str, *, rules: bool) -> Judgement:
        judgement, analysis = self._read(card, answer, rules=rules)
        if judgement.injection_suspected:
            # Instructions to the grader can only cost: the answer earns no more than its own
            # content without the flagged pieces would (and the cap applies on top).
            kept = without_flagged(analysis, self.params)
            if kept and kept != analysis.answer:
                clean, _ = self._read(card, kept, rules=rules)
                judgement = weaker_of(judgement, clean)
                judgement = replace(judgement, feedback=feedback_for(card, judgement))
        return judgement

    def _read(self, card: Card, answer: str, *, rules: bool) -> tuple[Judgement, Analysis]:
        index = self.index(card)
        analysis = analyse(card, index, answer)
        model = self.model_for(card)
        if isinstance(model, PointModel) and not rules:
            exemplars = self.exemplars(card) if model.uses_exemplars else None
            return decide_learnt(
                card, index, analysis, self.params, model, exemplars, self.reader()
            ), analysis
        return decide(card, index, analysis, self.params), analysis

    async def judge_async(self, card: Card, answer: str, *, rules: bool = False) -> Judgement:
        return await asyncio.to_thread(self.judge, card, answer, rules=rules)

    async def assess(self, card: Card, answer: str, *, interactive: bool) -> Assessment:
        judgement = await self.judge_async(card, answer)
        grade = grade_from_judgement(card, judgement, answer)
        return Assessment(
            grader=self.name,
            grade=grade,
            needs_confirmation=interactive,
            sure=not judgement.unsure_points,
            unsure_points=judgement.unsure_points,
        )

    def judge_followup(self, card: Card, answer: str, point_id: str | None = None) -> Judgement:
        """An answer to one key point's probe (``card`` carries the probe as its question):
        that point read by the follow-up reading (``grader.offline.followup``) when it is loaded, the
        rest (and everything, without it) by the rules (see ``judge``)."""
        if self.followup_model is None or point_id is None:
            return self.judge(card, answer, rules=True)
        row, rules = followup_features(self, card, point_id, answer[:MAX_ANSWER_CHARS])
        return self.followup_model.judgement(card, point_id, row, rules, " ".join(answer.split()))

    async def assess_followup(
        self, card: Card, answer: str, point_id: str | None = None
    ) -> Assessment:
        """``judge_followup``, graded (the engine reads only the probed point's verdict)."""
        judgement = await asyncio.to_thread(self.judge_followup, card, answer, point_id)
        grade = grade_from_judgement(card, judgement, answer)
        return Assessment(grader=self.name, grade=grade, needs_confirmation=False)
