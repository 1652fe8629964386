"""benchmarks/lm_eval_peer.py: the task lm-eval is given holds the audit's own requests, lm-eval's command line has
no reply cache, and the CPU between two instants is read off the samples. lm-eval itself is not installed here (it
runs from its own venv: ``benchmarks/audit_throughput.py --vs lm-eval``)."""
from __future__ import annotations

import json

import pytest

from benchmarks.lm_eval_peer import PeerRequest, command, cpu_at, exact_matches, task_name, task_write


def test_each_model_gets_a_task_with_its_prompts_and_the_engines_replies_in_order(tmp_path):
    requests = [PeerRequest("model-a", [{"role": "user", "content": "Target sentence: one"}], '{"label": 1}'),
                PeerRequest("model-b", [{"role": "user", "content": "Target sentence: one"}], "0 - neutral"),
                PeerRequest("model-a", [{"role": "user", "content": "Target sentence: «two»\nmore"}], "")]

    counts = task_write(tmp_path, requests)

    assert counts == {"audit_throughput_model_a": 2, "audit_throughput_model_b": 1}
    rows = [json.loads(line) for line in (tmp_path / "audit_throughput_model_a.jsonl").read_text().splitlines()]
    assert rows == [{"prompt": "Target sentence: one", "reply": '{"label": 1}'},
                    {"prompt": "Target sentence: «two»\nmore", "reply": ""}]
    config = json.loads((tmp_path / "audit_throughput_model_b.yaml").read_text())  # JSON is YAML
    assert config["task"] == "audit_throughput_model_b"
    assert config["generation_kwargs"] == {"model": "model-b"}  # lm-eval puts it into the body after its own
    assert config["doc_to_text"] == "prompt" and config["doc_to_target"] == "reply"
    assert config["dataset_kwargs"]["data_files"]["test"] == str(tmp_path / "audit_throughput_model_b.jsonl")
    assert config["metric_list"][0]["metric"] == "exact_match"


def test_a_request_lm_eval_could_not_send_as_it_is_refused(tmp_path):
    two_messages = [{"role": "system", "content": "You are a rater."}, {"role": "user", "content": "Rate this."}]

    with pytest.raises(ValueError, match="not one user message"):
        task_write(tmp_path, [PeerRequest("model-a", two_messages, "")])


def test_the_command_sends_through_local_chat_completions_without_a_reply_cache(tmp_path):
    argv = command("/venvs/lmeval/bin/python", base_url="http://127.0.0.1:8000/", first_model="model-a",
                   tasks=["audit_throughput_model_a", "audit_throughput_model_b"], directory=tmp_path,
                   output=tmp_path / "out", concurrency=64)

    assert argv[:5] == ["/venvs/lmeval/bin/python", "-m", "lm_eval", "run", "--model"]
    assert argv[argv.index("--model") + 1] == "local-chat-completions"
    model_args = dict(pair.split("=", 1) for pair in argv[argv.index("--model_args") + 1].split(","))
    assert model_args["base_url"] == "http://127.0.0.1:8000/v1/chat/completions"
    assert model_args["num_concurrent"] == "64" and model_args["tokenizer_backend"] == "None"
    assert argv[argv.index("--tasks") + 1] == "audit_throughput_model_a,audit_throughput_model_b"
    assert "--use_cache" not in argv and "--cache_requests" not in argv


def test_task_names_keep_only_letters_and_digits_of_the_model():
    assert task_name("org/llama-3.1:8b") == "audit_throughput_org_llama_3_1_8b"


def test_cpu_between_two_instants_is_interpolated_between_samples():
    samples = [(10.0, 1.0), (10.5, 2.0), (11.0, 4.0)]

    assert cpu_at(samples, 10.25) == pytest.approx(1.5)
    assert cpu_at(samples, 10.75) == pytest.approx(3.0)
    assert cpu_at(samples, 9.0) == 1.0 and cpu_at(samples, 12.0) == 4.0
    with pytest.raises(ValueError, match="no CPU samples"):
        cpu_at([], 10.0)


def test_exact_matches_are_read_from_the_newest_results_file(tmp_path):
    (tmp_path / "model-a").mkdir()
    (tmp_path / "model-a" / "results_2026-01-01T00-00-00.json").write_text(json.dumps(
        {"results": {"audit_throughput_model_a": {"alias": "a", "exact_match,none": 0.5}}}))
    (tmp_path / "model-a" / "results_2026-01-02T00-00-00.json").write_text(json.dumps(
        {"results": {"audit_throughput_model_a": {"alias": "a", "exact_match,none": 1.0}}}))

    assert exact_matches(tmp_path) == {"audit_throughput_model_a": 1.0}
    with pytest.raises(FileNotFoundError):
        exact_matches(tmp_path / "empty")


def test_the_sampler_stops_once_the_process_is_gone():
    from benchmarks.lm_eval_peer import CpuSampler

    readings = iter([1.0, 2.0, None, 9.0])

    with CpuSampler(object(), lambda process: next(readings), interval=0.001) as sampler:
        sampler._thread.join(timeout=5)

    assert [seconds for _, seconds in sampler.samples] == [1.0, 2.0]
