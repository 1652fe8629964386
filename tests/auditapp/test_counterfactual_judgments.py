"""The counterfactual audits' judgment reader (auditapp.paradigms.counterfactual.judgments): one row per stored
judgment joined to its request, and the failed requests; on PostgreSQL the COPY reader and the values_list reader
give equal frames."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from django.db import connection, transaction

from auditapp.engine import bulk_read
from auditapp.engine import judgments as engine_judgments
from auditapp.engine.protocol import Judgment, ParsedReply
from auditapp.models import Audit, AuditModel, AuditRequest, LLMEndpoint
from auditapp.paradigms.counterfactual import judgments as reader

TASKS = ("leader", "wealthy")
ODD_UNIT = '7:pair, "quoted":AAVE'
ODD_REASON = 'refused, "as a policy"'


def build_audit() -> tuple[int, list[tuple], list[tuple]]:
    """2 models × 2 tasks × 3 iterations. Each answered request has 4 judgments: labels 0 and 1, one missing
    (index absent), one refused with a reason holding a comma and quotes, on a unit holding them too. One request
    failed, one is still pending. Returns (audit id, expected judgment rows, expected failed rows)."""
    endpoint = LLMEndpoint.objects.create(name="judgments", base_url="http://127.0.0.1:9/v1")
    audit = Audit.objects.create(name="judgments")
    models = [AuditModel.objects.create(audit=audit, endpoint=endpoint, model=f"annotator-{m}", position=m)
              for m in range(2)]
    requests = AuditRequest.objects.bulk_create([
        AuditRequest(audit=audit, audit_model=model, condition=task, unit=f"iteration:{k}", order=n,
                     key=f"{model.id}{task}{k}")
        for n, (model, task, k) in enumerate((model, task, k) for model in models for task in TASKS
                                             for k in range(3))])
    failed, answered = requests[0], requests[2:]  # requests[1] stays pending
    AuditRequest.objects.filter(pk=failed.pk).update(state=AuditRequest.State.FAILED, error="HTTP 500: boom")
    expected, judged = [], []
    for request in answered:
        label = request.id % 2
        units = [("1:0:minority", "label", label, ""), ("2:0:reference", "label", 1 - label, ""),
                 ("3:1:minority", "unparseable", None, "index absent"), (ODD_UNIT, "refusal", None, ODD_REASON)]
        judged.append((request.id, ParsedReply(outcome="label", judgments=tuple(
            Judgment(unit=unit, outcome=outcome, label=value, reason=reason) for unit, outcome, value, reason in units))))
        k = int(request.unit.split(":")[1])
        expected += [(request.id, request.audit_model_id, request.condition, k, unit,
                      np.nan if value is None else float(value), reason)
                     for unit, _, value, reason in units]
    with transaction.atomic():
        engine_judgments.judgments_create(audit.id, judged)
    return audit.id, expected, [(failed.id, failed.audit_model_id, failed.condition, 0, "HTTP 500: boom")]


def expected_frame(rows: list[tuple]) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(rows, columns=list(reader.JUDGMENT_COLUMNS))
    frame = frame.astype({"request_id": "int64", "model_id": "int64", "iteration": "int64", "label": "float64"})
    for column in reader.CATEGORY_COLUMNS:
        frame[column] = pd.Categorical(frame[column], categories=sorted(set(frame[column])))
    return frame


def in_order(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(["request_id", "unit"]).reset_index(drop=True)


def readers() -> list:
    found = [reader._judgments_frame_values]
    if connection.vendor == "postgresql":
        found.append(reader._judgments_frame_copy)
    return found


@pytest.mark.django_db
def test_every_judgment_is_a_row_joined_to_its_request_with_missing_labels_as_nan():
    audit_id, rows, _ = build_audit()
    frame = reader.judgments_frame(audit_id)
    assert list(frame.columns) == list(reader.JUDGMENT_COLUMNS)
    assert frame.dtypes.astype(str).to_dict() == {
        "request_id": "int64", "model_id": "int64", "task": "category", "iteration": "int64", "unit": "category",
        "label": "float64", "reason": "category"}
    # 10 answered requests × 4 judgments; the failed and the pending request have none.
    assert len(frame) == 40
    pd.testing.assert_frame_equal(in_order(frame), in_order(expected_frame(rows)))
    assert frame["label"].isna().sum() == 20
    assert list(frame["reason"].cat.categories) == ["", "index absent", ODD_REASON]


@pytest.mark.django_db
def test_both_readers_give_equal_frames():
    audit_id, _, _ = build_audit()
    frames = [in_order(read(audit_id)) for read in readers()]
    for frame in frames[1:]:
        pd.testing.assert_frame_equal(frame, frames[0])
    if connection.vendor != "postgresql":
        pytest.skip("the COPY reader is PostgreSQL's (the values_list reader was checked)")


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_copy_is_read_by_asyncpg_and_gives_the_same_frame(monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("the COPY reader is PostgreSQL's")
    audit_id, rows, _ = build_audit()
    through_django = []
    monkeypatch.setattr(bulk_read, "_copy_through_django",
                        lambda sql, read=bulk_read._copy_through_django: through_django.append(sql) or read(sql))
    frame = reader.judgments_frame(audit_id)
    assert through_django == []  # committed rows, read on asyncpg's own connection
    pd.testing.assert_frame_equal(in_order(frame), in_order(expected_frame(rows)))
    with transaction.atomic():
        pd.testing.assert_frame_equal(in_order(reader.judgments_frame(audit_id)), in_order(frame))
    assert len(through_django) == 1  # inside a transaction: Django's connection, which sees its uncommitted rows


@pytest.mark.django_db(transaction=True)
def test_a_database_asyncpg_cannot_reach_is_an_operational_error_the_analysis_retries(monkeypatch):
    from django.db import OperationalError

    from auditapp.engine.errors import TRANSIENT_ERRORS
    from tests.integration.support import free_port

    if connection.vendor != "postgresql":
        pytest.skip("the asyncpg reader is PostgreSQL's")
    audit_id, _, _ = build_audit()
    parameters = bulk_read._asyncpg_parameters()
    monkeypatch.setattr(bulk_read, "_asyncpg_parameters", lambda: {**parameters, "port": free_port()})
    with pytest.raises(OperationalError, match="asyncpg") as raised:
        reader.judgments_frame(audit_id)
    assert isinstance(raised.value, TRANSIENT_ERRORS)


@pytest.mark.django_db
def test_an_audit_without_judgments_gives_an_empty_frame_of_the_same_shape():
    audit_id, _, _ = build_audit()
    other = Audit.objects.create(name="empty").id
    full = reader.judgments_frame(audit_id)
    for read in readers():
        empty = read(other)
        assert empty.empty and list(empty.columns) == list(reader.JUDGMENT_COLUMNS)
        assert empty.dtypes.to_dict() == full.dtypes.to_dict() | {
            column: empty[column].dtype for column in reader.CATEGORY_COLUMNS}
        assert all(isinstance(empty[column].dtype, pd.CategoricalDtype) for column in reader.CATEGORY_COLUMNS)


@pytest.mark.django_db
def test_failed_requests_frame():
    audit_id, _, failed = build_audit()
    frame = reader.failed_requests_frame(audit_id)
    assert list(frame.columns) == list(reader.FAILED_COLUMNS)
    assert list(frame.itertuples(index=False, name=None)) == failed
    assert frame.dtypes.astype(str).to_dict() == {"request_id": "int64", "model_id": "int64", "task": "category",
                                                  "iteration": "int64", "error": "object"}
    assert reader.failed_requests_frame(Audit.objects.create(name="none").id).empty


@pytest.mark.parametrize("spread", [1, 3, 10**7])
def test_a_judgments_request_is_found_by_table_or_binary_search_alike(spread):
    rng = np.random.default_rng(spread)
    request_ids = np.cumsum(rng.integers(1, spread + 1, size=500)).astype(np.int64) + 10**6
    judged = rng.choice(request_ids, size=5000)
    position = reader._positions(request_ids, judged)
    np.testing.assert_array_equal(position, np.searchsorted(request_ids, judged))
    np.testing.assert_array_equal(request_ids[position], judged)
