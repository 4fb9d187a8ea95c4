from django.apps import AppConfig
from django.core import checks

# Tags of forge's own system checks. Loading every registered graph imports each one's
# libraries (LangGraph's take seconds), so the commands run often (by cron, per agent,
# per worker start) run OPERATIONS_CHECKS; `check`, `runserver` and `migrate` run all.
GRAPHS_CHECK = "forge_graphs"
SETTINGS_CHECKS = "forge_settings"
OPERATIONS_CHECKS = [checks.Tags.models, SETTINGS_CHECKS]


class ForgeUIConfig(AppConfig):
    name = "forgeui"
    verbose_name = "forge"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Logging out or losing a role closes that user's inbox websockets (inbox.access).
        # demo registers its deploy check; lockouts audits django-axes' lockouts; sign_in
        # keeps in the session how each person logged in, and audits each sign-in;
        # membership audits each change of who holds which role.
        from forgeui.demo import accounts  # noqa: F401
        from forgeui.inbox import access, broadcast  # noqa: F401
        from forgeui.models.events import listen
        from forgeui.permissions import teams
        from forgeui.runs.policies.checks import check_policies
        from forgeui.runs.registry import check_graphs, check_setting
        from forgeui.slack import channels as slack_channels
        from forgeui.slack import models as slack_models  # noqa: F401
        from forgeui.slack import tasks as slack_tasks
        from forgeui.team import lockouts, membership, sign_in, sso  # noqa: F401

        checks.register(check_graphs, GRAPHS_CHECK)
        checks.register(check_setting, SETTINGS_CHECKS)
        checks.register(sso.check_settings, SETTINGS_CHECKS)
        checks.register(check_policies, SETTINGS_CHECKS)
        checks.register(teams.check_teams, SETTINGS_CHECKS)
        checks.register(slack_channels.check_channels, SETTINGS_CHECKS)
        # The store and the services write event rows; the inbox tells sockets about them.
        listen(broadcast.broadcast)
        listen(slack_tasks.on_events)  # Slack messages follow the same events
