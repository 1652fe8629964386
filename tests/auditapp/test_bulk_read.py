"""The COPY reader (auditapp.engine.bulk_read): on asyncpg the parser reads the rows while they arrive; it gets
every row, a COPY that fails midway raises OperationalError (never a partial result), and a parser that fails
stops the COPY."""
from __future__ import annotations

import asyncio
import threading
import time

import pandas as pd
import pytest
from django.db import DataError, OperationalError, connection, transaction

from auditapp.engine import bulk_read

ROWS = 300_000
SERIES = (f"SELECT n, 'text ' || n, CASE WHEN n % 7 = 0 THEN NULL ELSE n % 2 END "  # noqa: S608 - an int constant
          f"FROM generate_series(1, {ROWS}) n")


def parse(stream) -> pd.DataFrame:
    return pd.read_csv(stream, names=["n", "text", "label"], dtype={"n": "int64", "text": "category",
                                                                     "label": "float64"})


def copy_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "copy-csv"]


@pytest.fixture
def on_asyncpg(transactional_db, monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("the COPY reader is PostgreSQL's")
    through_django = []
    monkeypatch.setattr(bulk_read, "_copy_through_django",
                        lambda sql, read=bulk_read._copy_through_django: through_django.append(sql) or read(sql))
    yield through_django
    assert not copy_threads()


def test_the_parser_gets_every_row_in_blocks_smaller_than_the_result(on_asyncpg, monkeypatch):
    monkeypatch.setattr(bulk_read, "BLOCKS_AHEAD", 4)  # the COPY can run ahead of the parser by 4 blocks only
    frame = bulk_read.read_copy_csv(SERIES, parse)
    assert on_asyncpg == []
    assert len(frame) == ROWS and frame["n"].tolist() == list(range(1, ROWS + 1))
    assert frame["label"].isna().sum() == ROWS // 7 and frame["text"].iloc[-1] == f"text {ROWS}"
    with transaction.atomic():
        pd.testing.assert_frame_equal(bulk_read.read_copy_csv(SERIES, parse), frame)
    assert len(on_asyncpg) == 1


def test_no_rows_is_an_empty_stream(on_asyncpg):
    assert bulk_read.read_copy_csv("SELECT 1 WHERE false", lambda stream: stream.read()) == b""


def test_a_copy_failing_midway_raises_never_a_partial_result_and_a_data_error_is_not_retried(on_asyncpg):
    failing = f"SELECT n, 'text', 1 / (n - {ROWS - 10}) FROM generate_series(1, {ROWS}) n"  # noqa: S608 - ints
    # A division by zero is SQLSTATE 22012: a DataError, as psycopg raises it; no retry would mend it.
    with pytest.raises(DataError, match="DivisionByZero"):
        bulk_read.read_copy_csv(failing, parse)
    parsed = []
    with pytest.raises(DataError, match="DivisionByZero"):
        bulk_read.read_copy_csv(failing, lambda stream: parsed.append(len(stream.read())))
    assert parsed == []  # the stream raised before the parser could return what had come
    assert not isinstance(DataError(), OperationalError)


def test_a_server_that_shuts_the_copy_down_is_an_operational_error_the_callers_retry(on_asyncpg):
    # 57014 (query_canceled, class 57: operator intervention) as a statement timeout gives it.
    slow = f"SELECT n, pg_sleep(0.01) FROM generate_series(1, {ROWS}) n"  # noqa: S608 - ints
    with connection.cursor() as cursor:
        cursor.execute("ALTER ROLE CURRENT_USER SET statement_timeout = '200ms'")
    try:
        with pytest.raises(OperationalError, match="QueryCanceled"):
            bulk_read.read_copy_csv(slow, parse)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER ROLE CURRENT_USER RESET statement_timeout")


def test_a_parser_that_fails_stops_the_copy(on_asyncpg):
    # In the select list a set-returning function streams its rows (in FROM, it would make them all first).
    endless = "SELECT n, 'text', 1 FROM (SELECT generate_series(1, 200000000) AS n) AS series"

    def give_up(stream):
        stream.read(100_000)
        raise ValueError("not a judgment")

    began = time.monotonic()
    with pytest.raises(ValueError, match="not a judgment"):
        bulk_read.read_copy_csv(endless, give_up)
    assert time.monotonic() - began < 10  # the 200 million rows are not waited for


def test_it_reads_from_inside_a_running_event_loop(on_asyncpg):
    async def inside() -> pd.DataFrame:
        return bulk_read.read_copy_csv(SERIES, parse)

    assert len(asyncio.run(inside())) == ROWS
