"""Small filters the dashboard's templates share."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django import template
from django.utils.dateparse import parse_datetime

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
