"""Instructions per start and per resume on ``DjangoCheckpointStore`` (SQLite), counted.

    python bench/store_instructions.py [--runs 300]

Wall time on a shared VM moves by tens of percent between identical runs, which hides a
change worth a few percent. ``valgrind --tool=callgrind`` counts instructions instead,
the same on every run (repeats agree to ~0.05 %). The workload is the store benchmark's
(``store_vs_langgraph.py``, sync API): ``--runs`` starts to the interrupt, then as many
resumes to the end, on a fresh SQLite file. It is counted three times, in child
processes: setup only, setup and the starts, and all of it; the differences are the
starts' and the resumes' own cost (the garbage collector is frozen after setup, so a
collection does not land in one count and not the other). Waiting for the disk is not
counted: this measures CPU work only. Compare two versions by running it in each.
Needs valgrind (Debian: ``apt-get install valgrind``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def workload(starts: int, resumes: int) -> None:
    """The counted child: setup, ``starts`` starts, then ``resumes`` of them resumed."""
    sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
    os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp()}/instructions.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forgeui.settings")
    import gc

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    settings.DEBUG = False  # as deployed: DEBUG logs every statement
    call_command("migrate", verbosity=0)
    from runtime_vs_langgraph import forge_executor

    from forgeui.store import DjangoCheckpointStore

    ex = forge_executor(DjangoCheckpointStore())
    gc.collect()
    gc.freeze()
    gc.disable()
    paused = [ex.run_sync({"amount": i}) for i in range(starts)]
    done = [ex.resume_sync(p.thread_id, "yes") for p in paused[:resumes]]
    assert all(d.output["done"] for d in done)


def counted(starts: int, resumes: int) -> int:
    """Instructions the workload's process ran, under callgrind."""
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.out",
             sys.executable, __file__, "--child", str(starts), str(resumes)],
            capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"callgrind printed no count:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        workload(*args.child)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    n = args.runs
    setup, started, resumed = counted(0, 0), counted(n, 0), counted(n, n)
    print(f"sqlite, {n} runs, instructions (callgrind)")
    print(f"  per start  {(started - setup) / n / 1e6:8.3f} M")
    print(f"  per resume {(resumed - started) / n / 1e6:8.3f} M")


if __name__ == "__main__":
    main()
