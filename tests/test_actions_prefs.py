"""Button data and learner preferences: parsed and validated in one place."""

from __future__ import annotations

from datetime import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.actions import Action, InvalidAction, Verb
from bot.prefs import PreferenceError, parse_new_per_day, parse_push_time, parse_timezone


def test_round_trip_and_limits() -> None:
    action = Action(Verb.OVERRIDE, 123456789012, "5")
    assert Action.decode(action.encode()) == action
    assert Action.decode("t1:next:-:-") == Action(Verb.NEXT)
    assert Action(Verb.ANSWER, arg="rl-08").encode() == "t1:ans:-:rl-08"
    with pytest.raises(ValueError):
        Action(Verb.RATE, 1, "x" * 70).encode()


@pytest.mark.parametrize(
    "data",
    ["", "t1", "t1:rate:1", "t1:rate:1:5:6", "t2:rate:1:5", "t1:bogus:1:5", "t1:rate:-1:5", "t1:rate:1:<b>", None, 42,
     "t1:rate:" + "9" * 13 + ":5", "t1:rate:1:" + "a" * 25,
     # Unicode digits pass str.isdigit(); int() refuses "²" and reads "١" as 1.
     "t1:ovr:²:12", "t1:ovr:١٢:3", "t1:rate:1:5\n"],
)
def test_malformed_data_is_rejected(data: object) -> None:
    with pytest.raises(InvalidAction):
        Action.decode(data)


@given(st.text(max_size=80))
def test_decode_never_crashes_on_junk(data: str) -> None:
    try:
        Action.decode(data)
    except InvalidAction:
        pass


def test_int_arg_bounds() -> None:
    assert Action(Verb.RATE, 1, "5").int_arg(0, 5) == 5
    for arg in ("6", None, "x", "²", "٣"):
        with pytest.raises(InvalidAction):
            Action(Verb.RATE, 1, arg).int_arg(0, 5)


@pytest.mark.parametrize(
    ("text", "zone"),
    [("UTC", "UTC"), ("Europe/Berlin", "Europe/Berlin"), ("berlin", "Europe/Berlin"), ("new york", "America/New_York"),
     ("UTC+2", "Etc/GMT-2"), ("-05:00", "Etc/GMT+5"), ("utc+14", "Etc/GMT-14"), ("GMT-12", "Etc/GMT+12"), ("+0", "UTC")],
)
def test_timezones(text: str, zone: str) -> None:
    assert parse_timezone(text) == zone


@pytest.mark.parametrize("text", ["", "Mars/Olympus", "UTC+15", "+05:30", "x" * 100])
def test_bad_timezones(text: str) -> None:
    with pytest.raises(PreferenceError):
        parse_timezone(text)


@pytest.mark.parametrize(
    ("text", "expected"), [("9", time(9)), ("09:30", time(9, 30)), ("7pm", time(19)), ("12am", time(0)), ("7:15 am", time(7, 15)), ("21h05", time(21, 5))]
)
def test_push_times(text: str, expected: time) -> None:
    assert parse_push_time(text) == expected


@pytest.mark.parametrize("text", ["24:00", "9:60", "13pm", "noon", ""])
def test_bad_push_times(text: str) -> None:
    with pytest.raises(PreferenceError):
        parse_push_time(text)


def test_new_per_day() -> None:
    assert parse_new_per_day("3") == 3
    for bad in ("0", "11", "two"):
        with pytest.raises(PreferenceError):
            parse_new_per_day(bad)
