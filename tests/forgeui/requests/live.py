"""A forge under daphne that can be stopped and started again on the same database/port."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.conftest import ROOT, free_port, manage, serve, wait_until_up


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
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
            self.process = None


@contextmanager
def forge(folder: Path, agents: tuple[str, ...] = ("bot", "other"),
          **extra_env: str) -> Iterator[Forge]:
    """``serve``'s database, users and tokens, plus agent tokens, under a daphne of our own."""
    with serve(folder, **extra_env) as first:
        env, tokens = dict(first.env), dict(first.tokens)
    for agent in agents:
        tokens[agent] = manage(env, "create_token", "--agent", agent).strip()
    port = free_port()
    live = Forge(f"http://127.0.0.1:{port}", env, tokens, folder, port)
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
