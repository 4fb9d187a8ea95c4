"""Template source rules that rendering alone would not report."""

from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[3] / "templates"


def test_every_short_comment_closes_on_its_own_line() -> None:
    # Django's {# #} ends at the line: an unclosed one is shown to people as text.
    unclosed = [f"{path.relative_to(TEMPLATES)}:{n}"
                for path in TEMPLATES.rglob("*.html")
                for n, line in enumerate(path.read_text().splitlines(), 1)
                if line.count("{#") > line.count("#}")]
    assert list(TEMPLATES.rglob("*.html")), "no templates found"
    assert unclosed == []
