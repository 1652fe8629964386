"""Collect real model replies to the paradigms' prompts, for the readers' case tables (tests/data/real_replies/).

Sends, one request at a time, the prompts the audits send (the paper's, as the app builds them) to an
OpenAI-compatible chat server, and prints one CSV row per reply: reader, prompt, reply, finish reason. The
"human" column is left empty: a person reads each reply and writes what it says (docs/developer/testing.md,
"Readers against real replies"). Which prompts: the AAT's two-turn Q2 (after the model's own description) and its
single prompt, the WABT, seed 000's zero-shot classification of the demo study's sentences, and a names batch.

    python benchmarks/real_replies.py --base-url http://127.0.0.1:8090 --model smollm2 --per-reader 20 > replies.csv

A local model: see docs/operations.md, "A real local model".
"""
from __future__ import annotations

import argparse
import csv
import os
import sys
from pathlib import Path

import django
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
django.setup()

from auditapp.paradigms.classification.prompts import DEFAULT_TEMPLATES, render  # noqa: E402
from auditapp.paradigms.counterfactual.prompt import BatchPrompt  # noqa: E402
from auditapp.paradigms.implicit_bias.generation import generate_aat, generate_wabt  # noqa: E402
from auditapp.paradigms.names.adapter import FLAVOUR as NAMES  # noqa: E402
from auditapp.paradigms.names.design import NamesDesign  # noqa: E402

DEMO_ITEMS = Path(__file__).resolve().parents[1] / "annotation" / "demo" / "demo_items.csv"


def chat(client: httpx.Client, model: str, messages: list[dict], max_tokens: int) -> tuple[str, str]:
    response = client.post("/v1/chat/completions", json={"model": model, "messages": messages,
                                                          "max_tokens": max_tokens, "temperature": 0})
    response.raise_for_status()
    choice = response.json()["choices"][0]
    return choice["message"]["content"] or "", choice.get("finish_reason") or ""


def aat_two_turn(client, model, n):
    for instance in generate_aat(form="two_turn", combinations=n)[:n]:
        description, _ = chat(client, model, [{"role": "user", "content": instance.texts[0]}], 120)
        messages = [{"role": "user", "content": instance.texts[0]}, {"role": "assistant", "content": description},
                    {"role": "user", "content": instance.texts[1]}]
        yield "aat_two_turn", instance.texts[1], *chat(client, model, messages, 60)


def aat_single_prompt(client, model, n):
    for instance in generate_aat(form="single_prompt", combinations=n)[:n]:
        yield "aat_single_prompt", instance.texts[0], *chat(client, model, [{"role": "user",
                                                                             "content": instance.texts[0]}], 160)


def wabt(client, model, n):
    for instance in generate_wabt(samples_per_combination=1)[:n]:
        yield "wabt", instance.texts[0], *chat(client, model, [{"role": "user", "content": instance.texts[0]}], 160)


def classification(client, model, n):
    with DEMO_ITEMS.open(encoding="utf-8") as items:
        for row in list(csv.DictReader(items))[:n]:
            prompt = render(DEFAULT_TEMPLATES["zs"], preceding=row["preceding"], target=row["sentence"],
                            following=row["following"])
            yield "classification", prompt, *chat(client, model, [{"role": "user", "content": prompt}], 128)


def names(client, model, n):
    units, _ = NAMES.units_of(None, {})
    design = NamesDesign.from_audit(units, seed=0, settings={"pairs_per_iteration": 5})
    prompt = BatchPrompt()
    for iteration in range(n):
        task = design.tasks[iteration % len(design.tasks)]
        texts = design.texts(iteration, task.slug)
        messages = prompt.messages(task.description, texts)
        yield "names", messages[0]["content"], *chat(client, model, messages, 200)


READERS = {"aat_two_turn": aat_two_turn, "aat_single_prompt": aat_single_prompt, "wabt": wabt,
           "classification": classification, "names": names}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--per-reader", type=int, default=20)
    parser.add_argument("--readers", nargs="*", default=list(READERS), choices=list(READERS))
    args = parser.parse_args(argv)
    writer = csv.writer(sys.stdout)
    writer.writerow(["reader", "prompt", "reply", "finish_reason", "human"])
    with httpx.Client(base_url=args.base_url, timeout=300) as client:
        for reader in args.readers:
            for row in READERS[reader](client, args.model, args.per_reader):
                writer.writerow([*row, ""])
                sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
