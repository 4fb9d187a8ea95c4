"""A forge under daphne that can be stopped and started again on the same database/port."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.conftest import (
    ROOT,
    Seed,
    copy_database,
    manage_all,
    server_env,
    stop_process,
    wait_until_up,
)
from tests.processes import free_port


@dataclass
class Forge:
    url: str
    env: dict[str, str]
    tokens: dict[str, str]
    folder: Path
    port: int
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def headers(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    def start(self) -> None:
        with (self.folder / "daphne.log").open("ab") as log:  # the child keeps its copy
            self.process = subprocess.Popen(
                [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port),
                 "forgeui.asgi:application"], cwd=ROOT, env=self.env, stdout=log,
                stderr=subprocess.STDOUT)
        wait_until_up(self.url, self.process)

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)
            self.process = None


AGENTS = ("bot", "other")


def with_agents(seeded: Seed, folder: Path) -> Seed:
    """A copy of ``seeded`` in ``folder`` that also holds a token for each of ``AGENTS``."""
    copy_database(seeded.database, folder / "forge.sqlite3")
    made = manage_all(server_env(folder), *(("create_token", "--agent", a) for a in AGENTS))
    tokens = {**seeded.tokens, **{a: t.strip() for a, t in zip(AGENTS, made, strict=True)}}
    return Seed(folder / "forge.sqlite3", tokens)


@contextmanager
def forge(folder: Path, seeded: Seed, **extra_env: str) -> Iterator[Forge]:
    """A copy of ``seeded`` (``with_agents``'s) under a daphne of our own."""
    copy_database(seeded.database, folder / "forge.sqlite3")
    port = free_port()
    live = Forge(f"http://127.0.0.1:{port}", server_env(folder, **extra_env),
                 dict(seeded.tokens), folder, port)
    live.start()
    try:
        yield live
    finally:
        live.stop()


def ask(live: Forge, who: str = "bot", **fields: Any) -> dict[str, Any]:
    import httpx

    body = {"actions": [{"name": "send_email", "args": {"to": "a@example.com"}}], **fields}
    response = httpx.post(live.url + "/api/requests", json=body, headers=live.headers(who),
                          timeout=30)
    assert response.status_code == 201, response.text
    found: dict[str, Any] = response.json()
    return found
