"""The peer of ``benchmarks/audit_throughput.py --vs lm-eval``: lm-evaluation-harness sending an audit's requests.

lm-eval is never a requirement of the app: it runs from its own virtual environment (``--lm-eval-python``, the
Python of a venv where ``pip install "lm_eval[api]"`` was run; 0.4.13 needs no torch for API models), as its own
process, through its ``local-chat-completions`` model (aiohttp, ``num_concurrent`` requests in flight).

The requests are the audit's own: :func:`task_write` writes, per model, a JSON Lines file with each request's prompt
(its one user message, which lm-eval's chat template sends as the only message) and the reply the engine stored for
it, and a task YAML that sends every prompt to that model (the model is set in the task's generation arguments,
which lm-eval puts into the request body after its own fields) and scores lm-eval's reply against the engine's by
exact match: the test server's reply is a pure function of the model and the prompt, so 100% says both sent the same
requests. lm-eval's reply cache is off (it is on only with ``--use_cache``), and the caller checks that the server
counted every request.
"""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

TASK_PREFIX = "audit_throughput_"


@dataclass(frozen=True)
class PeerRequest:
    """One request as lm-eval sends it: the model, the chat messages and the reply the engine stored."""

    model: str
    messages: list[dict]
    reply: str


def task_name(model: str) -> str:
    return TASK_PREFIX + "".join(c if c.isalnum() else "_" for c in model)


def task_write(directory: Path, requests: Iterable[PeerRequest]) -> dict[str, int]:
    """Write one lm-eval task per model into ``directory`` (its JSON Lines data and its YAML); return each task's
    name and number of requests. Raises ValueError for a request that is not one user message: lm-eval's chat
    template builds the messages from one prompt, so it could not send the same request."""
    rows: dict[str, list[str]] = {}
    for request in requests:
        if len(request.messages) != 1 or request.messages[0].get("role") != "user":
            raise ValueError(f"a request to {request.model} is not one user message ({len(request.messages)} "
                             "messages): lm-eval would not send the same request")
        rows.setdefault(request.model, []).append(
            json.dumps({"prompt": request.messages[0]["content"], "reply": request.reply}, ensure_ascii=False))
    counts = {}
    for model, lines in rows.items():
        name = task_name(model)
        data = directory / f"{name}.jsonl"
        data.write_text("\n".join(lines) + "\n", encoding="utf-8")
        # JSON is YAML: no quoting rules to get wrong for the paths and the model's name.
        config = {"task": name, "dataset_path": "json", "dataset_kwargs": {"data_files": {"test": str(data)}},
                  "test_split": "test", "output_type": "generate_until", "doc_to_text": "prompt",
                  "doc_to_target": "reply", "generation_kwargs": {"model": model},
                  "metric_list": [{"metric": "exact_match", "aggregation": "mean", "higher_is_better": True}]}
        (directory / f"{name}.yaml").write_text(json.dumps(config, indent=1), encoding="utf-8")
        counts[name] = len(lines)
    return counts


def version(python: str) -> str:
    return subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('lm_eval'))"],
                          capture_output=True, text=True, check=True, timeout=60).stdout.strip()


def command(python: str, *, base_url: str, first_model: str, tasks: Iterable[str], directory: Path,
            output: Path, concurrency: int) -> list[str]:
    """lm-eval's command line: every task, ``concurrency`` requests in flight, no tokenizer (the server takes the
    messages), no reply cache (no ``--use_cache``)."""
    model_args = (f"model={first_model},base_url={base_url.rstrip('/')}/v1/chat/completions,"
                  f"num_concurrent={concurrency},max_retries=3,timeout=30,tokenized_requests=False,"
                  "tokenizer_backend=None")
    return [python, "-m", "lm_eval", "run", "--model", "local-chat-completions", "--model_args", model_args,
            "--tasks", ",".join(tasks), "--include_path", str(directory), "--apply_chat_template",
            "--output_path", str(output), "--verbosity", "WARNING"]


def environment(directory: Path) -> dict[str, str]:
    """lm-eval's environment: the Hugging Face libraries offline, their caches in the run's own folder."""
    variables = {name: value for name, value in os.environ.items()
                 if not name.startswith(("HF_", "OPENAI_", "DJANGO_", "DATABASE_", "CELERY_"))}
    return {**variables, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(directory / "hf"),
            "TOKENIZERS_PARALLELISM": "false"}


class CpuSampler:
    """A process's CPU (itself and its children), read every ``interval`` seconds with the wall clock, so the CPU
    spent between two instants the server reports (its first request, its last reply) can be read off.
    ``cpu_seconds`` returns None once the process is gone: that reading is not a sample."""

    def __init__(self, process, cpu_seconds, interval: float = 0.1):
        self.process, self.cpu_seconds, self.interval = process, cpu_seconds, interval
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            seconds = self.cpu_seconds(self.process)
            if seconds is None:
                return
            self.samples.append((time.time(), seconds))
            self._stop.wait(self.interval)

    def __enter__(self) -> CpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()

    def at(self, wall: float) -> float:
        """The CPU seconds at ``wall``, interpolated between the samples around it."""
        return cpu_at(self.samples, wall)


def cpu_at(samples: list[tuple[float, float]], wall: float) -> float:
    """CPU seconds at ``wall`` from (wall, CPU) samples in time order, interpolated linearly; the first or last
    sample's value outside them."""
    if not samples:
        raise ValueError("no CPU samples")
    if wall <= samples[0][0]:
        return samples[0][1]
    for (t0, c0), (t1, c1) in itertools.pairwise(samples):
        if t0 <= wall <= t1:
            return c0 if t1 == t0 else c0 + (c1 - c0) * (wall - t0) / (t1 - t0)
    return samples[-1][1]


def exact_matches(output: Path) -> dict[str, float]:
    """Each task's exact-match score from lm-eval's results file under ``output``."""
    results = sorted(output.rglob("results_*.json"))
    if not results:
        raise FileNotFoundError(f"lm-eval wrote no results under {output}")
    scores: Mapping[str, Mapping[str, float]] = json.loads(results[-1].read_text())["results"]
    return {task: values["exact_match,none"] for task, values in scores.items()}
