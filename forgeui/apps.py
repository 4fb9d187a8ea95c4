from django.apps import AppConfig
from django.core import checks


class ForgeUIConfig(AppConfig):
    name = "forgeui"
    verbose_name = "forge"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Logging out or losing a role closes that user's inbox websockets (access.py).
        # demo registers its deploy check; lockouts audits django-axes' lockouts.
        from . import access, demo, lockouts  # noqa: F401
        from .registry import check_graphs

        checks.register(check_graphs)
