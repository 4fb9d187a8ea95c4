"""Read-only admin: auditors browse everything; changes go through the services only."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import admin as auth_admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from . import models
from .runs.policies.config import policies
from .slack import admin as slack_admin
from .team import membership, sign_in


class ReadOnlyAdmin(admin.ModelAdmin):
    """Viewing needs the ``view`` permission (the auditor group has it); nobody edits."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(models.Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = ["run_id", "graph", "status", "sub_agent_id", "root_thread_id", "updated_at"]
    list_filter = ["status", "graph"]
    search_fields = ["run_id", "thread_id", "root_thread_id"]


@admin.register(models.Checkpoint)
class CheckpointAdmin(ReadOnlyAdmin):
    list_display = ["id", "thread_id", "seq", "node", "status", "created_at"]
    list_filter = ["status"]
    search_fields = ["id", "thread__thread_id", "run_id"]


@admin.register(models.Thread)
class ThreadAdmin(ReadOnlyAdmin):
    list_display = ["thread_id", "latest_checkpoint_id", "seq"]
    search_fields = ["thread_id"]


@admin.register(models.Interrupt)
class InterruptAdmin(ReadOnlyAdmin):
    list_display = ["id", "node", "task_id", "sub_agent_id", "status", "created_at"]
    list_filter = ["status", "kind"]
    search_fields = ["id", "run__run_id", "root_thread_id"]


@admin.register(models.Answer)
class AnswerAdmin(ReadOnlyAdmin):
    list_display = ["interrupt", "user", "child_policy", "created_at", "applied_at"]


@admin.register(models.Approval)
class ApprovalAdmin(ReadOnlyAdmin):
    list_display = ["interrupt", "user", "vote", "policy", "created_at"]
    list_filter = ["vote", "policy"]
    search_fields = ["interrupt__id", "user__username"]


def policies_page(request: HttpRequest) -> HttpResponse:
    """``FORGE_POLICIES`` as the server reads it: shown, never edited here (it is set in
    the environment, so a change is a deployment, not a click)."""
    listed = [p.as_dict() for p in policies().by_name.values()]
    return TemplateResponse(request, "admin/forgeui/policies.html", {
        **admin.site.each_context(request), "title": "Approval policies", "policies": listed})


@admin.register(models.SteeringNote)
class SteeringNoteAdmin(ReadOnlyAdmin):
    list_display = ["run", "task_id", "user", "created_at", "applied_at"]


@admin.register(models.AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    list_display = ["seq", "created_at", "actor_name", "action", "object_type", "object_id",
                    "run_id"]
    list_filter = ["action"]
    search_fields = ["run_id", "thread_id", "object_id"]


@admin.register(models.ChainCheck)
class ChainCheckAdmin(ReadOnlyAdmin):
    list_display = ["checked_at", "entries", "last_seq", "broken_kind", "broken_seq"]


@admin.register(models.Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ["id", "kind", "interrupt_id", "run_id", "created_at"]
    list_filter = ["kind"]


@admin.register(models.ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Create a token (its secret is shown once, in a message), see when each expires, and
    revoke tokens."""

    list_display = ["prefix", "name", "user", "agent", "state", "created_at", "expires_at",
                    "last_used_at", "revoked_at"]
    list_filter = ["revoked_at", "expires_at"]
    search_fields = ["name", "prefix", "user__username", "agent"]
    fields = ["user", "name", "agent", "prefix", "state", "created_at", "expires_at",
              "last_used_at", "revoked_at"]
    actions = ["revoke"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # A token made here gets the default term (FORGE_TOKEN_DAYS); create_token --days
        # makes others.
        locked = ["prefix", "state", "created_at", "expires_at", "last_used_at", "revoked_at"]
        return [*locked, "user", "agent"] if obj is not None else locked

    @admin.display(description="state")
    def state(self, obj: Any) -> str:
        return str(obj.state) if obj.pk is not None else "new"

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        secret = models.ApiToken.new_secret()
        obj.prefix = secret[: models.TOKEN_PREFIX_LENGTH]
        obj.key_hash = models.ApiToken.hash(secret)
        super().save_model(request, obj, form, change)
        messages.warning(request, f"New API token for {obj.user}: {secret} — copy it now; "
                                  f"only its hash is kept, it will not be shown again.")

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: Any) -> None:
        revoked = queryset.revoke()
        messages.success(request, f"Revoked {revoked} token(s).")


class WebhookForm(forms.ModelForm):
    """``events`` as checkboxes instead of raw JSON."""

    events = forms.MultipleChoiceField(choices=models.WebhookEvent.choices,
                                       widget=forms.CheckboxSelectMultiple, required=False)
    url = forms.URLField(assume_scheme="https", max_length=1000)

    class Meta:
        model = models.Webhook
        fields = ["name", "url", "secret", "events", "team", "active"]


@admin.register(models.Webhook)
class WebhookAdmin(admin.ModelAdmin):
    """Outgoing webhooks: admins configure them; ``forgeui.notifications.webhooks`` sends them."""

    form = WebhookForm
    list_display = ["name", "url", "active", "created_at"]
    list_filter = ["active"]


@admin.register(models.WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "webhook", "event", "status", "attempts", "response_code"]
    list_filter = ["status", "event"]


@admin.register(models.SsoIdentity)
class SsoIdentityAdmin(admin.ModelAdmin):
    """Which provider account each single sign-on user is; delete one to unlink it."""

    list_display = ["user", "issuer", "subject", "created_at", "last_sign_in_at"]
    search_fields = ["user__username", "subject"]
    readonly_fields = ["user", "issuer", "subject", "created_at", "last_sign_in_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # made at the first sign-in, never by hand


class MembershipAuditMixin:
    """Memberships the admin changes are audited as the admin's (``team.membership``)."""

    def save_related(self, request: HttpRequest, *args: Any, **kwargs: Any) -> None:
        with membership.acting(request.user, sign_in.method_of(request.user)):
            super().save_related(request, *args, **kwargs)  # type: ignore[misc]

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        with membership.acting(request.user, sign_in.method_of(request.user)):
            super().delete_model(request, obj)  # type: ignore[misc]

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        with membership.acting(request.user, sign_in.method_of(request.user)):
            super().delete_queryset(request, queryset)  # type: ignore[misc]


GROUPS_HELP = ("Roles are groups: reviewer, supervisor and auditor hold everywhere; "
               "TEAM:ROLE (finance:reviewer) holds for that team's graphs and agents only "
               "(FORGE_TEAMS). Each change is an audit entry.")


class UserAdmin(MembershipAuditMixin, auth_admin.UserAdmin):
    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest,
                                 **kwargs: Any) -> Any:
        field = super().formfield_for_manytomany(db_field, request, **kwargs)
        if db_field.name == "groups" and field is not None:
            field.help_text = GROUPS_HELP
        return field


class GroupAdmin(MembershipAuditMixin, auth_admin.GroupAdmin):
    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        if db_field.name == "name" and field is not None:
            field.help_text = GROUPS_HELP
        return field


for model, model_admin in ((get_user_model(), UserAdmin), (Group, GroupAdmin)):
    admin.site.unregister(model)
    admin.site.register(model, model_admin)
slack_admin.register(admin.site)
