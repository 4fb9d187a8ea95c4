"""The Slack models in the admin: links made by hand (audited), messages read-only."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from forgeui.slack import linking
from forgeui.slack.models import LinkedVia, SlackLink, SlackMessage


class SlackLinkAdmin(admin.ModelAdmin):
    list_display = ["user", "slack_user_id", "team_id", "via", "created_at"]
    search_fields = ["user__username", "slack_user_id"]
    fields = ["user", "slack_user_id", "team_id"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # A link is replaced by deleting it and adding another, each audited.
        return list(self.fields) if obj is not None else []

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        # Through linking, so the link is audited and a Slack user acts as one person.
        linking.link(obj.user, obj.slack_user_id, obj.team_id, LinkedVia.ADMIN, by=request.user)


class SlackMessageAdmin(admin.ModelAdmin):
    list_display = ["interrupt", "channel", "ts", "synced", "wanted", "attempts", "updated_at"]
    readonly_fields = [f.name for f in SlackMessage._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


def register(site: admin.AdminSite) -> None:
    site.register(SlackLink, SlackLinkAdmin)
    site.register(SlackMessage, SlackMessageAdmin)
