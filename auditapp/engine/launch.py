"""What every paradigm's launch shares: the models chosen, the checks of a launch, structured output, and the
models as the manifest records them. A paradigm's own launch (its settings, its corpus) is in its package."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from auditapp import llm_clients, scorer_kinds
from auditapp.engine.errors import AuditError
from auditapp.engine.planning import audit_answer_schema
from auditapp.models import (
    Audit,
    AuditModel,
    LLMEndpoint,
)

MAX_REPLICATES = 100
MAX_PARALLEL_TASKS = 32
BIGINT_MAX = 2**63 - 1
# The engine's settings every launch shares, with the bounds the API and the admin's launch form both state. A seed
# is not negative: NumPy's generators, which draw the bootstrap resamples, take none.
ENGINE_BOUNDS: dict[str, tuple[int, int]] = {
    "replicates": (1, MAX_REPLICATES), "seed": (0, BIGINT_MAX), "parallel_tasks": (1, MAX_PARALLEL_TASKS),
    "error_budget": (0, 1)}


@dataclass(frozen=True)
class ModelChoice:
    endpoint: LLMEndpoint
    model: str
    params: dict = field(default_factory=dict)
    label: str = ""


def launch_problems(*, models: list[ModelChoice], replicates: int, error_budget: float,
                    other_scorers: int = 0, accepts: tuple[str, ...] = ("messages",)) -> list[str]:
    """What every paradigm's launch checks: at least one model (or another scorer the paradigm has, such as
    recorded scores), each model's endpoint of a kind the paradigm can ask (``accepts``: the payloads it builds,
    see ``scorer_kinds.takes``) with generation parameters only for chat models, no two models of one name in
    tables (the same model under two parameter sets or endpoints needs labels), the replicates, the error
    budget."""
    problems = [] if models or other_scorers else ["choose at least one model"]
    for choice in models:
        takes = scorer_kinds.takes(choice.endpoint.protocol)
        if takes not in accepts:
            # The endpoint's name, not its kind's long label too: "Local scorers (in the worker)" beside "Local
            # scorers in the worker (VADER, TextBlob; no server)" read as one garbled phrase.
            problems.append(f"endpoint {choice.endpoint.name!r} cannot be asked by this paradigm: the paradigm sends "
                            f"{' or '.join(accepts)}, the endpoint takes {takes}")
        elif choice.endpoint.listed_models and choice.model not in {
                entry["name"] for entry in choice.endpoint.listed_models}:
            # The preparation asks the endpoint again and would fail the audit seconds later: say it now.
            listed = sorted(entry["name"] for entry in choice.endpoint.listed_models)
            problems.append(f"endpoint {choice.endpoint.name!r} does not list model {choice.model!r} (it lists "
                            f"{', '.join(listed[:20])}{', …' if len(listed) > 20 else ''}); if the model was added "
                            f"since, list its models again (GET /api/endpoints/{choice.endpoint.id}/models/)")
        elif takes != "messages" and choice.params:
            problems.append(f"endpoint {choice.endpoint.name} is a scorer, not a chat model: it takes no generation "
                            f"parameters ({sorted(choice.params)})")
    named: dict[str, int] = {}
    for number, choice in enumerate(models, start=1):
        name = choice.label or choice.model
        if name in named:
            # Tables, charts and exports name a model by its label (or its name): two with one name would read
            # as one model, and the error analysis could not tell their strata apart by name.
            problems.append(f"models {named[name]} and {number} would both be named {name!r} in tables and exports: "
                            "give each a label")
        else:
            named[name] = number
    if not 1 <= replicates <= MAX_REPLICATES:
        problems.append(f"replicates must be between 1 and {MAX_REPLICATES}")
    if not 0 <= error_budget <= 1:
        problems.append("the error budget is a share between 0 and 1")
    return problems


def structured_output_problems(*, schema: dict | None, endpoints: Iterable[LLMEndpoint]) -> list[str]:
    """Why an audit cannot constrain its chat models' output: the paradigm declares no answer schema, or a chat
    endpoint has no structured-output form its protocol takes."""
    if schema is None:
        return ["this paradigm declares no answer schema: it cannot ask for structured output"]
    problems = []
    for endpoint in endpoints:
        if scorer_kinds.takes(endpoint.protocol) != "messages":
            continue
        problem = llm_clients.structured_output_problem(endpoint.protocol, endpoint.structured_output)
        if problem:
            problems.append(f"endpoint {endpoint.name} cannot constrain output: {problem}")
    return problems


def audit_structured_output_set(*, audit: Audit, enabled: bool) -> None:
    """Record whether a queued audit constrains its chat models' output (the launch's ``structured_output``);
    AuditError names every problem. Called in the launch's transaction, before its preparation is sent."""
    if not enabled:
        return
    audit.structured_output = True
    endpoints = {model.endpoint for model in audit.models.select_related("endpoint")}
    problems = structured_output_problems(schema=audit_answer_schema(audit), endpoints=sorted(
        endpoints, key=lambda endpoint: endpoint.name))
    if problems:
        raise AuditError("; ".join(problems))
    Audit.objects.filter(pk=audit.pk, status=Audit.Status.QUEUED).update(structured_output=True)


def audit_models_create(audit: Audit, models: list[ModelChoice]) -> None:
    """The audit's models, in the order chosen (their position)."""
    AuditModel.objects.bulk_create([
        AuditModel(audit=audit, endpoint=choice.endpoint, model=choice.model, params=choice.params,
                   label=choice.label, position=position) for position, choice in enumerate(models)])


def manifest_models(models: Iterable[AuditModel]) -> list[dict]:
    return [{"label": m.display_name, "model": m.model, "endpoint": m.endpoint.name, "protocol": m.endpoint.protocol,
             "base_url": m.endpoint.base_url, "params": m.params or "endpoint defaults", "digest": m.digest or None}
            for m in models]
