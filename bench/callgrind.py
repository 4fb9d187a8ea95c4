"""Counting the instructions a child process runs, with valgrind's callgrind.

Wall time on a shared VM moves by tens of percent between identical runs; an instruction
count is the same on every run, so small changes show.

A child splits its run into phases with ``mark()``: callgrind writes the count so far
each time (``--dump-before``), so one run under callgrind, slow as it is, counts every
phase, where a count per phase would take a child each, each paying again for the start.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The C function a mark calls, where callgrind writes the count so far: ``os.getsid``'s,
# which neither Python nor the libraries the benches load call on their own.
MARK = "getsid"


def require_valgrind() -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")


def mark() -> None:
    """In a child counted by ``phases``: the phase so far ends here."""
    os.getsid(0)


def phases(marks: int, script: str, *args: str) -> list[int]:
    """Instructions ``python script args...`` ran in each phase its ``marks`` calls of
    ``mark()`` divide it into: from the start to the first mark, between marks, and from
    the last mark to the end (``marks + 1`` counts)."""
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.out",
             f"--dump-before={MARK}", sys.executable, script, *args],
            capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"the counted child failed:\n{done.stderr[-2000:]}")
        # cg.out.1, cg.out.2, ... at each mark, in order; cg.out at the end.
        dumps = sorted(Path(out).glob("cg.out.*"), key=lambda p: int(p.suffix[1:]))
        counts = [_total(p) for p in [*dumps, Path(out) / "cg.out"]]
    if len(counts) != marks + 1:
        raise SystemExit(f"expected {marks} marks, callgrind wrote {len(counts) - 1}: "
                         f"something else called {MARK}()")
    return counts


def _total(dump: Path) -> int:
    found = re.search(r"^totals: (\d+)", dump.read_text(errors="replace"), re.MULTILINE)
    if found is None:
        raise SystemExit(f"callgrind wrote no total in {dump.name}")
    return int(found.group(1))
