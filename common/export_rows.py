"""The rows of an export (:class:`Export`), as every export selector returns them: the column names every export
of that resource uses (CSV header, JSON keys), a ``values_list`` queryset (or list) of rows in the same order, and
optionally a function applied to each row on the way out (to look up, say, a response's text without a query per
row). The API iterates querysets in chunks, so an export of any size runs in flat memory."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db.models import QuerySet


@dataclass(frozen=True)
class Export:
    columns: list[str]
    rows: QuerySet | list
    transform: Callable[[tuple], tuple] | None = None

    def iterate(self, chunk_size: int) -> Iterable[tuple]:
        rows = self.rows.iterator(chunk_size=chunk_size) if isinstance(self.rows, QuerySet) else iter(self.rows)
        return rows if self.transform is None else map(self.transform, rows)
