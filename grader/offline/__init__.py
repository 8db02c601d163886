"""The offline judge (placeholder, filled below)."""

from grader.offline.judge import OfflineJudge

__all__ = ["OfflineJudge"]
