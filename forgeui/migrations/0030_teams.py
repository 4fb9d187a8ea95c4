"""Teams (FORGE_TEAMS): runs, interrupts, requests and audit entries carry the team that
owns them, indexed for one team's inbox; interrupts name their sensitive payload keys.
"""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('forgeui', '0029_slack'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='agentrequest',
            name='team',
            field=models.CharField(blank=True, db_default='', db_index=True, default='', help_text='the owning team (FORGE_TEAMS); empty: none', max_length=64),
        ),
        migrations.AddField(
            model_name='auditentry',
            name='team',
            field=models.CharField(blank=True, db_default='', db_index=True, default='', help_text='whose auditors read it; empty: plain roles', max_length=64),
        ),
        migrations.AddField(
            model_name='interrupt',
            name='sensitive',
            field=models.JSONField(blank=True, default=list, help_text="payload keys shown only to who may answer (ctx.interrupt's sensitive=)"),
        ),
        migrations.AddField(
            model_name='interrupt',
            name='team',
            field=models.CharField(blank=True, db_default='', default='', help_text='the team that owns it (FORGE_TEAMS); empty: none', max_length=64),
        ),
        migrations.AddField(
            model_name='run',
            name='team',
            field=models.CharField(blank=True, db_default='', db_index=True, default='', help_text='the owning team (FORGE_TEAMS); empty: none', max_length=64),
        ),
        migrations.AddIndex(
            model_name='interrupt',
            index=models.Index(condition=models.Q(('status', 'pending')), fields=['team', 'created_at', 'order'], name='forgeui_interrupt_team_pending'),
        ),
        migrations.AddIndex(
            model_name='interrupt',
            index=models.Index(fields=['team', 'created_at'], name='forgeui_interrupt_team'),
        ),
    ]
