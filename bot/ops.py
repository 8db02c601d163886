"""Operations: Prometheus metrics, /healthz and /metrics, and structured logs without secrets."""

from __future__ import annotations

import json
import logging
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

REGISTRY = CollectorRegistry()
PUSHES = Counter("trapbot_pushes_total", "Daily pushes by outcome", ["platform", "outcome"], registry=REGISTRY)
PUSH_LAG = Histogram(
    "trapbot_push_lag_seconds",
    "Delay between a push's scheduled moment and its sending",
    buckets=(1, 5, 15, 30, 60, 120, 300, 900, 1800, 3600, 4 * 3600),
    registry=REGISTRY,
)
GRADING = Histogram(
    "trapbot_grading_seconds",
    "Time to grade one answer",
    ["grader"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40),
    registry=REGISTRY,
)
DUE_LEARNERS = Gauge("trapbot_due_learners", "Learners found due by the last sweep", registry=REGISTRY)

#: Log record fields that may carry user content or secrets and are never emitted.
_DROPPED = {"answer", "text", "token", "api_key", "args"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and safe extras."""

    _standard = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in self._standard and key not in _DROPPED:
                payload[key] = value if isinstance(value, (int, float, str, bool, type(None))) else repr(value)
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        return json.dumps(payload, ensure_ascii=False)


class SecretFilter(logging.Filter):
    """Masks configured secrets wherever they would appear in a log line."""

    def __init__(self, secrets: list[str]):
        super().__init__()
        self.secrets = [s for s in secrets if s and len(s) >= 8]

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            message = record.getMessage()
            masked = message
            for secret in self.secrets:
                masked = masked.replace(secret, "***")
            if masked != message:
                record.msg, record.args = masked, None
        return True


async def start_ops_server(port: int, host: str = "0.0.0.0"):
    """Serve ``/healthz`` and ``/metrics`` on ``port``; returns the runner to clean up."""
    from aiohttp import web

    async def healthz(_request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(REGISTRY), headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.add_routes([web.get("/healthz", healthz), web.get("/metrics", metrics)])
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
