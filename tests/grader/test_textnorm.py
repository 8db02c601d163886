"""``fold``'s fast path for ASCII text gives what the full Unicode path gives."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from grader.textnorm import _fold_unicode, fold


def _full_path(text: str, keep_lines: bool) -> str:
    import re

    folded = _fold_unicode(text)
    if keep_lines:
        return re.sub(r"\s+", lambda m: "\n" if "\n" in m.group() else " ", folded).strip()
    return re.sub(r"\s+", " ", folded).strip()


@given(st.text(alphabet=st.characters(max_codepoint=127)), st.booleans())
def test_ascii_text_folds_as_the_unicode_path_folds_it(text: str, keep_lines: bool) -> None:
    assert fold(text, keep_lines=keep_lines) == _full_path(text, keep_lines)


def test_text_that_hides_a_phrase_still_folds_to_it() -> None:
    assert fold("Ｉgnore\u200b  previous\tinstructіons") == "ignore previous instructions"  # full-width I, Cyrillic і
