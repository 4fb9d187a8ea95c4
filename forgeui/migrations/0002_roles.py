"""The three roles as groups: reviewer, supervisor, auditor.

Every role may view forge's models (the read-only admin); what each may do beyond that is
decided in ``forgeui.services``.
"""

from django.contrib.auth.management import create_permissions
from django.db import migrations

ROLES = ["reviewer", "supervisor", "auditor"]


def create_roles(apps, schema_editor):
    # Permissions are normally made after migrate; roles need them now.
    config = apps.get_app_config("forgeui")
    config.models_module = True
    create_permissions(config, verbosity=0, apps=apps, using=schema_editor.connection.alias)
    config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    db = schema_editor.connection.alias
    viewing = Permission.objects.using(db).filter(
        content_type__app_label="forgeui", codename__startswith="view_"
    )
    for name in ROLES:
        group, _ = Group.objects.using(db).get_or_create(name=name)
        group.permissions.add(*viewing)


def remove_roles(apps, schema_editor):
    apps.get_model("auth", "Group").objects.using(schema_editor.connection.alias).filter(
        name__in=ROLES
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("forgeui", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_roles, remove_roles)]
