"""From nothing to every paradigm's tables through the REST API alone: a study with items, its instruments and
its annotators' scores, a weighted ground truth, then an audit of each of the seven paradigms against a chat
model, and every audit's tables downloaded as CSV. The suite runs this file against its test LLM server
(tests/integration/test_api_walkthrough.py), so it stays true.

    python docs/examples/api_walkthrough.py --base-url http://127.0.0.1:8000 --token $TOKEN \\
        --llm-url http://127.0.0.1:8090 --model smollm2 --out tables/

Needs only httpx (``pip install httpx``). Every audit is kept small (a few dozen requests each); a real study
uses the defaults. The token is a researcher's (``bin/run`` prints the demo one).
"""
from __future__ import annotations

import argparse
import csv
import io
import random
import sys
import time
from pathlib import Path

import httpx

FINISHED = {"completed", "failed", "stopped"}


def wait(client: httpx.Client, url: str, done, *, timeout: float, what: str) -> dict:
    """GET ``url`` every half second until ``done(body)``; the body."""
    deadline = time.monotonic() + timeout
    while True:
        body = client.get(url).raise_for_status().json()
        if done(body):
            return body
        if time.monotonic() > deadline:
            raise SystemExit(f"{what}: still not done after {timeout:.0f} s: {body}")
        time.sleep(0.5)


def items_csv(n_items: int) -> bytes:
    """AUTALIC's shape: id, sentence and three annotators' 0/1 labels (random here: a stand-in for your file)."""
    rng = random.Random(0)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["id", "sentence", "A1_Score", "A2_Score", "A3_Score"])
    for i in range(n_items):
        writer.writerow([f"s{i}", f"Sentence number {i} about a neighbour.", *(rng.randint(0, 1) for _ in range(3))])
    return out.getvalue().encode()


SCORES_CSV = b"annotator,AQ_total,SATA_total\nA1,36,18\nA2,20,10\nA3,28,16\n"


def walk(client: httpx.Client, *, llm_url: str, model: str, out: Path, timeout: float) -> dict[str, list[str]]:
    root = client.get("/api/").raise_for_status().json()
    urls = {name: resource["url"] for name, resource in root["resources"].items()}

    # A study, its items (with the annotators' labels), its instruments and the annotators' scores.
    study = client.post(urls["studies"], json={"slug": "walkthrough", "name": "API walkthrough"}).raise_for_status()
    study_id = study.json()["id"]
    upload = client.post(f"/api/studies/{study_id}/imports/", files={"file": ("items.csv", items_csv(40))})
    upload.raise_for_status()
    wait(client, f"/api/imports/{upload.json()['id']}/", lambda body: body["status"] != "pending",
         timeout=timeout, what="the item import")
    instruments = {row["slug"]: row["id"] for row in client.get(urls["instruments"]).raise_for_status().json()["results"]}
    client.put(f"/api/studies/{study_id}/instruments/", json={"instruments": [
        {"instrument": instruments["aq50"], "role": "aq"},
        {"instrument": instruments["sata_partial"], "role": "sata"}]}).raise_for_status()
    client.post(f"/api/studies/{study_id}/annotator-imports/",
                data={"kind": "scores", "columns": "aq=AQ_total, sata=SATA_total"},
                files={"file": ("scores.csv", SCORES_CSV)}).raise_for_status()
    # The import asked for the trust weights and the ground truth to be computed again; wait for them.
    analysis = wait(client, f"/api/studies/{study_id}/analysis/", lambda body: body["state"] in ("done", "failed"),
                    timeout=timeout, what="the study's analysis")
    if analysis["state"] == "failed":
        raise SystemExit(f"the study's analysis failed: {analysis.get('error')}")

    # The model to audit, and an in-process scorer for BITS.
    chat = client.post(urls["endpoints"], json={"name": "chat model", "protocol": "openai", "base_url": llm_url,
                                                "max_concurrency": 4}).raise_for_status().json()
    local = client.post(urls["endpoints"], json={"name": "local scorers", "protocol": "local",
                                                 "base_url": ""}).raise_for_status().json()
    models = [{"endpoint": chat["id"], "model": model, "params": {"max_tokens": 200}}]
    launches = {
        "classification": {"study": study_id, "conditions": ["zs", "cot"], "n_resamples": 200},
        "self_report": {"instruments": [instruments["aq50"]], "mode": "batch"},
        "names": {"material": {"tasks": ["warm", "competent"]}, "iterations": 2, "pairs_per_iteration": 5},
        "dialect": {"iterations": 2},
        "word_association": {"samples_per_combination": 1},
        "affective_attribution": {"combinations": 10, "form": "single_prompt"},
        "bits": {"models": [{"endpoint": local["id"], "model": "vader"}]},
    }
    audits = {}
    for paradigm in (entry["name"] for entry in root["paradigms"]):
        body = {"paradigm": paradigm, "name": f"walkthrough {paradigm}", "models": models, **launches[paradigm]}
        audits[paradigm] = client.post(urls["audits"], json=body).raise_for_status().json()["id"]

    downloaded: dict[str, list[str]] = {}
    for paradigm, audit_id in audits.items():
        audit = wait(client, f"/api/audits/{audit_id}/", lambda body: body["status"] in FINISHED, timeout=timeout,
                     what=f"the {paradigm} audit")
        if audit["status"] != "completed":
            raise SystemExit(f"the {paradigm} audit ended {audit['status']}: {audit.get('status_reason')}")
        folder = out / paradigm
        folder.mkdir(parents=True, exist_ok=True)
        for table in client.get(f"/api/audits/{audit_id}/tables/").raise_for_status().json():
            response = client.get(f"/api/audits/{audit_id}/tables/{table['name']}/", params={"format": "csv"})
            (folder / f"{table['name']}.csv").write_bytes(response.raise_for_status().content)
            downloaded.setdefault(paradigm, []).append(table["name"])
    return downloaded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--llm-url", required=True, help="an OpenAI-compatible server the app may reach")
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", type=Path, default=Path("tables"))
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args(argv)
    with httpx.Client(base_url=args.base_url, headers={"Authorization": f"Token {args.token}"},
                      timeout=60) as client:
        downloaded = walk(client, llm_url=args.llm_url, model=args.model, out=args.out, timeout=args.timeout)
    for paradigm, tables in downloaded.items():
        print(f"{paradigm}: {', '.join(tables)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
