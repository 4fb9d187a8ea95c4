"""``runtime`` is pure Python: importing and running it never loads Django."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
{prelude}
import runtime
def ask(input, ctx):
    return {{"input": input, "approved": ctx.interrupt({{"question": "Approve?"}})}}
ex = runtime.DurableExecutor(nodes=[("ask", ask), ("execute", lambda x: {{**x, "done": True}})])
paused = ex.run_sync({{"amount": 1}})
ex.resume_sync(paused.thread_id, {{"ok": True}})
print(json.dumps(sorted(m for m in sys.modules if m == "django" or m.startswith("django."))))
"""


def django_modules_after(prelude: str = "") -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE.format(prelude=prelude)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_runtime_never_imports_django() -> None:
    assert django_modules_after() == []


def test_the_probe_would_see_django() -> None:
    """Proves the check above can fail: a loaded django does show up."""
    assert "django" in django_modules_after("import django")
