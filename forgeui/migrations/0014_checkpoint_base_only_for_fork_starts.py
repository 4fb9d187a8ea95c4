"""A checkpoint's base column is kept only where the base is in another thread (a fork's
first checkpoint); every other record's base is its parent. Its index holds only those."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models


def clear_parent_bases(apps: Any, schema_editor: Any) -> None:
    checkpoint = apps.get_model("forgeui", "Checkpoint")
    (checkpoint.objects.using(schema_editor.connection.alias)
     .filter(base_id=models.F("parent_id")).exclude(base_id="").update(base_id=""))


class Migration(migrations.Migration):

    dependencies = [
        ('forgeui', '0013_checkpoints_kept_as_step_records'),
    ]

    operations = [
        migrations.AlterField(
            model_name='checkpoint',
            name='base_id',
            field=models.CharField(blank=True, default='', max_length=255),
        ),
        migrations.RunPython(clear_parent_bases, migrations.RunPython.noop, elidable=True),
        migrations.AddIndex(
            model_name='checkpoint',
            index=models.Index(condition=models.Q(('base_id', ''), _negated=True), fields=['base_id'], name='forgeui_checkpoint_fork_base'),
        ),
    ]
