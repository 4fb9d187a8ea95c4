"""Teams: a webhook may be told of one team's events only."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('forgeui', '0030_teams'),
    ]

    operations = [
        migrations.AddField(
            model_name='webhook',
            name='team',
            field=models.CharField(blank=True, db_default='', default='', help_text="only this team's events (FORGE_TEAMS); empty: every team's and those of no team", max_length=64),
        ),
    ]
