"""``trapbot chat`` driven through a pseudo-terminal, as a learner types it: keep the settings,
fail a trap, see the other trap due today before the failed one returns, ask for the repeat,
/skip it (it does not come back this session), /stats, then Ctrl-C, which must say "Progress
saved." at once, with no traceback and no wait for Enter.

``PtySession`` is the harness: the real console entry point in a child process whose terminal
is a pty (so the chat sees a TTY: colours, spinner, in-place redraws). ``session.asked`` lists
the traps in the order they were shown, for tests of the order of questions.
"""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import sqlite3
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
TRAP_HEADER = re.compile(r"·\s+((?:rl|msft)-\d{2})")


class PtySession:
    """A child process on a pseudo-terminal; ``expect`` waits for text on its screen."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, *, columns: int = 110):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: its stdin/stdout/stderr are the pty, a controlling tty
            os.chdir(cwd)
            os.environ.clear()
            os.environ.update(env)
            os.environ["COLUMNS"] = str(columns)
            # As a shell starts a foreground job: Ctrl-C interrupts. A suite started in the
            # background by a non-interactive shell has SIGINT ignored, and exec keeps that.
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.execv(argv[0], argv)
        self.raw = ""
        self.seen = 0  # where the next ``expect`` starts looking
        self.asked: list[str] = []

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:  # the child closed the terminal
            return False
        if not chunk:
            return False
        self.raw += chunk.decode("utf-8", errors="replace")
        return True

    @property
    def text(self) -> str:
        """The screen as text: colours and cursor moves removed, carriage returns honoured."""
        lines = []
        for line in ANSI.sub("", self.raw).replace("\r\n", "\n").split("\n"):
            lines.append(line.rsplit("\r", 1)[-1])
        return "\n".join(lines)

    def expect(self, pattern: str, timeout: float = 60.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        compiled = re.compile(pattern)
        while True:
            found = compiled.search(self.text, self.seen)
            if found:
                self.asked += [m for m in TRAP_HEADER.findall(self.text[self.seen : found.end()])]
                self.seen = found.end()
                return found
            left = deadline - time.monotonic()
            if left <= 0 or (not self._read(min(left, 0.5)) and self.exited()):
                raise AssertionError(f"{pattern!r} never appeared; the screen ends:\n{self.text[-1500:]}")

    def prompt(self, timeout: float = 60.0) -> None:
        """Wait until the chat asks for input again (its "> " at the start of a line)."""
        self.expect(r"(?m)^> $", timeout)

    def send(self, line: str) -> None:
        os.write(self.fd, (line + "\r").encode())

    def interrupt(self) -> None:
        os.write(self.fd, b"\x03")  # Ctrl-C, as the terminal driver turns it into SIGINT

    def exited(self) -> bool:
        pid, _ = os.waitpid(self.pid, os.WNOHANG)
        if pid:
            self.status = _
            return True
        return getattr(self, "status", None) is not None

    def wait(self, timeout: float = 30.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._read(0.1)
            if self.exited():
                while self._read(0.05):
                    pass
                return os.waitstatus_to_exitcode(self.status)
        os.kill(self.pid, signal.SIGKILL)
        raise AssertionError(f"the chat did not exit in {timeout} s:\n{self.text[-1500:]}")


def chat_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'chat.db'}",
        "TRAPBOT_JUDGE": "self",
        "TRAPBOT_PLOTS": "false",
        "TRAPBOT_NEW_PER_DAY": "2",
        "TZ": "Europe/Berlin",
        "USER": "ada",
        "LOGNAME": "ada",
    }
    env.update(extra)
    return env


@pytest.mark.skipif(not hasattr(os, "fork"), reason="pseudo-terminals need POSIX")
def test_a_session_in_a_pseudo_terminal(tmp_path: Path) -> None:
    session = PtySession([sys.executable, "-m", "bot.cli", "chat"], chat_env(tmp_path), tmp_path)
    session.expect(r"This machine's time zone is Europe/Berlin")
    session.expect(r"Timezone: Europe/Berlin")
    session.expect(r"\[k\] Keep these settings")
    session.prompt()
    session.send("k")
    session.expect(r"All set")
    session.prompt()
    session.send("n")
    session.expect(r"\(Type your answer")
    session.prompt()
    session.send("Its actions choose its next states, so one mistake compounds.")
    session.expect(r"\[5\] 5")  # self-grading: rate after reading the key
    session.prompt()
    session.send("2")
    verdict = session.expect(r"Grade 2/5[^\n]*")
    assert "back in 10 minutes" in verdict.group(0)
    # The missed trap waits: the next one is the other trap due today, not rl-01 again.
    session.expect(r"\[n\] Next trap")
    session.prompt()
    session.send("n")
    session.expect(r"\(Type your answer")
    session.prompt()
    assert session.asked == ["rl-01", "rl-02"]
    session.send("The Gaussian head puts its mean between the two modes.")
    session.expect(r"\[5\] 5")
    session.prompt()
    session.send("5")
    session.expect(r"Grade 5/5")
    session.expect(r"\[n\] Next trap")
    session.prompt()
    session.send("n")
    # Nothing else is due: rl-01 is announced for later, and can be asked for now.
    session.expect(r"rl-01` comes back in 10 minutes|rl-01 comes back in 10 minutes")
    repeat = session.expect(r"\[(\w)\] Repeat it now")
    session.prompt()
    session.send(repeat.group(1))
    session.expect(r"\(Type your answer")
    session.prompt()
    assert session.asked == ["rl-01", "rl-02", "rl-01"]
    # /skip on the repeat moves on for the session: /trap does not bring it back.
    session.send("/skip")
    session.expect(r"Skipped")
    session.prompt()
    session.send("/trap")
    session.expect(r"One more new trap")
    session.prompt()
    assert session.asked == ["rl-01", "rl-02", "rl-01"]
    session.send("/stats")
    session.expect(r"Reviews done: 2")
    session.prompt()
    session.interrupt()
    code = session.wait(timeout=20)
    tail = session.text[session.seen :]
    assert "Progress saved." in tail
    assert "Traceback" not in session.text and "KeyboardInterrupt" not in session.text
    assert code == 0
    with sqlite3.connect(tmp_path / "chat.db") as connection:
        rows = connection.execute("SELECT card_id, quality FROM review").fetchall()
    assert rows == [("rl-01", 2), ("rl-02", 5)]
    transcript = os.environ.get("TRAPBOT_TRANSCRIPT")
    if transcript:
        Path(transcript).write_text(session.text, encoding="utf-8")
