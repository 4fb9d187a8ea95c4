"""A thread's head is the whole head of one of its checkpoints, named by ``head_seq``: the
latest one's until now, so every existing head is at the thread's last position."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models


def heads_are_latest(apps: Any, schema_editor: Any) -> None:
    thread = apps.get_model("forgeui", "Thread")
    (thread.objects.using(schema_editor.connection.alias)
     .exclude(head="").update(head_seq=models.F("seq")))


class Migration(migrations.Migration):

    dependencies = [
        ('forgeui', '0014_checkpoint_base_only_for_fork_starts'),
    ]

    operations = [
        migrations.AddField(
            model_name='thread',
            name='head_seq',
            field=models.PositiveBigIntegerField(default=0, help_text='the position whose head ``head`` is (0: none)'),
        ),
        migrations.RunPython(heads_are_latest, migrations.RunPython.noop, elidable=True),
    ]
