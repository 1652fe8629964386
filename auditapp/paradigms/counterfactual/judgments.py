"""The judgments of a counterfactual audit as one DataFrame, read fast enough for four million of them (seed 002
analyses 4,009,521 judgments from 19 models).

:func:`judgments_frame` gives one row per stored judgment (``AuditJudgment``) joined to its request: which model
(``model_id``, the request's ``AuditModel``), which task (the request's ``condition``), which iteration (its unit
``iteration:<k>``), which text (the judgment's ``unit``: ``"{index}:{pair_no}:{side}"`` in a names audit,
``"{index}:{pair_key}:{dialect}"`` in a dialect audit) and the answer: ``label`` 0/1, NaN when the answer is
missing, with its ``reason``. A missing answer stays a row with a NaN label, so the analysis can count it; it is
never coded 0 or 1. Only what the analyses use is read (a judgment's outcome is not: its label and reason say
it). :func:`failed_requests_frame` gives the requests that got no reply at all (state FAILED), which the
completion rates count as missing with their error.

On PostgreSQL the judgments come through ``COPY (SELECT …) TO STDOUT (FORMAT csv)`` (read by asyncpg outside a
transaction, and parsed while they arrive: :mod:`auditapp.engine.bulk_read`) and pandas' C CSV parser reads them
with categorical dtypes (ours: the paper says nothing of storage); the audit's requests (60 times fewer) are read
apart and joined by position. 4,000,000 judgments load in about 3.5 s on the shared 2-core machine at a load
average of 3–5, most of it waiting for the server's COPY output (``benchmarks/judgment_storage.py read``). pandas'
pyarrow engine would parse faster but pyarrow is not a dependency. On other databases (SQLite) the judgments are
read in chunks with ``values_list``. Both readers give equal frames: categories in sorted order, rows in no
particular order.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from django.db import connection

from auditapp.engine.bulk_read import read_copy_csv
from auditapp.models import AuditJudgment, AuditRequest

ITERATION_PREFIX = "iteration:"
JUDGMENT_COLUMNS = ("request_id", "model_id", "task", "iteration", "unit", "label", "reason")
FAILED_COLUMNS = ("request_id", "model_id", "task", "iteration", "error")
CATEGORY_COLUMNS = ("task", "unit", "reason")
CHUNK_ROWS = 50_000
_JUDGMENT_FIELDS = ("request_id", "unit", "label", "reason")
# The CSV parser's dtypes; label is float so that a missing answer (NULL, an empty field) is NaN.
_CSV_DTYPES = {"request_id": "int64", "model_id": "int64", "task": "category", "iteration": "int64",
               "unit": "category", "label": "float64", "reason": "category"}


def judgments_frame(audit_id: int) -> pd.DataFrame:
    """One row per judgment of the audit: request_id, model_id (int64), task (category), iteration (int64), unit
    (category), label (float64, NaN when missing), reason (category). An audit without judgments gives an empty
    frame with these columns and dtypes."""
    if connection.vendor == "postgresql":
        return _judgments_frame_copy(audit_id)
    return _judgments_frame_values(audit_id)


def failed_requests_frame(audit_id: int) -> pd.DataFrame:
    """One row per request of the audit that failed (no reply after its retries): request_id, model_id, task
    (category), iteration (int64), error (str)."""
    rows = list(AuditRequest.objects.filter(audit_id=audit_id, state=AuditRequest.State.FAILED).order_by("id")
                .values_list("id", "audit_model_id", "condition", "unit", "error"))
    request_id, model_id, task, unit, error = zip(*rows, strict=True) if rows else ((), (), (), (), ())
    return pd.DataFrame({"request_id": np.array(request_id, dtype=np.int64),
                         "model_id": np.array(model_id, dtype=np.int64),
                         "task": _sorted_categories(pd.Series(task, dtype="category")),
                         "iteration": _iterations(pd.Series(unit, dtype=object)),
                         "error": pd.Series(error, dtype=object)})


def _judgments_frame_copy(audit_id: int) -> pd.DataFrame:
    # Judgments only: joining the requests on the server doubled the time of the COPY (4,000,000 rows: 7.8 s against
    # 3.8 s on the loaded 2-core machine); the requests, 60 times fewer, are joined here by position.
    table = AuditJudgment._meta.db_table
    judgments = read_copy_csv(f"SELECT {', '.join(_JUDGMENT_FIELDS)} "  # noqa: S608 - the model's table, an int id
                              f"FROM {table} WHERE audit_id = {int(audit_id)}", _parse_judgments)
    if judgments.empty:
        return _empty_judgments()
    return _with_requests(judgments, audit_id)


def _parse_judgments(stream) -> pd.DataFrame:
    """The COPY's rows as a frame. COPY writes NULL as an empty field and an empty string as "", so only an empty
    field is missing; text columns may not be missing at all (a judgment's reason is "" when there is none)."""
    return pd.read_csv(stream, names=list(_JUDGMENT_FIELDS), engine="c",
                       dtype={name: _CSV_DTYPES[name] for name in _JUDGMENT_FIELDS},
                       keep_default_na=False, na_values={"label": [""]})


def _judgments_frame_values(audit_id: int) -> pd.DataFrame:
    chunks, last_id = [], 0
    while True:
        rows = list(AuditJudgment.objects.filter(audit_id=audit_id, id__gt=last_id).order_by("id").values_list(
            "id", *_JUDGMENT_FIELDS)[:CHUNK_ROWS])
        if not rows:
            break
        last_id = rows[-1][0]
        chunks.append(pd.DataFrame.from_records(rows, columns=["id", *_JUDGMENT_FIELDS]).drop(columns="id"))
    if not chunks:
        return _empty_judgments()
    judgments = pd.concat(chunks, ignore_index=True).astype({"request_id": "int64", "label": "float64"})
    return _with_requests(judgments, audit_id)


def _with_requests(judgments: pd.DataFrame, audit_id: int) -> pd.DataFrame:
    """The judgments with their request's model, task and iteration, looked up by position among the audit's
    requests sorted by id (a judgment's request is always its audit's)."""
    requests = list(AuditRequest.objects.filter(audit_id=audit_id).order_by("id").values_list(
        "id", "audit_model_id", "condition", "unit"))
    request_ids, model_ids, tasks, units = (np.array(column) for column in zip(*requests, strict=True))
    request_ids = request_ids.astype(np.int64)
    judged = judgments["request_id"].to_numpy()
    position = _positions(request_ids, judged)
    task = _sorted_categories(pd.Series(tasks, dtype="category"))
    # copy=False: the columns are the arrays made here, not copied into one block (4,000,000 rows: 0.5 s saved).
    return pd.DataFrame({
        "request_id": judged,
        "model_id": model_ids.astype(np.int64)[position],
        "task": pd.Categorical.from_codes(task.cat.codes.to_numpy()[position], dtype=task.dtype),
        "iteration": _iterations(pd.Series(units, dtype=object)).to_numpy()[position],
        "unit": _sorted_categories(judgments["unit"]).array,
        "label": judgments["label"].to_numpy(),
        "reason": _sorted_categories(judgments["reason"]).array}, copy=False)


def _positions(request_ids: np.ndarray, judged: np.ndarray) -> np.ndarray:
    """Where each judged request id is among the sorted ``request_ids``: through a table indexed by id when the ids
    are close together (an audit's requests are created in bulk; 4,000,000 look-ups in a quarter of a binary
    search's time), else by binary search."""
    first, last = int(request_ids[0]), int(request_ids[-1])
    if last - first >= 4 * len(request_ids) + (1 << 16):
        return np.searchsorted(request_ids, judged)
    table = np.zeros(last - first + 1, dtype=np.int64)
    table[request_ids - first] = np.arange(len(request_ids))
    return table[judged - first]


def _iterations(units: pd.Series) -> pd.Series:
    """The k of request units ``iteration:<k>`` as int64 (a unit of another shape raises ValueError)."""
    return units.astype(str).str.removeprefix(ITERATION_PREFIX).astype(np.int64)


def _sorted_categories(column: pd.Series) -> pd.Series:
    """A categorical column whose categories (strings) are in sorted order, so both readers agree."""
    column = column.astype("category")
    if not len(column.cat.categories):
        return column.cat.set_categories(pd.Index([], dtype=object))
    return column.cat.reorder_categories(sorted(column.cat.categories))


def _empty_judgments() -> pd.DataFrame:
    return pd.DataFrame({name: _sorted_categories(pd.Series(dtype="category")) if name in CATEGORY_COLUMNS
                         else pd.Series(dtype=dtype) for name, dtype in _CSV_DTYPES.items()})[list(JUDGMENT_COLUMNS)]
