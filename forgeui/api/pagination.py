"""A list page held to a byte budget as well as a count, for lists whose items can be large.

A checkpoint carries what its thread held at that point (state, notes, pending payloads),
so fifty of a long thread's checkpoints can weigh more than a server should build at once.
``BytePage`` stops adding items once the next one would pass ``PAGE_BYTES`` (a page always
holds one at least) and says where the next page starts: ``next`` is its URL, or null.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest
from ninja import Field, Schema

from forgeui.api.schemas import Page

PAGE_BYTES = 2_000_000  # of item JSON per page
FETCH = 10  # items read from the list at a time


class BytePage(Page):
    """``Page`` with a byte budget; ``measure(item)`` is an item's size as JSON."""

    class Output(Schema):
        items: list[Any]
        count: int
        next: str | None = Field(None, description="the URL of the next page; null on the last")

    def __init__(self, measure: Callable[[Any], int], budget: int = PAGE_BYTES,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.measure, self.budget = measure, budget

    def paginate_queryset(self, queryset: Any, pagination: Any, request: HttpRequest,
                          **params: Any) -> Any:
        total = self._items_count(queryset)
        limit = min(pagination.limit, self.max_limit)
        items = self.fill(queryset, pagination.offset, min(pagination.offset + limit, total))
        after = pagination.offset + len(items)
        return {"items": items, "count": total,
                "next": next_url(request, after, limit) if after < total else None}

    def fill(self, queryset: Any, start: int, stop: int) -> list[Any]:
        """Items from ``start`` on, until ``stop`` or until the next would pass the budget."""
        items: list[Any] = []
        used = 0
        for first in range(start, stop, FETCH):
            for item in queryset[first:min(first + FETCH, stop)]:
                size = self.measure(item)
                if items and used + size > self.budget:
                    return items
                items.append(item)
                used += size
        return items


def next_url(request: HttpRequest, offset: int, limit: int) -> str:
    query = request.GET.copy()
    query["limit"], query["offset"] = str(limit), str(offset)
    return f"{request.path}?{query.urlencode()}"
