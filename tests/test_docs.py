"""The README is a front page and docs/ its map: every relative link and anchor leads
somewhere, every page is reachable from the README, and the quick start runs as written."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from tests.docblocks import FENCE, ROOT, block

README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
# A link or an image, outside code: [text](target) with an optional "title".
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
INLINE_CODE = re.compile(r"`+[^`\n]*`+")
HEADING = re.compile(r"^#{1,6} +(.+?) *#* *$", re.MULTILINE)


def prose(page: Path) -> str:
    """The page without its code blocks and code spans, where a link is only text."""
    return INLINE_CODE.sub("", FENCE.sub("", page.read_text()))


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation dropped,
    spaces as hyphens, a repeated one numbered from 1."""
    seen: Counter[str] = Counter()
    found = set()
    for heading in HEADING.findall(prose(page)):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        found.add(f"{slug}-{seen[slug]}" if seen[slug] else slug)
        seen[slug] += 1
    return found


def relative_links(page: Path) -> list[str]:
    return [target for target in LINK.findall(prose(page))
            if not re.match(r"[a-z][a-z0-9+.-]*:", target)]


def broken(page: Path, target: str) -> str | None:
    """Why ``target``, linked from ``page``, leads nowhere; None when it resolves."""
    path, _, anchor = target.partition("#")
    linked = (page.parent / path).resolve() if path else page
    if not linked.exists():
        return f"{page.name}: {target} (no such file)"
    if anchor and linked.suffix == ".md" and anchor not in anchors(linked):
        return f"{page.name}: {target} (no such heading)"
    return None


def test_every_relative_link_leads_to_a_file_and_heading() -> None:
    links = [(page, target) for page in PAGES for target in relative_links(page)]
    assert len(links) > 20
    assert [why for page, target in links if (why := broken(page, target))] == []


def test_a_link_to_a_missing_file_or_heading_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# A page\n\n## Its part\n")
    assert broken(page, "#its-part") is None
    assert broken(page, "page.md#a-page") is None
    assert broken(page, "#another-part") is not None
    assert broken(page, "gone.md") is not None


def test_every_page_of_docs_is_reachable_from_the_readme() -> None:
    reached, todo = {README}, [README]
    while todo:
        page = todo.pop()
        for target in relative_links(page):
            linked = (page.parent / target.partition("#")[0]).resolve()
            if linked.suffix == ".md" and linked.exists() and linked not in reached:
                reached.add(linked)
                todo.append(linked)
    assert sorted(p.name for p in set(PAGES) - reached) == []


def test_the_readme_is_a_front_page() -> None:
    assert len(README.read_text().splitlines()) <= 200


def test_the_readme_quick_start_runs_as_written() -> None:
    code = block("README.md", "from runtime import DurableExecutor")
    namespace: dict[str, Any] = {"__name__": "quick_start"}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["executor"].name == "transfer"
