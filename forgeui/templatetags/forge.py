"""Small filters the dashboard's templates share."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django import template
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html
from django.utils.timesince import timesince
from django.utils.timezone import is_aware, make_aware

from forgeui.inbox.payloads import Field, fields_of
from forgeui.models import Answer
from forgeui.runs.wording import decision_words

register = template.Library()


@register.filter
def pretty(value: Any) -> str:
    """Indented JSON; autoescaping still applies, so a payload's markup shows as text."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


@register.filter
def short(value: Any, length: int = 8) -> str:
    """The head of a long id (the full id goes in a ``title``)."""
    text = str(value or "")
    return text if len(text) <= length + 1 else text[:length] + "…"


@register.filter
def iso(value: Any) -> datetime | Any:
    """An ISO 8601 string (as the services report times) as a datetime for ``date``."""
    if isinstance(value, str):
        try:
            return parse_datetime(value) or value
        except ValueError:
            return value
    return value


@register.filter
def as_fields(value: Any, name: str = "value") -> list[Field]:
    """A value as the definition list the payload view uses (``payloads.fields_of``)."""
    return fields_of(value, name)


@register.filter
def in_words(answer: Answer) -> str:
    """``answer`` as people say it: "Approved", "Edited: to → …", "Cancelled at …"."""
    return decision_words(answer)


@register.simple_tag
def when(value: Any, relative: bool = False) -> str:
    """One moment in the one format the pages use: UTC with its zone, or "4 minutes ago"
    with that exact time on hover. forge.js re-renders it in the reader's choice of
    local time or UTC and keeps relative times current."""
    moment = iso(value)
    if not isinstance(moment, datetime):
        return format_html("<span>{}</span>", value or "—")
    moment = moment if is_aware(moment) else make_aware(moment, UTC)
    exact = moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    if relative:
        return format_html('<time datetime="{}" data-when data-relative title="{}">{} ago</time>',
                           moment.isoformat(), exact, timesince(moment))
    return format_html('<time datetime="{}" data-when>{}</time>', moment.isoformat(), exact)
