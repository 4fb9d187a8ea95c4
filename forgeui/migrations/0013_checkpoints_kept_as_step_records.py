"""Checkpoints kept as step records (``runtime.store_kit``) instead of whole copies.

Each thread's checkpoints are converted oldest first: a checkpoint that only added to its
parent's history keeps just what it added, and its head becomes a patch against its
parent's; the thread row keeps the latest head whole.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models


def to_records(apps: Any, schema_editor: Any) -> None:
    from runtime.store_kit import from_full_copies

    alias = schema_editor.connection.alias
    thread_model = apps.get_model("forgeui", "Thread")
    checkpoint_model = apps.get_model("forgeui", "Checkpoint")
    for thread in thread_model.objects.using(alias).iterator():
        rows = list(checkpoint_model.objects.using(alias).filter(thread_id=thread.pk)
                    .order_by("seq").values_list("id", "data"))
        head = ""
        for (checkpoint_id, _), (_, step) in zip(rows, from_full_copies(d for _, d in rows),
                                                 strict=True):
            checkpoint_model.objects.using(alias).filter(pk=checkpoint_id).update(
                record=step.record, base_id=step.base_id or "")
            head = step.head
        thread_model.objects.using(alias).filter(pk=thread.pk).update(head=head)


class Migration(migrations.Migration):

    dependencies = [
        ('forgeui', '0012_checkpoints_found_by_run_through_the_run_row'),
    ]

    operations = [
        migrations.AddField(
            model_name='thread',
            name='head',
            field=models.TextField(blank=True, default='', help_text="JSON; empty until the thread's first own save (a fork's first checkpoint is rebuilt instead)"),
        ),
        migrations.AddField(
            model_name='thread',
            name='deleted',
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name='checkpoint',
            name='base_id',
            field=models.CharField(blank=True, db_index=True, default='', max_length=255),
        ),
        migrations.AddField(
            model_name='checkpoint',
            name='record',
            field=models.TextField(default='', help_text='JSON step record (runtime._records)'),
            preserve_default=False,
        ),
        migrations.RunPython(to_records, migrations.RunPython.noop, elidable=True),
        migrations.RemoveField(
            model_name='checkpoint',
            name='data',
        ),
    ]
