from django.apps import AppConfig
from django.core import checks


class ForgeUIConfig(AppConfig):
    name = "forgeui"
    verbose_name = "forge"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Logging out or losing a role closes that user's inbox websockets (inbox.access).
        # demo registers its deploy check; lockouts audits django-axes' lockouts; sign_in
        # keeps in the session how each person logged in, and audits each sign-in.
        from forgeui.demo import accounts  # noqa: F401
        from forgeui.inbox import access, broadcast  # noqa: F401
        from forgeui.models.events import listen
        from forgeui.runs.policies.checks import check_policies
        from forgeui.runs.registry import check_graphs
        from forgeui.team import lockouts, sign_in, sso  # noqa: F401

        checks.register(check_graphs)
        checks.register(sso.check_settings)
        checks.register(check_policies)
        # The store and the services write event rows; the inbox tells sockets about them.
        listen(broadcast.broadcast)
