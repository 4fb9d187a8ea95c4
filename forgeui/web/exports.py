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
    """A header, then one line per row (``cell``): every CSV forge writes goes through here."""
    writer = csv.writer(_Line())
    yield writer.writerow(columns)
    for found in rows:
        yield writer.writerow([cell(found.get(name)) for name in columns])


# A spreadsheet reads a cell starting with one of these as a formula (OWASP: CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def cell(value: Any) -> Any:
    """One CSV cell: lists and objects as JSON, text that would start a formula quoted."""
    if isinstance(value, (dict, list, bool)) or value is None:
        return "" if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return inert(value) if isinstance(value, str) else value


def inert(text: str) -> str:
    """``text`` with a leading single quote when a spreadsheet would run it as a formula."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


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
