"""Every card and every verdict shape through the real formatter: each chunk is valid Telegram
HTML (balanced, only b/i/code, nothing unescaped), within 4,096 UTF-16 units (captions 1,024),
and no visible character is lost between the chunks."""

from __future__ import annotations

import itertools
import re
from html.parser import HTMLParser
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot import texts
from bot.telegram.format import (
    MAX_CAPTION,
    MAX_MESSAGE,
    plot_caption,
    render,
    render_caption,
    styled_chars,
    to_html,
    utf16_length,
)
from cards.deck import DECK_DIR, CardFileError, parse_card
from grader.base import Judgement, MisconceptionJudgement, PointJudgement, PointVerdict

ALLOWED_TAGS = {"b", "i", "code"}


class TagChecker(HTMLParser):
    """Python's own HTML parser, used as an independent check that tags balance."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ALLOWED_TAGS or attrs:
            self.problems.append(f"unexpected tag <{tag}>")
        if "code" in self.stack:
            self.problems.append(f"<{tag}> inside <code>")
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> does not close {self.stack[-1:] or 'anything'}")
        else:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def check_chunk(html: str, limit: int, telegram_parse: Any) -> str:
    """Assert ``html`` is a valid chunk; returns its visible text."""
    checker = TagChecker()
    checker.feed(html)
    checker.close()
    assert checker.problems == [], (checker.problems, html[:200])
    assert checker.stack == [], ("unclosed", checker.stack)
    text, _entities = telegram_parse(html)  # Telegram's rules: raises on anything it would refuse
    assert text == "".join(checker.text).strip()
    assert 0 < utf16_length(text) <= limit
    return text


def check_message(markdown: str, telegram_parse: Any, *, caption: bool = False) -> list[str]:
    if caption:
        head, rest = render_caption(markdown)
        chunks = ([head] if head else []) + rest
        if head:
            check_chunk(head, MAX_CAPTION, telegram_parse)
        for chunk in rest:
            check_chunk(chunk, MAX_MESSAGE, telegram_parse)
    else:
        chunks = render(markdown)
        for chunk in chunks:
            check_chunk(chunk, MAX_MESSAGE, telegram_parse)
    whole, _ = telegram_parse(to_html(styled_chars(markdown)))
    shown = "".join(telegram_parse(chunk)[0] for chunk in chunks)
    assert "".join(shown.split()) == "".join(whole.split()), (
        "characters lost or added between chunks"
    )
    return chunks


def deck_cards() -> list[Any]:
    """Every card in cards/deck that parses (other helpers are still writing some)."""
    cards = []
    for path in sorted(DECK_DIR.glob("*.md")):
        try:
            cards.append(parse_card(path))
        except CardFileError:
            continue
    return cards


def judgements(card: Any) -> list[Judgement | None]:
    ids = [p.id for p in card.key_points]
    verdicts = list(PointVerdict)
    asserted = tuple(MisconceptionJudgement(m.id, True, "quote") for m in card.misconceptions)
    return [
        None,
        Judgement("offline", tuple(PointJudgement(i, PointVerdict.PRESENT, "q") for i in ids)),
        Judgement("offline", tuple(PointJudgement(i, PointVerdict.ABSENT) for i in ids), asserted),
        Judgement(
            "llm:gpt-4o-mini",
            tuple(PointJudgement(i, verdicts[n % 4], "q") for n, i in enumerate(ids)),
            asserted[:1],
            injection_suspected=True,
            feedback="You named the proxy but not **why** the KL term matters; see `beta` & <the> $\\beta$ term. "
            * 6,
        ),
    ]


def card_messages(card: Any) -> list[str]:
    messages = [
        texts.question_text(card, repeat=False, due_label=""),
        texts.question_text(card, repeat=True, due_label="3 more due today."),
        texts.key_text(card),
        texts.self_grade_prompt(card),
        texts.explanation_text(card),
    ]
    caps_options = [
        (),
        ("a core point of the mechanism is missing", "the answer asserts a misconception"),
    ]
    # The quality only changes words in the first line; 0, 2 and 5 cover fail, capped and pass.
    for judgement, quality, caps in itertools.product(judgements(card), (0, 2, 5), caps_options):
        messages.append(
            texts.verdict_text(
                card,
                quality,
                judgement,
                caps,
                "next review in 6 days (Sun 08 Mar)",
                "offline + you",
            )
        )
        if judgement is not None:
            messages.append(texts.assisted_prompt(card, judgement, quality))
    return messages


CARDS = deck_cards()


@pytest.mark.skipif(not CARDS, reason="no card in cards/deck parses yet")
@pytest.mark.parametrize("card", CARDS, ids=[c.id for c in CARDS])
def test_every_card_and_verdict_shape_renders_within_limits(
    card: Any, fake_api_module: Any
) -> None:
    for markdown in card_messages(card):
        chunks = check_message(markdown, fake_api_module.parse_html)
        assert chunks
    question = render(texts.question_text(card, repeat=False, due_label=""))
    assert card.id in fake_api_module.parse_html(question[0])[0]  # replies to it name the card


def test_plot_captions_fit(fake_api_module: Any) -> None:
    try:
        from sims.registry import caption, sim_ids, title
    except ImportError:
        pytest.skip("sims.registry is not there")
    for sim_id in sim_ids():
        check_message(
            plot_caption(title(sim_id), caption(sim_id)), fake_api_module.parse_html, caption=True
        )
    check_message(plot_caption("A title", "word " * 600), fake_api_module.parse_html, caption=True)


def test_fixed_texts(fake_api_module: Any) -> None:
    for markdown in (texts.WELCOME, texts.HELP):
        check_message(markdown, fake_api_module.parse_html)


def test_markdown_subset() -> None:
    [html] = render(
        "**Grade 3/5**: `rl-08` _it_ *KL Divergence* a<b & c>d $\\pi_{ref}$ x_y_z **`code` in bold**"
    )
    assert html == (
        "<b>Grade 3/5</b>: <code>rl-08</code> <i>it</i> <i>KL Divergence</i> a&lt;b &amp; c&gt;d "
        "π_ref x_y_z <code>code</code><b> in bold</b>"
    )
    assert render("- one\n- **two**") == ["• one\n• <b>two</b>"]
    assert render("costs $5 and $10 today") == ["costs $5 and $10 today"]
    # A stray marker cannot bold the next paragraph.
    assert render("a ** b\n\n**c**") == ["a ** b\n\n<b>c</b>"]


def test_nested_lists_keep_their_levels() -> None:
    assert render("- one\n  - inner **bold**\n    - deepest\n- two\n\n1. first\n2. second") == [
        "• one\n  • inner <b>bold</b>\n    • deepest\n• two\n\n1. first\n2. second"
    ]


def test_code_spans_escape_angle_brackets(fake_api_module: Any) -> None:
    [html] = render("keep `if a<b and c>d: x &= 1` as typed")
    assert html == "keep <code>if a&lt;b and c&gt;d: x &amp;= 1</code> as typed"
    assert fake_api_module.parse_html(html)[0] == "keep if a<b and c>d: x &= 1 as typed"


def test_links_show_their_address() -> None:
    [html] = render("See [Gao et al.](https://arxiv.org/abs/2210.10760) and <https://x.org>.")
    assert html == "See Gao et al. (https://arxiv.org/abs/2210.10760) and https://x.org."


def test_math_becomes_unicode() -> None:
    [html] = render("the penalty $\\beta\\,\\mathrm{KL}(\\pi_\\theta \\| \\pi_{\\mathrm{ref}})$ and $\\mathbb{E}\\|a - \\mu\\|^2$")
    assert html == "the penalty β KL(π_θ ‖ π_ref) and 𝔼‖a - μ‖²"


ADVERSARIAL = [
    "x" * 20_000,
    "**" + "y" * 10_000 + "**",
    "😀" * 5_000,
    "👩\u200d👩\u200d👧" * 1_500,
    "<script>alert(1)</script> & &amp; " * 800,
    ("word " * 30 + "\n") * 300,
    ("**bold run " + "z" * 50 + "** ") * 300,
    "`" + "c" * 9_000 + "`",
    "$" + "\\beta " * 2_000 + "$",
    "e\u0301" * 6_000,
    ("paragraph " * 40 + "\n\n") * 60,
    "",
    "   \n\n  ",
]


@pytest.mark.parametrize("markdown", ADVERSARIAL, ids=range(len(ADVERSARIAL)))
def test_adversarial_texts_split_cleanly(markdown: str, fake_api_module: Any) -> None:
    chunks = check_message(markdown, fake_api_module.parse_html)
    for chunk in chunks:
        text, _ = fake_api_module.parse_html(chunk)
        assert not text.startswith(("\u200d", "\u0301")) and not text.endswith("\u200d")
    if len(markdown) > MAX_MESSAGE:
        assert len(chunks) > 1


def test_cuts_prefer_paragraphs_then_lines_then_words(fake_api_module: Any) -> None:
    paragraphs = [f"p{n} " + "w" * 1_500 for n in range(5)]
    chunks = render("\n\n".join(paragraphs))
    texts_shown = [fake_api_module.parse_html(c)[0] for c in chunks]
    assert all(t.split("\n\n")[-1] in paragraphs for t in texts_shown)  # no paragraph was cut
    line_chunks = render("\n".join(f"l{n} " + "v" * 1_000 for n in range(10)))
    assert all(not c.endswith("v" * 999 + "l") for c in line_chunks)
    for chunk in line_chunks:
        for line in fake_api_module.parse_html(chunk)[0].split("\n"):
            assert line.startswith("l") and line.endswith("v")  # cut between lines, not inside


def test_bold_span_is_not_cut_when_a_clean_boundary_exists(fake_api_module: Any) -> None:
    markdown = "plain " * 600 + "**" + "bold words " * 40 + "**" + " tail" * 200
    for chunk in render(markdown):
        _, entities = fake_api_module.parse_html(chunk)
        bold = [e for e in entities if e["type"] == "bold"]
        assert all(e["length"] == len(("bold words " * 40).strip()) for e in bold)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.text(alphabet=st.sampled_from(list("ab *_`$<>&\n-😀é\u200d")), max_size=600),
    st.integers(min_value=8, max_value=120),
)
def test_any_text_splits_into_valid_chunks(fake_api_module: Any, markdown: str, limit: int) -> None:
    parse_html = fake_api_module.parse_html  # the same module object for every example
    whole, _ = parse_html(to_html(styled_chars(markdown)))
    chunks = render(markdown, limit=limit)
    shown = ""
    for chunk in chunks:
        text, _ = parse_html(chunk)
        assert 0 < utf16_length(text) <= limit
        shown += text
    assert "".join(shown.split()) == "".join(whole.split())


UNRENDERED = re.compile(r"\$[^$\s][^$]*\$|\\[A-Za-z]{2,}")


@pytest.mark.skipif(not CARDS, reason="no card in cards/deck parses yet")
def test_no_card_leaves_latex_unrendered(fake_api_module: Any) -> None:
    """Every card's question, key, explanation and verdicts show math as Unicode, not ``$\\beta$``."""
    for card in CARDS:
        for markdown in card_messages(card):
            shown = "".join(fake_api_module.parse_html(chunk)[0] for chunk in render(markdown))
            found = UNRENDERED.search(shown)
            assert found is None, (card.id, found.group(0) if found else "")
