"""Processes that never talk to Slack (workers, commands) do not pay for its SDK."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_setting_django_up_loads_no_slack_sdk() -> None:
    probe = ("import sys, django; django.setup(); "
             "print(sorted(m for m in sys.modules if m.split('.')[0] == 'slack_sdk'))")
    clean = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT),
             "DJANGO_SETTINGS_MODULE": "forgeui.settings"}
    done = subprocess.run([sys.executable, "-c", probe], env=clean, cwd=ROOT,
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
