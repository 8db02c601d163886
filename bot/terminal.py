"""``trapbot chat``: the quiz in a terminal, on the same engine as the chat platforms.

Buttons are keys: the same action always has the same key (``KEYS``), numbered buttons their
number. A verdict's plot is a line with its path before the buttons, ``v`` opens it in the
system viewer; a plot that is still computing is announced and printed when it is ready. While
an answer is graded a spinner runs. Ticking a point redraws only the lines that changed.
"""

from __future__ import annotations

import asyncio
import getpass
import itertools
import os
import shutil
import subprocess
import sys
import threading
import time
import unicodedata
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TextIO, TypeVar

from bot.actions import Action, InvalidAction, Verb
from bot.engine import CARD_IMAGE, QuizEngine
from bot.markup import to_terminal
from bot.replies import PLOT_FAILED, Button, PlotImage, Reply, ReplyKind
from bot.transport import WAITED_FOR_JUDGE
from grader.base import warmable

T = TypeVar("T")
PROMPT = "> "
QUIT_TEXT = "Progress saved. Bye."
STALE_KEY = "[{key}] is not a button on the screen now: press a key shown in brackets, /help lists the commands, /quit leaves."
PLOT_KEY = "v"
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

#: One key per action, whatever else is on screen: (verb, arg) first, then the verb alone.
KEYS: dict[tuple[Verb, str | None], str] = {
    (Verb.CONFIRM, None): "c",
    (Verb.NEXT, None): "n",
    (Verb.EXPLAIN, None): "e",
    (Verb.DISAGREE, None): "d",
    (Verb.HINT, None): "h",
    (Verb.SKIP, None): "s",
    (Verb.EXTRA, None): "m",
    (Verb.UNDO, None): "u",
    (Verb.ANSWER, None): "a",
    (Verb.SKIP_TODAY, None): "o",
    (Verb.SNOOZE, "1"): "w",
    (Verb.SNOOZE, "3"): "l",
    (Verb.FOLLOWUP, None): "f",
    (Verb.FOLLOWUP, "skip"): "j",
    (Verb.FOLLOWUP, "yes"): "y",
    (Verb.FOLLOWUP, "no"): "t",
    (Verb.FORGET, "yes"): "x",
    (Verb.FORGET, "no"): "z",
    (Verb.SETTINGS, "accept"): "k",
    (Verb.SETTINGS, "pause"): "p",
    (Verb.SETTINGS, "resume"): "r",
    (Verb.SETTINGS, None): "i",
    (Verb.TICK, "all"): "g",  # correct a point the judge was sure of
    (Verb.TICK, "trap"): "b",  # the answer does not assert the trap the judge read
}
_NUMBERED = (Verb.TICK, Verb.RATE, Verb.OVERRIDE)


def key_for(button: Button) -> str | None:
    """The button's fixed key, or None for a button no table entry covers."""
    try:
        action = Action.decode(button.data)
    except InvalidAction:
        return None
    if (action.verb, action.arg) in KEYS:
        return KEYS[(action.verb, action.arg)]
    if action.verb in _NUMBERED and action.arg is not None:
        return action.arg
    return KEYS.get((action.verb, None))


def machine_timezone() -> str | None:
    """This machine's IANA zone from ``TZ`` or the ``/etc/localtime`` link; None when unknown.

    Our own two reads instead of tzlocal (not a dependency): they cover Linux and macOS."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    candidates = [os.environ.get("TZ", "").lstrip(":")]
    try:
        target = os.path.realpath("/etc/localtime")
        if "zoneinfo/" in target:
            candidates.append(target.split("zoneinfo/", 1)[1])
    except OSError:
        pass
    for name in candidates:
        if not name or name.startswith("/") or name in ("localtime", "posixrules"):
            continue
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            continue
        return name
    return None


_UTC_NAMES = {"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Etc/Universal", "Universal", "Etc/Zulu", "Zulu"}


def _same_zone(a: str, b: str) -> bool:
    return a == b or (a in _UTC_NAMES and b in _UTC_NAMES)


def open_in_viewer(path: str) -> str | None:
    """Open ``path`` with the system's image viewer; an explanation when there is none."""
    opener = "open" if sys.platform == "darwin" else "xdg-open"
    if shutil.which(opener) is None:
        return f"No image viewer is available here ({opener} is missing); the plot is at {path}"
    subprocess.Popen(
        [opener, path],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return None


def display_width(line: str) -> int:
    """Columns a line takes in a terminal: ANSI codes none, wide characters two."""
    width, escape = 0, False
    for ch in line:
        if escape:
            escape = ch != "m"
        elif ch == "\033":
            escape = True
        elif unicodedata.combining(ch) or ch in "\u200d\ufe0f":
            continue
        else:
            width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


class LineReader:
    """stdin lines from a daemon thread, so Ctrl-C never waits for a pending ``readline``."""

    def __init__(self, stdin: TextIO):
        self.stdin = stdin
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        self._wanted = threading.Semaphore(0)
        threading.Thread(target=self._pump, name="stdin", daemon=True).start()

    def _pump(self) -> None:
        while True:
            self._wanted.acquire()
            try:
                line = self.stdin.readline()
            except (OSError, ValueError):
                line = ""
            self._loop.call_soon_threadsafe(self.queue.put_nowait, line)
            if line == "":
                return

    async def readline(self) -> str:
        self._wanted.release()
        return await self.queue.get()


class DaemonThreads(ThreadPoolExecutor):  # asyncio accepts only this type as the default
    """Each call in a daemon thread of its own. The chat's event loop uses it for
    ``asyncio.to_thread``: the stdlib pool joins its threads when the loop and the interpreter
    close, so /quit or Ctrl-C would wait for a judge's model still loading in the background."""

    def submit(self, fn: Callable[..., T], /, *args: object, **kwargs: object) -> Future[T]:
        future: Future[T] = Future()

        def work() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as error:  # noqa: BLE001 (handed to the awaiting caller)
                future.set_exception(error)

        threading.Thread(target=work, name="chat-worker", daemon=True).start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Nothing to join: the threads are daemons and end with their work or the process."""


class TerminalChat:
    """Reads lines, sends them to the engine as commands, button keys or answers."""

    def __init__(
        self,
        engine: QuizEngine,
        stdin: TextIO,
        stdout: TextIO,
        *,
        user: str | None = None,
        plot_wait_seconds: float = 2.0,
        viewer: Callable[[str], str | None] = open_in_viewer,
        timezone: str | None = None,
    ):
        self.engine = engine
        self.stdin = stdin
        self.stdout = stdout
        self.color = stdout.isatty()
        self.tty = stdout.isatty()
        user = user or getpass.getuser()
        self.learner = engine.learner("terminal", user, display_name=user)
        self.keys: dict[str, Button] = {}
        self.plot_wait_seconds = plot_wait_seconds
        self.viewer = viewer
        self.machine_zone = timezone if timezone is not None else machine_timezone()
        self.plot_path: str | None = None
        self._reader: LineReader | None = None
        self._reading = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._judge_ready: asyncio.Task[None] | None = None
        self._judge_wait_told = False
        self._note = ""
        self._confirm_block: tuple[int | None, list[str]] | None = None  # (review, lines on screen)
        self._lines_since_block = 0

    # ----- output -------------------------------------------------------------------------

    def write(self, text: str = "") -> None:
        if self._reading and self.tty:
            self.stdout.write("\r\033[2K")  # a late line lands above the prompt, not inside it
        self.stdout.write(text + "\n")
        self._lines_since_block += text.count("\n") + 1
        if self._reading:
            self.stdout.write(PROMPT)
        self.stdout.flush()

    async def read(self) -> str | None:
        """One logical line; a line ending in a backslash continues on the next."""
        if self._reader is None:
            self._reader = LineReader(self.stdin)
        parts: list[str] = []
        while True:
            self.stdout.write(PROMPT if not parts else "  ")
            self.stdout.flush()
            self._reading = not parts
            try:
                line = await self._reader.readline()
            finally:
                self._reading = False
            self._lines_since_block += 1  # the echoed input line
            if line == "":
                return "\n".join(parts) if parts else None
            line = line.rstrip("\n")
            if line.endswith("\\"):
                parts.append(line[:-1])
                continue
            parts.append(line)
            return "\n".join(parts)

    async def show(self, replies: list[Reply]) -> None:
        self.keys = {}
        for reply in replies:
            if self._redraw(reply):
                continue
            lines = [""] + to_terminal(reply.text, color=self.color).split("\n")
            for line in lines:
                self.write(line)
            if reply.plot_sim:
                await self._plot_lines(reply)
            buttons = self._buttons_line(reply)
            if buttons:
                self.write(buttons)
            if reply.kind is ReplyKind.CONFIRM and buttons:
                self._confirm_block = (reply.review_id, [*lines[1:], buttons])
                self._lines_since_block = 0
            else:
                self._confirm_block = None
            if reply.kind is ReplyKind.QUESTION:
                self.write("(Type your answer; end a line with \\ to continue it on the next.)")
            elif reply.kind is ReplyKind.FOLLOWUP:
                self.write("(Your next line answers the follow-up; /skip skips it.)")

    def _buttons_line(self, reply: Reply) -> str:
        labels = []
        for row in reply.buttons:
            for button in row:
                key = key_for(button)
                if key is None or key in self.keys:  # a button no table covers: a free letter
                    key = next(k for k in "bgq" + "ABCDEFGH" if k not in self.keys)
                self.keys[key] = button
                labels.append(f"[{key}] {button.label}")
        if self.plot_path is not None and reply.plot_sim:
            labels.append(f"[{PLOT_KEY}] open the plot")
        return "   ".join(labels)

    def _redraw(self, reply: Reply) -> bool:
        """A new reading of the confirmation on screen: rewrite only its changed lines."""
        if reply.kind is not ReplyKind.CONFIRM or self._confirm_block is None:
            return False
        review_id, old = self._confirm_block
        if review_id != reply.review_id:
            return False
        saved_keys = dict(self.keys)
        new = to_terminal(reply.text, color=self.color).split("\n")
        new.append(self._buttons_line(reply))
        if len(new) != len(old):
            self.keys = saved_keys
            return False
        changed = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
        columns = shutil.get_terminal_size((100, 24)).columns
        fits = all(display_width(line) < columns for line in old + new)
        if self.tty and fits:
            up = len(old) + self._lines_since_block  # rows from here up to the block's first line
            out = [f"\033[{up}A\r" if up else "\r"]
            for index, line in enumerate(new):
                out.append(f"\033[2K{line}" if index in changed else "")
                out.append("\n" if index < len(new) - 1 else "")
            out.append("\n\033[J")  # the old input line and anything below it go
            self.stdout.write("".join(out))
            self.stdout.flush()
        else:
            for index in changed:
                self.write(new[index])
        self._confirm_block = (review_id, new)
        self._lines_since_block = 0
        return True

    # ----- plots ----------------------------------------------------------------------------

    async def _plot_lines(self, reply: Reply) -> None:
        assert reply.plot_sim is not None
        if self.engine.sims is None and reply.plot_sim != CARD_IMAGE:
            return  # simulation plots are off; a card's own picture is still shown
        plot = await self.engine.plot(
            reply.plot_sim, wait_seconds=self.plot_wait_seconds, card_id=reply.card_id
        )
        if plot is not None:
            self._write_plot(plot)
            return
        self.plot_path = None
        self.write("📈 The simulation's plot is still being computed; it appears here when it is ready.")
        self._spawn(self._late_plot(reply.plot_sim, reply.card_id))

    def _write_plot(self, plot: PlotImage, *, late: bool = False) -> None:
        self.plot_path = plot.path
        title = f"{plot.title}: " if plot.title else ""
        head = "📈 The plot is ready" if late else "📈 Plot"
        self.write(f"{head}: {title}{plot.path}")
        self.write(to_terminal(plot.caption, color=self.color))
        if late:
            self.write(f"(Press {PLOT_KEY} to open it.)")

    async def _late_plot(self, sim_id: str, card_id: str | None) -> None:
        plot = await self.engine.plot(sim_id, wait_seconds=None, card_id=card_id)
        self.write()
        if plot is None:
            self.write(PLOT_FAILED)
        else:
            self._write_plot(plot, late=True)

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle(self) -> None:
        """Wait for the plots still on their way (tests)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # ----- grading feedback -------------------------------------------------------------

    def warm_judge(self) -> None:
        """Load the judge's model in the background from the start."""
        judge = warmable(self.engine.grader)
        if judge is not None and self._judge_ready is None:
            self._judge_ready = asyncio.ensure_future(judge.warm([]))

    async def _grading(self, work: Awaitable[T]) -> T:
        """``work`` with a spinner line; the first grade says if it waited for the judge."""
        loading = self._judge_ready is not None and not self._judge_ready.done()
        label = "Grading your answer"
        if loading:
            label += " (the judge is still loading its model; only the first answer waits)"
        started = time.monotonic()
        spinner = asyncio.ensure_future(self._spin(label)) if self.tty else None
        if spinner is None:
            self.write(label + "…")
        try:
            result = await work
        finally:
            if spinner is not None:
                spinner.cancel()
                await asyncio.gather(spinner, return_exceptions=True)
                self.stdout.write("\r\033[2K")
                self.stdout.flush()
        if loading and not self._judge_wait_told:
            self._judge_wait_told = True
            self._note = WAITED_FOR_JUDGE.format(seconds=time.monotonic() - started)
        return result

    async def _spin(self, label: str) -> None:
        for frame in itertools.cycle(SPINNER):
            self.stdout.write(f"\r\033[2K{frame} {label}…")
            self.stdout.flush()
            await asyncio.sleep(0.1)

    # ----- input ----------------------------------------------------------------------------

    async def handle(self, line: str) -> bool:
        """Act on one input; False when the learner quits."""
        text = line.strip()
        learner_id = self.learner.id
        assert learner_id is not None
        engine = self.engine
        if text in self.keys:
            await self.show(await engine.act(learner_id, self.keys[text].data))
            return True
        if text == PLOT_KEY and self.plot_path is not None:
            problem = self.viewer(self.plot_path)
            self.write(problem or f"Opened {self.plot_path}")
            return True
        if len(text) == 1 and text.isalnum():
            self.write(STALE_KEY.format(key=text))
            return True
        if text.startswith("/"):
            command, _, rest = text[1:].partition(" ")
            command = command.casefold()
            if command in ("quit", "exit", "q"):
                return False
            replies = await self._command(learner_id, command, rest.strip())
            await self.show(replies)
            return True
        await self.show(await self._grading(engine.submit_answer(learner_id, line)))
        if self._note:  # below the reading or verdict it explains
            self.write(self._note)
            self._note = ""
        return True

    async def _command(self, learner_id: int, command: str, rest: str) -> list[Reply]:
        engine = self.engine
        if command == "start":
            return await engine.start(learner_id)
        if command == "trap":
            return await engine.next_trap(learner_id)
        if command == "hint":
            return await engine.hint(learner_id)
        if command == "skip":
            return await engine.skip(learner_id)
        if command == "stats":
            return await engine.stats(learner_id, with_plot=False)
        if command == "undo":
            return await engine.undo(learner_id)
        if command == "forget":
            return await engine.forget(learner_id)
        if command == "plot":
            if self.plot_path is None:
                return [Reply("No plot to open yet: a verdict's plot can be opened once it is ready.")]
            return [Reply(self.viewer(self.plot_path) or f"Opened {self.plot_path}")]
        if command == "settings":
            field, _, value = rest.partition(" ")
            if not field:
                return engine.settings(learner_id)
            return await engine.update_settings(learner_id, field, value)
        if command == "help":
            from bot.texts import HELP

            extra = f"\n- `{PLOT_KEY}` or /plot: open the last verdict's plot\n- /quit or Ctrl-C: leave the chat"
            return [Reply(HELP + extra)]
        return [Reply(f"I don't know /{command}. Send /help for the commands.", kind=ReplyKind.ERROR)]

    # ----- the session ------------------------------------------------------------------

    async def run(self) -> None:
        asyncio.get_running_loop().set_default_executor(DaemonThreads())
        self.write("trapbot: the traps of RL interviews. /help lists the commands, /quit leaves.")
        try:
            await self._session()
        finally:
            for task in (*self._tasks, *([self._judge_ready] if self._judge_ready else [])):
                task.cancel()
        self.write(QUIT_TEXT)

    async def _session(self) -> None:
        learner_id = self.learner.id
        assert learner_id is not None
        # Only this terminal learner's answers: another platform's are its own process's to deliver.
        for _, replies in await self.engine.recover_pending(learner_id=learner_id):
            await self.show(replies)
        follow_up = self.engine.followups.asked_again(learner_id)
        if follow_up is not None:  # left open when the chat last stopped: it still answers
            await self.show([Reply("Your follow-up is still open:"), follow_up])
        elif self._has_history():
            await self.show(await self.engine.next_trap(learner_id))
        else:
            await self._propose_timezone(learner_id)
            await self.show(await self.engine.start(learner_id))
        self.warm_judge()  # after the first screen, so the start never waits for the model
        while True:
            line = await self.read()
            if line is None or not await self.handle(line):
                break
            if self.engine.get_learner(learner_id) is None:  # after /forget
                self.learner = self.engine.learner("terminal", self.learner.platform_user_id)
                learner_id = self.learner.id
                assert learner_id is not None

    async def _propose_timezone(self, learner_id: int) -> None:
        """A new learner starts in this machine's zone (the welcome shows it, one tap keeps it)."""
        zone = self.machine_zone
        learner = self.engine.get_learner(learner_id)
        if not zone or learner is None or _same_zone(learner.timezone, zone):
            return
        replies = await self.engine.update_settings(learner_id, "timezone", zone)
        if not any(reply.kind is ReplyKind.ERROR for reply in replies):
            self.write(f"This machine's time zone is {zone}; it is proposed below.")

    def _has_history(self) -> bool:
        data = self.engine.stats_data(self.learner.id)  # type: ignore[arg-type]
        # Traps met in decks set aside, or in a removed folder, are history too.
        return data.cards_seen > 0 or data.set_aside > 0 or data.reviews_done > 0


async def run_chat(engine: QuizEngine, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> None:
    # Bytes that are not valid in the terminal's encoding become U+FFFD; the rest of the line is kept.
    reconfigure = getattr(stdin, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="replace")
    await TerminalChat(engine, stdin, stdout).run()

