"""The environment ``make setup`` builds holds exactly the versions ``constraints.txt`` pins.

The suite passing says something only of the versions it ran with, and the installer
(uv, brought by pip) must honour every pin, the tools' included.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

CONSTRAINTS = Path(__file__).resolve().parents[3] / "constraints.txt"


def pins() -> dict[str, str]:
    lines = CONSTRAINTS.read_text(encoding="utf-8").splitlines()
    return dict(line.strip().split("==", 1) for line in lines
                if line.strip() and not line.startswith("#"))


def installed(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def test_every_pin_is_the_installed_version() -> None:
    found = pins()
    assert "uv" in found and "Django" in found, "constraints.txt lost its pins"
    wrong = {name: (pin, installed(name)) for name, pin in found.items()
             if installed(name) != pin}
    assert wrong == {}, f"pinned, installed: {wrong}"
