"""``manage.py verify_audit``: check the audit log's hash chain, and exit 1 at a break.

``--export FILE`` writes the chain as JSON Lines, hashes included; ``--file FILE`` checks
such a file offline, without the database. The first entry that was changed, removed,
inserted or reordered is named, with what most likely happened.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DEFAULT_DB_ALIAS

from forgeui.models import AuditEntry, verify_chain
from forgeui.models.audit_chain import Verdict, export_line, verify_export


class Command(BaseCommand):
    help = ("Walk the audit log's hash chain and report the first entry that was changed, "
            "removed, inserted or reordered (exit 1), else 'verified N entries'.")
    requires_system_checks: list[str] = []  # --file must run with no database at all

    def add_arguments(self, parser: CommandParser) -> None:
        what = parser.add_mutually_exclusive_group()
        what.add_argument("--export", metavar="FILE",
                          help="write the chain to FILE as JSON Lines, with the hashes")
        what.add_argument("--file", metavar="FILE",
                          help="check a file written by --export, offline")
        parser.add_argument("--database", default=DEFAULT_DB_ALIAS)

    def handle(self, *args: Any, export: str | None, file: str | None, database: str,
               **options: Any) -> None:
        if export:
            self.export(export, database)
            return
        try:
            verdict = verify_export(file) if file else verify_chain(database)
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read {file}: {exc}") from None
        self.report(verdict)

    def export(self, path: str, database: str) -> None:
        count = 0
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as out:
            for record in AuditEntry.objects.using(database).chain_records():
                out.write(export_line(record))
                count += 1
        self.stdout.write(f"exported {count} entries to {path}")

    def report(self, verdict: Verdict) -> None:
        if verdict.broken is None:
            self.stdout.write(f"verified {verdict.entries} entries")
            return
        broken = verdict.broken
        raise CommandError(f"INVALID: {broken.kind} at entry {broken.seq}: {broken.message} "
                           f"({verdict.entries} entries verified before it)", returncode=1)
