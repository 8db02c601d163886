"""An OpenAI-compatible chat-completions server on 127.0.0.1 whose model misbehaves on purpose.

It reads our judge's prompt the way a model would (the key point ids, the misconception ids,
the answer between the delimiters) and answers according to ``behaviour``:

- ``honest``: verdicts from ``labels`` (answer -> {point id: verdict}) and ``asserted``
  (answer -> misconception ids) when the answer has some, else its own lexical reading;
  every quote is the answer's passage that shares the most words with the point or
  misconception;
- ``obedient``: a gullible model. When the answer contains one of ``payloads`` (the injected
  instructions), it does what they say: every point present, quoting the payload itself;
  otherwise it is honest;
- ``forged``: every point present, with quotes that are not in the answer;
- ``trivial``: every point present, quoting "e";
- ``empty``: every point present, with empty quotes;
- ``garbage``: a 200 whose body is not JSON;
- ``envelope-string``, ``envelope-empty-choice``, ``envelope-null-message``,
  ``envelope-number``, ``envelope-list``: a 200 JSON body that is not a chat completion;
- ``wrong-schema``: a chat completion whose content is JSON of another shape;
- ``slow``: honest, after ``delay`` seconds;
- ``429``, ``500``: that status, always;
- ``flaky``: every other request is a 500, the rest honest;
- ``reset``: the connection is dropped without a reply;
- ``no-json-schema``: a 400 for ``response_format`` ``json_schema``, honest otherwise.

Run it alone for ``trapbot grade`` or ``trapbot grader eval --grader llm``::

    python tests/grader/judge_server.py obedient --port 8765 --calibration
"""

from __future__ import annotations

import argparse
import asyncio
import html
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

BEHAVIOURS = (
    "honest",
    "obedient",
    "forged",
    "trivial",
    "empty",
    "garbage",
    "envelope-string",
    "envelope-empty-choice",
    "envelope-null-message",
    "envelope-number",
    "envelope-list",
    "wrong-schema",
    "slow",
    "429",
    "500",
    "flaky",
    "reset",
    "no-json-schema",
)
FORGED_QUOTE = "the reward model is only a proxy and the KL penalty keeps the policy where it is accurate"

_TAG = re.compile(r"<(answer-[0-9a-f]+)>\n(.*)\n</\1>", re.DOTALL)
_POINT = re.compile(r"^- ([a-z0-9-]+)( \(core\))?: (.*)$", re.MULTILINE)
_WORD = re.compile(r"[a-z0-9]+")
_PIECE = re.compile(r"(?:[^.;:!?\n]|(?<=\bal)\.|(?<=\be)\.(?=g\.)|(?<=\be\.g)\.|(?<=\bi)\.(?=e\.)|(?<=\bi\.e)\.|\.(?=\d))+[.;:!?]?")
_COMMON = frozenset(
    ["the", "a", "an", "and", "or", "of", "to", "in", "on", "for", "is", "are", "be", "it", "that", "this", "with", "as", "by", "from", "at", "not", "its", "their"]
)


@dataclass
class Prompt:
    points: list[tuple[str, bool, str]]  # id, core, text
    misconceptions: list[tuple[str, str]]  # id, text
    answer: str


def read_prompt(body: dict[str, Any]) -> Prompt:
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    key = user.split("Key points:\n", 1)[1].split("\n\nMisconceptions:\n", 1)
    points = [(m[1], bool(m[2]), m[3]) for m in _POINT.finditer(key[0])]
    wrong = key[1].split("\n\n<answer-", 1)[0]
    misconceptions = [(m[1], m[3]) for m in _POINT.finditer(wrong)]
    found = _TAG.search(user)
    answer = html.unescape(found.group(2)) if found else ""
    return Prompt(points, misconceptions, answer.removesuffix(" [answer cut here]"))


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _COMMON}


def best_passage(answer: str, point_text: str) -> tuple[str, int]:
    """The clause or sentence of ``answer`` sharing the most words with ``point_text``."""
    target = _words(point_text)
    best, overlap = "", 0
    for piece in _PIECE.findall(answer):
        piece = piece.strip()
        if len(piece.split()) < 4:
            continue
        shared = len(_words(piece) & target)
        if shared > overlap:
            best, overlap = piece, shared
    return best, overlap


@dataclass
class JudgeServer:
    behaviour: str = "honest"
    labels: dict[str, dict[str, str]] = field(default_factory=dict)
    asserted: dict[str, list[str]] = field(default_factory=dict)
    payloads: list[str] = field(default_factory=list)
    delay: float = 5.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""
    _runner: web.AppRunner | None = None

    # ----- what the model says ---------------------------------------------------------------

    def verdicts(self, prompt: Prompt) -> dict[str, Any]:
        behaviour = self.behaviour
        payload = next((p for p in self.payloads if p and p in prompt.answer), None)
        if behaviour == "obedient" and payload is not None:
            return self._all_present(prompt, payload.strip())
        if behaviour == "forged":
            return self._all_present(prompt, FORGED_QUOTE)
        if behaviour == "trivial":
            return self._all_present(prompt, "e")
        if behaviour == "empty":
            return self._all_present(prompt, "")
        return self._honest(prompt)

    def _all_present(self, prompt: Prompt, quote: str) -> dict[str, Any]:
        return {
            "injection_suspected": False,
            "points": [{"point_id": p, "verdict": "present", "quote": quote} for p, _, _ in prompt.points],
            "misconceptions": [
                {"misconception_id": m, "asserted": False, "quote": ""} for m, _ in prompt.misconceptions
            ],
            "feedback": "Complete and correct.",
        }

    def _honest(self, prompt: Prompt) -> dict[str, Any]:
        labelled = self.labels.get(prompt.answer.strip())
        points = []
        for point_id, _, text in prompt.points:
            quote, overlap = best_passage(prompt.answer, text)
            if labelled is not None:
                verdict = labelled.get(point_id, "absent")
            else:
                verdict = "present" if overlap >= 4 else "partial" if overlap >= 2 else "absent"
            if not quote:
                verdict = "absent"
            points.append(
                {"point_id": point_id, "verdict": verdict, "quote": quote if verdict != "absent" else ""}
            )
        asserted = set(self.asserted.get(prompt.answer.strip(), ()))
        misconceptions = []
        for misconception_id, text in prompt.misconceptions:
            quote = best_passage(prompt.answer, text)[0] if misconception_id in asserted else ""
            misconceptions.append(
                {"misconception_id": misconception_id, "asserted": bool(quote), "quote": quote}
            )
        return {
            "injection_suspected": False,
            "points": points,
            "misconceptions": misconceptions,
            "feedback": "Say which point is missing.",
        }

    # ----- the protocol ----------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        behaviour = self.behaviour
        if behaviour == "429":
            return _error(429, "rate limited", {"Retry-After": "0"})
        if behaviour == "500" or (behaviour == "flaky" and len(self.requests) % 2 == 1):
            return _error(500, "internal error", {"Retry-After": "0"})
        if behaviour == "no-json-schema" and body.get("response_format", {}).get("type") == "json_schema":
            return _error(400, "Invalid parameter: response_format json_schema is not supported")
        if behaviour == "reset":
            assert request.transport is not None
            request.transport.abort()
            return web.Response()
        if behaviour == "slow":
            await asyncio.sleep(self.delay)
        if behaviour == "garbage":
            return web.Response(text="<html>upstream said no</html>", content_type="application/json")
        if behaviour.startswith("envelope-"):
            return web.json_response(_broken_envelope(behaviour))
        if behaviour == "wrong-schema":
            return _completion(body, json.dumps({"grade": 5, "verdict": "excellent"}))
        return _completion(body, json.dumps(self.verdicts(read_prompt(body))))

    async def start(self, port: int = 0) -> str:
        app = web.Application(client_max_size=4 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self.handle)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port)
        await site.start()
        bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{bound}/v1"
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


def _completion(body: dict[str, Any], content: str) -> web.Response:
    return web.json_response(
        {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "test"),
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
            ],
        }
    )


def _error(code: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(
        {"error": {"message": message, "type": "test", "code": code}}, status=code, headers=headers
    )


def _broken_envelope(kind: str) -> dict[str, Any]:
    base: dict[str, Any] = {"id": "x", "object": "chat.completion", "created": 0, "model": "m"}
    choice = {"index": 0, "finish_reason": "stop"}
    if kind == "envelope-string":
        base["choices"] = "present present present"
    elif kind == "envelope-empty-choice":
        base["choices"] = [{}]
    elif kind == "envelope-null-message":
        base["choices"] = [{**choice, "message": None}]
    elif kind == "envelope-number":
        base["choices"] = [{**choice, "message": {"role": "assistant", "content": 5}}]
    else:
        base["choices"] = [{**choice, "message": {"role": "assistant", "content": ["present"]}}]
    return base


class ServerThread:
    """A ``JudgeServer`` on its own event loop in a daemon thread, for synchronous callers
    (the CLI in-process or as a subprocess)."""

    def __init__(self, server: JudgeServer):
        self.server = server
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> JudgeServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(10)
        return self.server

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


def calibration_setup(server: JudgeServer, path: Any = None) -> None:
    """Labels and payloads from a calibration set (the default one unless ``path``): every
    answer with per-point labels is judged by them; in a set without them, expert answers are
    labelled with every core point present (grade 5: every point); an injected answer's
    payload is what it adds to its twin."""
    from cards.deck import default_deck
    from grader.calibration.eval import load_set

    deck = default_deck()
    examples = load_set(path) if path else load_set()
    by_id = {e.id: e for e in examples}
    for e in examples:
        if e.points is not None:
            server.labels[e.answer.strip()] = dict(e.points)
            server.asserted[e.answer.strip()] = list(e.misconceptions)
        elif e.kind == "expert" and e.card_id in deck:
            card = deck.get(e.card_id)
            server.labels[e.answer.strip()] = {
                p.id: "present" for p in card.key_points if p.core or e.grade == 5
            } | {p.id: "partial" for p in card.key_points if not p.core and e.grade == 4}
        if e.kind == "injection" and e.twin_of in by_id:
            server.payloads.append(e.answer[len(by_id[e.twin_of].answer) :].strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("behaviour", choices=BEHAVIOURS)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=5.0)
    parser.add_argument("--calibration", action="store_true", help="labels and payloads of the calibration set")
    parser.add_argument("--payload", action="append", default=[], help="an injected instruction to obey")
    args = parser.parse_args()
    server = JudgeServer(behaviour=args.behaviour, delay=args.delay, payloads=list(args.payload))
    if args.calibration:
        calibration_setup(server)

    async def serve() -> None:
        print(await server.start(args.port), flush=True)
        await asyncio.Event().wait()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
