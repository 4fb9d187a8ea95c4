"""Markdown from a payload, as HTML that is safe to put in a page.

markdown-it renders CommonMark with raw HTML turned off (a ``<script>`` in the text comes
out as text), then nh3 keeps only an allow-list of tags and attributes: no script, no
event handlers, no ``style``, links only to http(s) and mail. The page's
Content-Security-Policy forbids inline code as well; this keeps the markup clean anyway.
"""

from __future__ import annotations

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

MAX_MARKDOWN_CHARS = 20_000
TAGS = {"p", "br", "strong", "em", "code", "pre", "blockquote", "ul", "ol", "li", "a",
        "h1", "h2", "h3", "h4", "h5", "h6", "hr", "table", "thead", "tbody", "tr", "th", "td",
        "del"}
ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"align"}, "td": {"align"}}

_renderer = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
_renderer.enable("strikethrough")


def render_markdown(text: str) -> SafeString:
    """``text`` as sanitized HTML; overlong text is cut, never refused."""
    html = _renderer.render(text[:MAX_MARKDOWN_CHARS])
    clean = nh3.clean(html, tags=TAGS, attributes=ATTRIBUTES,
                      url_schemes={"http", "https", "mailto"},
                      link_rel="noopener noreferrer nofollow")
    return mark_safe(clean)  # nh3 has just reduced it to the allow-list
