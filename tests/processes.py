"""Helpers for tests that start processes: a free port, ``manage.py`` in a subprocess,
and waiting for something to become true. No Django: the cluster tests import it too."""

from __future__ import annotations

import socket
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def manage(*args: str, env: dict[str, str], timeout: float = 120,
           **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run ``manage.py`` in a subprocess and insist it succeeds."""
    done = subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout, **kwargs)
    assert done.returncode == 0, f"manage.py {' '.join(args)} failed:\n{done.stderr[-3000:]}"
    return done


def wait_until(probe: Callable[[], Any], timeout: float, what: str,
               pause: float = 0.05) -> Any:
    """``probe()``'s first true result, polled until ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while not (found := probe()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(pause)
    return found


def serve_in_background(server: socketserver.BaseServer) -> None:
    """Serve ``server`` on a daemon thread, checking for ``shutdown()`` often: at
    ``serve_forever``'s own half-second poll, every test that stops a server waits that."""
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                     daemon=True).start()
