"""What trapbot says on Discord beyond the engine's replies."""

from __future__ import annotations

HELP = (
    "**trapbot on Discord**\n"
    "- /trap: your next trap (due reviews first, then a new one)\n"
    "- /hint: a nudge for your open trap\n"
    "- /skip: put your open trap back for later\n"
    "- /stats: streak, reviews, what is due, mastery per mechanism, with a plot\n"
    "- /settings: timezone, push time, DM reminders on or off, new traps a day, interview mode\n"
    "- /undo: take back your last grade\n"
    "- /forget: delete everything stored about you (asks first)\n"
    "- /leaderboard: this server's streaks, for those who join it\n"
    "- /trapbot-setup: a server's trap of the day (needs Manage Server)\n\n"
    "**Answering**\n"
    "Press **Answer** under a trap and write the mechanism in your own words. In a server "
    "your answers and grades are visible to you only; in a direct message you can also just "
    "type the answer.\n\n"
    "**Follow-ups**\n"
    "When an answer misses a core point, **Try the follow-up** asks the question an "
    "interviewer would ask next; **Answer** opens its form. It never changes your grade. "
    "`/settings interview: True` asks it straight away.\n\n"
    "**Reminders**\n"
    "Turn on a daily direct message with `/settings reminders: True`. It needs direct "
    "messages from server members allowed in your privacy settings."
)

NOT_YOURS = "These buttons belong to someone else. Run /trap for traps of your own."
FORM_NOT_YOURS = "This answer form belongs to someone else."
STALE = "That button is not one of mine anymore. Run /trap to go on."
NO_SUCH_TRAP = "That trap is no longer in the deck. Run /trap for another."
EMPTY_FORM = "Your answer came through empty. Press Answer again and write it out."
FAILED = "Something went wrong on my side; nothing you sent is lost. Please try again in a minute."
ANSWER_KEPT = "Your answer is attached, so nothing you wrote is lost."
TYPED_COMMAND = "Slash commands work from the command menu: type / and pick one (try /trap)."
DM_CLOSED = (
    "I can't send you direct messages, so reminders stay off. Allow direct messages from "
    "server members (Server menu, Privacy Settings), then run `/settings reminders: True` again."
)
DM_WELCOME = "Daily reminders will come here. Turn them off with `/settings reminders: False`."
