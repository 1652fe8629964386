"""A small HTTP JSON scoring service for tests: the standard library's threaded HTTP server on 127.0.0.1, in a
thread of the test process, answering ``POST`` bodies shaped like :data:`REQUEST_TEMPLATE` with a
Perspective-shaped reply whose score (:data:`SCORE_PATH`) is :func:`expected_score` of the text.

Faults are injected per text, in order: ``server.inject("a text", status(500), GARBAGE)`` makes the first
request for that text answer 500, the second garbage, and the later ones normally. With ``api_key`` set, a
request without ``Authorization: Bearer <key>`` is answered 401.
"""
from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REQUEST_TEMPLATE = {"comment": {"text": "{{text}}"}, "languages": ["en"], "requestedAttributes": {"SENTIMENT": {}}}
SCORE_PATH = "attributeScores.SENTIMENT.summaryScore.value"
SCALE = (-1.0, 1.0)


def expected_score(text: str) -> float:
    """The score the server gives a text: a value in [-1, 1] drawn from the text's sha256."""
    return round(int.from_bytes(hashlib.sha256(text.encode()).digest()[:2]) / 65535 * 2 - 1, 4)


def reply_with(value: object) -> bytes:
    return json.dumps({"attributeScores": {"SENTIMENT": {"summaryScore": {"value": value, "type": "STD"}}}}).encode()


@dataclass(frozen=True)
class Fault:
    """How one request is answered instead of normally: a status and body, a delay, or a dropped connection."""

    status: int = 200
    body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0
    drop: bool = False


def status(code: int, *, retry_after: str | None = None, message: str = "scorer unavailable") -> Fault:
    return Fault(status=code, body=json.dumps({"error": {"message": message}}).encode(),
                 headers=(("Retry-After", retry_after),) if retry_after is not None else ())


def slow(seconds: float) -> Fault:
    """The normal reply, after ``seconds``."""
    return Fault(delay=seconds)


GARBAGE = Fault(body=b"<html><body>502 Bad Gateway</body></html>")
OUT_OF_SCALE = Fault(body=reply_with(7.5))
MISSING_SCORE = Fault(body=json.dumps({"attributeScores": {}}).encode())
DROP = Fault(drop=True)


@dataclass(frozen=True)
class Seen:
    path: str
    headers: dict[str, str]
    body: object


class _QuietServer(ThreadingHTTPServer):
    """Says nothing when a client that gave up (a test's attempt timeout) is no longer there to read a slow reply."""

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class ScoringServer:
    """The server, as a context manager: ``url`` while inside; ``seen`` lists every request received."""

    def __init__(self, *, api_key: str | None = None):
        self.api_key = api_key
        self.seen: list[Seen] = []
        self._faults: dict[str, deque[Fault]] = defaultdict(deque)
        self._lock = threading.Lock()
        self._server: _QuietServer | None = None

    def inject(self, text: str, *faults: Fault) -> None:
        with self._lock:
            self._faults[text].extend(faults)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1/score"

    def requests_for(self, text: str) -> int:
        return sum(1 for seen in self.seen if isinstance(seen.body, dict) and seen.body["comment"]["text"] == text)

    def _next_fault(self, text: str) -> Fault | None:
        with self._lock:
            queue = self._faults.get(text)
            return queue.popleft() if queue else None

    def __enter__(self) -> ScoringServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format, *args):  # the test output stays readable
                return

            def _send(self, code: int, body: bytes, headers=()) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw
                server.seen.append(Seen(self.path, dict(self.headers), body))
                if server.api_key and self.headers.get("Authorization") != f"Bearer {server.api_key}":
                    self._send(401, json.dumps({"error": {"message": "missing or wrong API key"}}).encode())
                    return
                text = body["comment"]["text"] if isinstance(body, dict) else ""
                fault = server._next_fault(text) or Fault()
                if fault.drop:
                    self.close_connection = True
                    return
                time.sleep(fault.delay)
                self._send(fault.status, fault.body if fault.body is not None else reply_with(expected_score(text)),
                           fault.headers)

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False  # a slow reply the client gave up on does not hold the test
        # shutdown() waits for the loop's next poll: the default half second, on every test that uses the server.
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._server.shutdown()
        self._server.server_close()
