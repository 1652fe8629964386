"""Building a study with the full annotator flow, and answering it through the HTTP endpoints."""
from __future__ import annotations

import json
import re

import pandas as pd
from django.test import Client

from annotation.models import Item, Participant, Study
from annotation.participation import participants_invite
from psychometrics.models import Instrument, StudyInstrument

# Every IAT trial answered correctly at once: 500 ms in the prejudice-consistent pairing, 700 ms in the
# inconsistent one, 600 ms in single-category blocks.
LATENCY = {"consistent": 500.0, "inconsistent": 700.0, None: 600.0}


def flow_study(*, n_items: int = 6, items_per_annotator: int = 4, annotators_per_item: int = 2,
               iat: bool = True, attention_check: bool = True) -> Study:
    study = Study.objects.create(
        name="Flow", slug="flow", status=Study.Status.OPEN, iat_enabled=iat, content_warning="Some sentences hurt.",
        consent_text="You agree to take part.", items_per_annotator=items_per_annotator,
        annotators_per_item=annotators_per_item, completion_url="https://example.org/complete?cc=X")
    Item.objects.bulk_create([Item(study=study, external_id=f"i{n}", target=f"Target {n}.", preceding=f"Before {n}.",
                                   following=f"After {n}.", position=n) for n in range(n_items)])
    if attention_check:
        Item.objects.create(study=study, external_id="check", target="Please choose 'Not ableist' here.",
                            attention_check_answer=0, position=n_items)
    StudyInstrument.objects.create(study=study, instrument=Instrument.objects.get(slug="aq50"), position=0,
                                   role="aq", randomise_items=True)
    StudyInstrument.objects.create(study=study, instrument=Instrument.objects.get(slug="sata_partial"), position=1,
                                   role="sata")
    return study


def invite(study: Study, count: int = 1) -> list[Participant]:
    return participants_invite(study=study, count=count)


def page_config(html: str) -> dict:
    return json.loads(re.search(r'<script id="iat-config" type="application/json">(.*?)</script>', html, re.S).group(1))


def iat_block_posts(config: dict, *, modality: str = "keyboard") -> list[dict]:
    """The posts a participant makes for every block, answering correctly at the LATENCY of the pairing."""
    posts = []
    for block in config["blocks"]:
        trials = [{"index": t["index"], "stimulus": t["stimulus"], "first_key": t["correct_key"], "modality": modality,
                   "latency_first_ms": LATENCY[block["pairing"]], "latency_correct_ms": LATENCY[block["pairing"]]}
                  for t in block["trials"]]
        posts.append({"block": block["number"], "trials": trials})
    return posts


def consent_and_finish_questionnaires(client: Client, participant: Participant) -> str:
    """Consent and answer every questionnaire with the first option; returns the participant's base URL."""
    base = f"/p/{participant.invite_token}/"
    client.post(base + "consent/", {"consent": "yes"})
    for setting in participant.study.study_instruments.all():
        client.post(f"{base}questionnaire/{setting.instrument_id}/",
                    {f"item-{item.number}": 0 for item in setting.instrument.parsed.items})
    return base


def answer_everything(client: Client, participant: Participant, *, aq_choice: int = 0, sata_choice: int = 3,
                      label_value: int = 1) -> None:
    """Take the whole flow as a participant: consent, AQ (autosave), SATA (form), IAT, instructions, labels."""
    base = f"/p/{participant.invite_token}/"
    assert client.post(base + "consent/", {"consent": "yes"}).status_code == 302
    for slug, choice, autosave in (("aq50", aq_choice, True), ("sata_partial", sata_choice, False)):
        instrument = Instrument.objects.get(slug=slug)
        url = f"{base}questionnaire/{instrument.pk}/"
        page = client.get(url).content.decode()
        numbers = [int(n) for n in re.findall(r'data-item="(\d+)"', page)]
        if autosave:
            for n in numbers:
                response = client.post(url + "answer/", {"item": n, "response": choice, "rt_ms": 1234},
                                       content_type="application/json")
                assert response.status_code == 200, response.content
            assert client.post(url).status_code == 302
        else:
            assert client.post(url, {f"item-{n}": choice for n in numbers}).status_code == 302
    if participant.study.iat_enabled:
        config = page_config(client.get(base + "iat/").content.decode())
        for post in iat_block_posts(config):
            assert client.post(base + "iat/block/", post, content_type="application/json").status_code == 200
    assert client.post(base + "instructions/").status_code == 302
    while True:
        page = client.get(base + "label/")
        if page.status_code != 200:
            break
        item = int(re.search(r'name="item" value="(\d+)"', page.content.decode()).group(1))
        value = 0 if Item.objects.get(pk=item).attention_check_answer is not None else label_value
        client.post(base + "label/", {"item": item, "value": value, "rationale": "because"})


def trials_frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    frame["pairing"] = frame["pairing"].replace("", None)
    return frame


def labelling_study(*, n_items: int = 4, per_annotator: int = 3, per_item: int = 1, check: bool = False,
                    skipping: str = Study.Skipping.REASSIGN) -> Study:
    """A study whose flow is consent → instructions → labelling (no instruments, no IAT)."""
    study = Study.objects.create(name="Nav", slug="nav", status=Study.Status.OPEN, iat_enabled=False,
                                 items_per_annotator=per_annotator, annotators_per_item=per_item, skipping=skipping)
    Item.objects.bulk_create([Item(study=study, external_id=f"i{n}", target=f"Target {n}.", position=n)
                              for n in range(n_items)])
    if check:
        Item.objects.create(study=study, external_id="check", target="Choose 'Not ableist'.",
                            attention_check_answer=0, position=n_items)
    return study


def start_labelling(study: Study) -> tuple[Client, Participant, str]:
    (participant,) = participants_invite(study=study, count=1)
    client = Client()
    base = f"/p/{participant.invite_token}/"
    assert client.post(base + "consent/", {"consent": "yes"}).status_code == 302
    assert client.post(base + "instructions/").status_code == 302
    return client, participant, base + "label/"
