"""What the audit log's hash chain costs: per append, and to verify a long chain.

Append: ``--appends`` entries written one per transaction through ``AuditEntry.objects
.create`` (the chain's lock, the tip read, the hash), against the same rows inserted with
the chain columns already filled (the plain insert a log without a chain would make);
the difference is what the chain adds. Verify: ``--entries`` chained entries are filled
in bulk (not measured), then ``verify_chain`` walks them all, as ``manage.py
verify_audit`` does. Targets: appending adds < 2 ms; 1,000,000 entries verify in < 60 s.

Run: ``.venv/bin/python bench/audit_chain.py [--entries 1000000] [--appends 1000]``.
Each database runs in its own subprocess, on a fresh SQLite file or PostgreSQL database.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import long_thread  # noqa: E402  (after the path is set)

APPEND_LIMIT_MS = 2.0
VERIFY_LIMIT_S = 60.0
MILLION = 1_000_000
DETAIL = {"steering": "checked the amount against the invoice", "answer": {"approve": True},
          "amount": 1250.5, "path": ["payments", "approve"]}


def setup(kind: str, stack: ExitStack) -> None:
    """A migrated, empty database of this process's own for ``kind``."""
    if kind == "sqlite":
        folder = stack.enter_context(long_thread.temporary_folder())
        os.environ["DATABASE_URL"] = f"sqlite:///{folder / 'audit.sqlite3'}"
    else:
        os.environ["DATABASE_URL"] = stack.enter_context(long_thread.fresh_postgres_database())
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forgeui.settings")
    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    settings.DEBUG = False
    call_command("migrate", verbosity=0)
    stack.callback(connections.close_all)


def append_ms(appends: int) -> dict[str, float]:
    """Milliseconds per entry: chained through ``create``, and the plain insert of a row
    whose chain columns were filled beforehand; the two alternate, so load drifts alike."""
    from django.db import models, transaction

    from forgeui.models import AuditEntry
    from forgeui.models.audit_chain import entry_hash

    chained = plain = chained_cpu = plain_cpu = 0.0
    for n in range(appends):
        start, cpu = time.perf_counter(), time.process_time()
        made = AuditEntry.objects.create(action="answer", object_type="interrupt",
                                         object_id=f"i{n}", detail=DETAIL)
        chained += time.perf_counter() - start
        chained_cpu += time.process_time() - cpu
        row = AuditEntry(action="answer", object_type="interrupt", object_id=f"p{n}",
                         detail=DETAIL, seq=made.seq + 1, prev_hash=made.entry_hash)
        row.entry_hash = entry_hash(row.prev_hash, row.record())
        start, cpu = time.perf_counter(), time.process_time()
        with transaction.atomic():
            models.Model.save(row, force_insert=True)  # the insert alone: no chain
        plain += time.perf_counter() - start
        plain_cpu += time.process_time() - cpu
    chained_ms, plain_ms = chained * 1000 / appends, plain * 1000 / appends
    return {"chained_ms": chained_ms, "plain_ms": plain_ms, "adds_ms": chained_ms - plain_ms,
            "adds_cpu_ms": (chained_cpu - plain_cpu) * 1000 / appends}


def fill(entries: int) -> None:
    """Chained entries after the tip, up to ``entries`` in all, hashed here and inserted
    in batches (not measured)."""
    from django.db import transaction
    from django.utils import timezone

    from forgeui.models import AuditEntry
    from forgeui.models.audit_chain import GENESIS, entry_hash

    tip = AuditEntry.objects.order_by("-seq").values_list("seq", "entry_hash").first()
    first, prev = (tip[0] + 1, tip[1]) if tip else (1, GENESIS)
    batch, moment = [], timezone.now()
    for seq in range(first, entries + 1):
        entry = AuditEntry(seq=seq, created_at=moment, actor_name="alice", action="answer",
                           object_type="interrupt", object_id=f"i{seq}", detail=DETAIL,
                           prev_hash=prev)
        entry.entry_hash = prev = entry_hash(prev, entry.record())
        batch.append(entry)
        if len(batch) == 5000 or seq == entries:
            with transaction.atomic():
                AuditEntry._base_manager.bulk_create(batch)  # one insert, no chain lock
            batch = []


def verify_s(entries: int) -> dict[str, Any]:
    from forgeui.models import verify_chain

    fill(entries)
    start, cpu = time.perf_counter(), time.process_time()
    verdict = verify_chain()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert verdict.ok, verdict
    return {"verify_s": seconds, "verify_cpu_s": cpu, "entries": verdict.entries}


def child(kind: str, entries: int, appends: int) -> None:
    with ExitStack() as stack:
        setup(kind, stack)
        found = append_ms(appends) | verify_s(entries)
    print(json.dumps(found))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=MILLION)
    parser.add_argument("--appends", type=int, default=1000)
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--child", choices=["sqlite", "postgres"])
    args = parser.parse_args()
    if args.child:
        child(args.child, args.entries, args.appends)
        return
    kinds = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    print(f"{args.appends} appends, one per transaction; a chain of {args.entries:,} verified")
    passed = True
    for kind in kinds:
        out = subprocess.run([sys.executable, __file__, "--child", kind, "--entries",
                              str(args.entries), "--appends", str(args.appends)],
                             check=True, capture_output=True, text=True).stdout
        found = json.loads(out.strip().splitlines()[-1])
        per_million = found["verify_s"] * MILLION / found["entries"]
        # A short chain's walk is mostly fixed costs: only a million entries judge the target.
        passed &= found["adds_ms"] < APPEND_LIMIT_MS and (
            found["entries"] < MILLION or found["verify_s"] < VERIFY_LIMIT_S)
        print(f"{kind}: append adds {found['adds_ms']:.3f} ms "
              f"({found['chained_ms']:.3f} chained, {found['plain_ms']:.3f} plain; "
              f"{found['adds_cpu_ms']:.3f} ms CPU); "
              f"verify {found['entries']:,} entries in {found['verify_s']:.2f} s, "
              f"{found['verify_cpu_s']:.2f} s CPU ({per_million:.1f} s per million)")
    judged = "" if args.entries >= MILLION else " (verify not judged below 1,000,000)"
    print(f"targets: append adds < {APPEND_LIMIT_MS} ms, 1,000,000 verify in < "
          f"{VERIFY_LIMIT_S:.0f} s: {'PASS' if passed else 'FAIL'}{judged}")


if __name__ == "__main__":
    main()
