"""Counting the instructions a child process runs, with valgrind's callgrind.

Wall time on a shared VM moves by tens of percent between identical runs; an instruction
count is the same on every run, so small changes show.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile


def require_valgrind() -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")


def instructions(script: str, *args: str) -> int:
    """Instructions ``python script args...`` ran, counted by callgrind."""
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.out",
             sys.executable, script, *args],
            capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"callgrind printed no count:\n{done.stderr[-2000:]}")
    return int(found.group(1))
