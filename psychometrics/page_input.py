"""What the instrument and IAT pages send, checked at the boundary with the shared checks of
:mod:`common.participant_input` (pure, no Django): an autosaved questionnaire answer and a finished IAT block."""
from __future__ import annotations

from dataclasses import dataclass

from common.participant_input import MAX_ID, InputError, PageWrite, finite_number, json_object, page_write, whole_number
from psychometrics.iat import MODALITIES

# A questionnaire page left open for a day is still an answer; beyond that the clock is not measuring one.
MAX_ANSWER_TIME_MS = 24 * 60 * 60 * 1000
# An IAT trial waits for a key press; one hour is far beyond any real trial (the D algorithm already drops
# trials over 10 s) but still a number the analysis can take.
MAX_IAT_LATENCY_MS = 60 * 60 * 1000


@dataclass(frozen=True)
class QuestionnaireAnswer:
    item: int
    response: int
    rt_ms: float | None
    page: PageWrite


def questionnaire_answer(body: bytes) -> QuestionnaireAnswer:
    """An autosaved answer ``{"item": n, "response": i, "rt_ms": t, "writer": page id, "seq": k}``; ``rt_ms`` may
    be absent or null, ``writer`` and ``seq`` absent (:func:`page_write`)."""
    data = json_object(body)
    if "item" not in data or "response" not in data:
        raise InputError("body", "needs 'item' and 'response'")
    rt_ms = data.get("rt_ms")
    return QuestionnaireAnswer(
        item=whole_number(data["item"], field="item", minimum=1),
        response=whole_number(data["response"], field="response", maximum=1000),
        rt_ms=None if rt_ms is None else finite_number(rt_ms, field="rt_ms", minimum=0, maximum=MAX_ANSWER_TIME_MS),
        page=page_write(data))


@dataclass(frozen=True)
class IATBlockPost:
    block: int
    trials: list[dict]


def iat_block_post(body: bytes) -> IATBlockPost:
    """A finished IAT block ``{"block": n, "trials": [{stimulus, first_key, modality, latency_first_ms,
    latency_correct_ms}, ...]}``, each trial an object with finite latencies in range (ms) and the way it was
    answered, "keyboard" or "touch" (required: an unknown modality is refused, never guessed)."""
    data = json_object(body)
    if "block" not in data or "trials" not in data:
        raise InputError("body", "needs 'block' and 'trials'")
    # Which blocks exist is the design's business (the service answers "there is no block 9").
    block = whole_number(data["block"], field="block", minimum=-MAX_ID, maximum=MAX_ID)
    if not isinstance(data["trials"], list):
        raise InputError("trials", "must be a list of trials")
    trials = []
    for n, trial in enumerate(data["trials"]):
        where = f"trials[{n}]"
        if not isinstance(trial, dict):
            raise InputError(where, "must be an object")
        for key in ("stimulus", "first_key"):
            if not isinstance(trial.get(key), str):
                raise InputError(f"{where}.{key}", "must be a text")
        if trial.get("modality") not in MODALITIES:
            raise InputError(f"{where}.modality", f"must be one of {', '.join(MODALITIES)}")
        latencies = {key: finite_number(trial.get(key), field=f"{where}.{key}", minimum=0,
                                        maximum=MAX_IAT_LATENCY_MS)
                     for key in ("latency_first_ms", "latency_correct_ms")}
        trials.append({**trial, **latencies})
    return IATBlockPost(block, trials)
