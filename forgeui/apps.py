from django.apps import AppConfig
from django.core import checks


class ForgeUIConfig(AppConfig):
    name = "forgeui"
    verbose_name = "forge"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Logging out or losing a role closes that user's inbox websockets (access.py).
        from . import access, demo  # noqa: F401  (demo registers its deploy check)
        from .registry import check_graphs

        checks.register(check_graphs)
