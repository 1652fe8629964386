"""The peer of ``benchmarks/audit_throughput.py --vs direct``: the least any client can do to send an audit's
requests, so the engine's share of capacity can be read against what the machine itself allows.

A share of the endpoint's capacity counts against an ideal no client reaches: each reply also waits for the test
server's event loop, the kernel's loopback and the client's own loop, on cores the server shares. The direct loop
measures that floor. It sends the audit's own requests (each one's model and messages, the body built by
:func:`auditapp.llm_clients.chat_payload` as the engine builds it) through the engine's own session
(:func:`auditapp.llm_clients.chat_session`) on the engine's event loop (uvloop) from ``--processes`` processes,
each holding its share of ``--concurrency`` requests in flight, as the engine's worker processes do, and does
nothing else: no database, no Redis, no limiter, no retries, nothing stored. Each reply's text is compared with the
one the engine stored (the server's reply is a pure function of the model and the prompt), so equal replies show
both sent the same requests.

Run by the benchmark as its own process (``python -m benchmarks.direct_peer --requests FILE --base-url URL``); it
prints one JSON line: requests sent, answered with 200, and equal to the engine's replies.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import sys
from collections.abc import Iterable
from pathlib import Path

import uvloop

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from auditapp import llm_clients  # noqa: E402 - the repository is put on the path first
from benchmarks.lm_eval_peer import PeerRequest  # noqa: E402


def requests_write(path: Path, requests: Iterable[PeerRequest]) -> int:
    """The requests as JSON Lines (model, messages, the engine's reply); return how many."""
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for request in requests:
            out.write(json.dumps({"model": request.model, "messages": request.messages, "reply": request.reply},
                                 ensure_ascii=False) + "\n")
            count += 1
    return count


def requests_read(path: Path) -> list[PeerRequest]:
    with path.open(encoding="utf-8") as lines:
        return [PeerRequest(**json.loads(line)) for line in lines]


def shares(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` whole shares that differ by at most one, the larger first."""
    return [total // parts + (1 if part < total % parts else 0) for part in range(parts)]


async def send_all(base_url: str, requests: list[PeerRequest], concurrency: int) -> dict[str, int]:
    """Send every request with ``concurrency`` in flight; count the 200s and the replies equal to the engine's."""
    pending = iter(requests)
    counts = {"sent": 0, "ok": 0, "equal": 0}
    config = llm_clients.EndpointConfig(base_url=base_url, protocol="openai")
    async with llm_clients.chat_session(concurrency) as session:
        async def sender() -> None:
            for request in pending:
                path, payload = llm_clients.chat_payload("openai", request.model, request.messages, {})
                async with session.post(config.url(path), data=json.dumps(payload).encode(),
                                        headers=config.json_headers()) as response:
                    content = await response.read()
                counts["sent"] += 1
                if response.status == 200:
                    counts["ok"] += 1
                    counts["equal"] += llm_clients.parse_chat_reply("openai", content).text == request.reply

        await asyncio.gather(*(sender() for _ in range(concurrency)))
    return counts


def _process(base_url: str, requests: list[PeerRequest], concurrency: int, results) -> None:
    results.put(uvloop.run(send_all(base_url, requests, concurrency)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=Path, required=True, help="the JSON Lines file of requests_write")
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--processes", type=int, default=3)
    args = parser.parse_args(argv)
    if not 1 <= args.processes <= args.concurrency:
        parser.error("--processes is between 1 and --concurrency")
    requests = requests_read(args.requests)
    results: multiprocessing.Queue = multiprocessing.Queue()
    processes = [multiprocessing.Process(target=_process, args=(args.base_url, requests[part::args.processes],
                                                                 in_flight, results))
                 for part, in_flight in enumerate(shares(args.concurrency, args.processes))]
    for process in processes:
        process.start()
    counts = [results.get() for _ in processes]
    for process in processes:
        process.join()
    print(json.dumps({key: sum(part[key] for part in counts) for key in ("sent", "ok", "equal")}), flush=True)


if __name__ == "__main__":
    main()
