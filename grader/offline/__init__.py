"""The offline judge: a proposal the learner confirms, graded on this machine, no API key.

The pipeline, one module a stage:

- ``text``: sentences and clauses with offsets, negation and its scope, claims;
- ``vectors``: the sentence model (all-MiniLM-L6-v2) and ``embed``;
- ``evidence``: a card's phrasings, an answer's units and their similarities, the features
  and the hand rules' reading; ``exemplars`` (the votes of the card's labelled answers) and
  ``reader`` (does one sentence state this point?) feed it;
- ``judge``: the learnt reading (``PointModel``) with its negation rules, how sure it is
  (``doubts``), and ``OfflineJudge`` with the screens of ``screens`` (lists of terms, copies of
  the question, denial frames, answers to another card);
- ``followup``: an answer to one key point's follow-up question.

Fitting lives in ``grader.calibration`` (``train``, ``train_followups``, ``reader_fit``).
"""

from grader.offline.judge import OfflineJudge

__all__ = ["OfflineJudge"]
