"""benchmarks/direct_peer.py and ``audit_throughput.py --vs direct``: the direct loop sends every request of the file
once, with the engine's bodies, against a real test server, and counts a reply equal only where it is the engine's."""
from __future__ import annotations

import argparse
import json

import httpx
import pytest

from benchmarks.direct_peer import requests_read, requests_write, shares
from benchmarks.lm_eval_peer import PeerRequest
from tests.llm_server import LLMServer

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def test_in_flight_requests_are_shared_out_within_one():
    assert shares(64, 3) == [22, 21, 21]
    assert shares(3, 3) == [1, 1, 1]
    assert sum(shares(65, 4)) == 65


def test_the_requests_file_gives_back_what_was_written(tmp_path):
    requests = [PeerRequest("model-a", [{"role": "user", "content": "Target sentence: «é»\nmore"}], '{"label": 1}'),
                PeerRequest("model-b", [{"role": "user", "content": "two"}], "")]

    assert requests_write(tmp_path / "requests.jsonl", requests) == 2
    assert requests_read(tmp_path / "requests.jsonl") == requests


def _reply(server: LLMServer, model: str, content: str) -> str:
    response = httpx.post(f"{server.base_url.rstrip('/')}/v1/chat/completions", timeout=10,
                          json={"model": model, "messages": [{"role": "user", "content": content}]})
    return response.json()["choices"][0]["message"]["content"]


def test_the_direct_loop_sends_each_request_once_and_counts_equal_replies(tmp_path, capsys):
    from benchmarks.audit_throughput import DirectPeer

    with LLMServer(latency=0.01) as server:
        prompts = [("model-a" if i % 2 else "model-b", f"Target sentence: sentence {i} is a burden") for i in range(40)]
        requests = [PeerRequest(model, [{"role": "user", "content": content}], _reply(server, model, content))
                    for model, content in prompts]
        # One stored reply that is not the server's: the loop must not count it as equal.
        requests[7] = PeerRequest(requests[7].model, requests[7].messages, "not what the server says")
        peer = DirectPeer(argparse.Namespace(concurrency=8, worker_concurrency=3, latency=0.01))
        peer.prepare(tmp_path, requests)

        figures = peer.run(server)
        stats = server.stats()

    printed = capsys.readouterr().out
    assert stats["requests"] == 40 and stats["by_status"] == {"200": 40}
    assert stats["max_in_flight"] <= 8
    assert "39 of 40" in printed
    assert 0 < figures.share <= 1.0 and figures.cpu_ms > 0


def test_a_run_the_server_did_not_fully_answer_prints_no_figure(tmp_path):
    from benchmarks.audit_throughput import DirectPeer

    with LLMServer(latency=0.0, models=["model-a"]) as server:
        requests = [PeerRequest("model-a", [{"role": "user", "content": "one"}], ""),
                    PeerRequest("no-such-model", [{"role": "user", "content": "two"}], "")]
        peer = DirectPeer(argparse.Namespace(concurrency=2, worker_concurrency=1, latency=0.05))
        peer.prepare(tmp_path, requests)

        with pytest.raises(SystemExit, match="some were not sent"):
            peer.run(server)


def test_the_direct_loop_prints_its_counts_as_one_json_line(tmp_path):
    import subprocess
    import sys

    from benchmarks.audit_throughput import REPO

    with LLMServer(latency=0.0) as server:
        requests_write(tmp_path / "requests.jsonl",
                       [PeerRequest("model-a", [{"role": "user", "content": f"text {i}"}], "") for i in range(5)])
        result = subprocess.run([sys.executable, "-m", "benchmarks.direct_peer", "--requests",
                                 str(tmp_path / "requests.jsonl"), "--base-url", server.base_url,
                                 "--concurrency", "4", "--processes", "2"],
                                cwd=REPO, capture_output=True, text=True, timeout=60, check=True)

    assert json.loads(result.stdout.strip().splitlines()[-1]) == {"sent": 5, "ok": 5, "equal": 0}
