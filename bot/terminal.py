"""``trapbot chat``: the quiz in a terminal, on the same engine as the chat platforms."""

from __future__ import annotations

import asyncio
import getpass
import sys
from typing import TextIO

from bot.engine import QuizEngine
from bot.markup import to_terminal
from bot.replies import Button, Reply, ReplyKind
from grader.base import warmable

BOLD = ("\033[1m", "\033[0m")
PROMPT = "> "


class TerminalChat:
    """Reads lines, sends them to the engine as commands, button keys or answers."""

    def __init__(self, engine: QuizEngine, stdin: TextIO, stdout: TextIO, *, user: str | None = None):
        self.engine = engine
        self.stdin = stdin
        self.stdout = stdout
        self.color = stdout.isatty()
        user = user or getpass.getuser()
        self.learner = engine.learner("terminal", user, display_name=user)
        self.keys: dict[str, Button] = {}
        self._warming: dict[str, asyncio.Task[None]] = {}

    def write(self, text: str = "") -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()

    async def read(self) -> str | None:
        """One logical line; a line ending in a backslash continues on the next."""
        parts: list[str] = []
        while True:
            self.stdout.write(PROMPT if not parts else "  ")
            self.stdout.flush()
            line = await asyncio.to_thread(self.stdin.readline)
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
            self.write()
            self.write(to_terminal(reply.text, color=self.color))
            if reply.buttons:
                self.write("   " + "   ".join(self._label(b) for row in reply.buttons for b in row))
            if reply.kind is ReplyKind.QUESTION:
                self.write("(Type your answer; end a line with \\ to continue it on the next.)")
                self._warm_judge(reply.card_id)
            elif reply.kind is ReplyKind.FOLLOWUP:
                self.write("(Your next line answers the follow-up; /skip skips it.)")
            if reply.plot_sim:
                plot = await self.engine.plot(reply.plot_sim, wait_seconds=5.0, card_id=reply.card_id)
                if plot is not None:
                    self.write(f"Plot: {plot.path}\n{plot.caption}")

    def _warm_judge(self, card_id: str | None) -> None:
        """Load the judge's model for this card while the learner types (not before the prompt)."""
        judge = warmable(self.engine.grader)
        if card_id is None or card_id in self._warming or judge is None:
            return
        self._warming[card_id] = asyncio.create_task(judge.warm([self.engine.deck.get(card_id)]))

    def _label(self, button: Button) -> str:
        head = button.label.split(".", 1)[0]
        key = head if head.isdigit() and head not in self.keys else chr(ord("a") + len(self.keys))
        self.keys[key] = button
        return f"[{key}] {button.label}"

    async def handle(self, line: str) -> bool:
        """Act on one input; False when the learner quits."""
        text = line.strip()
        learner_id = self.learner.id
        assert learner_id is not None
        engine = self.engine
        if text in self.keys:
            await self.show(await engine.act(learner_id, self.keys[text].data))
            return True
        if text.startswith("/"):
            command, _, rest = text[1:].partition(" ")
            command = command.casefold()
            if command in ("quit", "exit", "q"):
                return False
            replies = await self._command(learner_id, command, rest.strip())
            await self.show(replies)
            return True
        await self.show(await engine.submit_answer(learner_id, line))
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
            replies = await engine.forget(learner_id)
            return replies
        if command == "settings":
            field, _, value = rest.partition(" ")
            if not field:
                return engine.settings(learner_id)
            return await engine.update_settings(learner_id, field, value)
        if command == "help":
            from bot.texts import HELP

            return [Reply(HELP + "\n- /quit: leave the chat")]
        return [Reply(f"I don't know /{command}. Send /help for the commands.", kind=ReplyKind.ERROR)]

    async def run(self) -> None:
        self.write("trapbot: the traps of RL interviews. /help lists the commands, /quit leaves.")
        # Only this terminal learner's answers: another platform's are its own process's to deliver.
        for _, replies in await self.engine.recover_pending(learner_id=self.learner.id):
            await self.show(replies)
        follow_up = self.engine.followups.asked_again(self.learner.id)  # type: ignore[arg-type]
        if follow_up is not None:  # left open when the chat last stopped: it still answers
            await self.show([Reply("Your follow-up is still open:"), follow_up])
        elif self._has_history():
            await self.show(await self.engine.next_trap(self.learner.id))  # type: ignore[arg-type]
        else:
            await self.show(await self.engine.start(self.learner.id))  # type: ignore[arg-type]
        while True:
            line = await self.read()
            if line is None or not await self.handle(line):
                break
            if self.engine.get_learner(self.learner.id) is None:  # after /forget
                self.learner = self.engine.learner("terminal", self.learner.platform_user_id)
        for task in self._warming.values():
            task.cancel()
        self.write("Bye. Your progress is saved.")

    def _has_history(self) -> bool:
        return self.engine.stats_data(self.learner.id).cards_seen > 0  # type: ignore[arg-type]


async def run_chat(engine: QuizEngine, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> None:
    # Bytes that are not valid in the terminal's encoding become U+FFFD; the rest of the line is kept.
    reconfigure = getattr(stdin, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="replace")
    await TerminalChat(engine, stdin, stdout).run()
