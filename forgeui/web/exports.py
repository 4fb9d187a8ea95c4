"""Downloads as CSV or JSON, streamed: an export of any size never sits whole in memory."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.http import StreamingHttpResponse


class _Line:
    """A file-like that hands back what ``csv.writer`` writes, one line at a time."""

    def write(self, text: str) -> str:
        return text


def csv_lines(columns: list[str], rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    """A header, then one line per row; lists and objects as JSON in their cell."""
    writer = csv.writer(_Line())
    yield writer.writerow(columns)
    for found in rows:
        yield writer.writerow([cell(found.get(name)) for name in columns])


def cell(value: Any) -> Any:
    if isinstance(value, (dict, list, bool)) or value is None:
        return "" if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return value


def json_chunks(rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    """``{"items": [...], "count": N}``, one item at a time."""
    yield '{"items": ['
    count = 0
    for found in rows:
        yield ("," if count else "") + "\n" + json.dumps(found, ensure_ascii=False)
        count += 1
    yield f'\n], "count": {count}}}\n'


def download(chunks: Iterator[str], filename: str, content_type: str) -> StreamingHttpResponse:
    return StreamingHttpResponse(
        chunks, content_type=content_type,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'})


def as_csv(columns: list[str], rows: Iterable[dict[str, Any]],
           filename: str) -> StreamingHttpResponse:
    return download(csv_lines(columns, rows), filename, "text/csv; charset=utf-8")


def as_json(rows: Iterable[dict[str, Any]], filename: str) -> StreamingHttpResponse:
    return download(json_chunks(rows), filename, "application/json")
