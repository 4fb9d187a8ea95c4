"""Single sign-on with OpenID Connect (mozilla-django-oidc), off unless configured.

``FORGE_SSO`` is on when the settings name a client (``OIDC_RP_CLIENT_ID``). A person who
signs in at the provider becomes (or is found as) the forge user linked to their
provider account (``SsoIdentity``: issuer and subject), never a local account that shares
their e-mail or name. On every sign-in their forge roles are set from the groups claim
(``FORGE_OIDC_GROUPS_CLAIM``) through ``FORGE_OIDC_ROLES``: roles the claim maps to are
added, forge roles it no longer maps to are removed, other Django groups are left alone.
Team roles (groups ``team:role`` of the teams ``FORGE_TEAMS`` names) follow the claim the
same way through ``FORGE_OIDC_TEAMS``. Each group added or removed is an audit entry
(``forgeui.team.membership``). SSO never makes anyone staff or superuser, nor an account
named as agents are (``agent:NAME``): such a sign-in is refused with a message on the
login page.

An SSO session ends ``FORGE_SSO_SESSION_SECONDS`` (an hour) after the sign-in
(``forgeui.team.sign_in``): the next sign-in, usually silent at the provider, sets the
roles again, so a group removed there stops counting here within that time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core import checks
from django.core.exceptions import SuspiciousOperation
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import URLPattern, path
from django.utils import timezone
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from forgeui.models import (
    AGENT_USER_PREFIX,
    AuditEntry,
    SignInMethod,
    SsoIdentity,
    reserved_for_agents,
)
from forgeui.permissions import teams
from forgeui.permissions.roles import ROLE_NAMES, Role
from forgeui.team import membership

logger = logging.getLogger(__name__)


def enabled() -> bool:
    return bool(getattr(settings, "FORGE_SSO", False))


def role_map() -> dict[str, frozenset[Role]]:
    """Claim group -> the forge roles it grants (``FORGE_OIDC_ROLES``, checked at start)."""
    found: dict[str, frozenset[Role]] = {}
    for group, roles in getattr(settings, "FORGE_OIDC_ROLES", {}).items():
        names = [roles] if isinstance(roles, str) else list(roles)
        found[str(group)] = frozenset(Role(name) for name in names)
    return found


def team_role_map() -> dict[str, frozenset[str]]:
    """Claim group -> the team-role groups it grants (``FORGE_OIDC_TEAMS``); a name that
    is not a role of a configured team grants nothing (the check names it)."""
    found: dict[str, frozenset[str]] = {}
    for group, names in getattr(settings, "FORGE_OIDC_TEAMS", {}).items():
        listed = [names] if isinstance(names, str) else names if isinstance(names, list) else []
        found[str(group)] = frozenset(str(n) for n in listed if is_team_role(str(n)))
    return found


def is_team_role(name: str) -> bool:
    """Is ``name`` a ``team:role`` group of a team ``FORGE_TEAMS`` names now?"""
    parts = teams.split_group(name)
    return parts is not None and parts[0] in teams.configured() and parts[1] in ROLE_NAMES


def claimed_groups(claims: dict[str, Any]) -> list[str]:
    """The provider's groups for this sign-in; a claim that is not a list names none."""
    groups = claims.get(settings.FORGE_OIDC_GROUPS_CLAIM)
    if isinstance(groups, str):
        groups = [groups]
    return [str(g) for g in groups] if isinstance(groups, list) else []


def roles_from_claims(claims: dict[str, Any]) -> frozenset[Role]:
    """The forge roles the groups claim grants."""
    mapping = role_map()
    return frozenset().union(*(mapping.get(g, frozenset()) for g in claimed_groups(claims)))


def team_roles_from_claims(claims: dict[str, Any]) -> frozenset[str]:
    """The team-role groups (``finance:reviewer``) the groups claim grants."""
    mapping = team_role_map()
    return frozenset().union(*(mapping.get(g, frozenset()) for g in claimed_groups(claims)))


def sync_roles(user: Any, roles: frozenset[Role]) -> tuple[list[str], list[str]]:
    """Make ``user``'s forge roles exactly ``roles``; the roles (added, removed)."""
    current = set(user.groups.filter(name__in=list(Role)).values_list("name", flat=True))
    return sync_groups(user, current, {str(role) for role in roles})


def sync_team_roles(user: Any, wanted: frozenset[str]) -> tuple[list[str], list[str]]:
    """Make ``user``'s roles in the configured teams exactly ``wanted``; groups of teams
    no longer configured, and every other group, are left alone."""
    current = {name for name in user.groups.values_list("name", flat=True)
               if is_team_role(name)}
    return sync_groups(user, current, set(wanted))


def sync_groups(user: Any, current: set[str], wanted: set[str]) -> tuple[list[str], list[str]]:
    """Add the groups of ``wanted`` not in ``current``, remove those of ``current`` not
    wanted; the names (added, removed)."""
    added, removed = sorted(wanted - current), sorted(current - wanted)
    if added:
        user.groups.add(*[Group.objects.get_or_create(name=name)[0] for name in added])
    if removed:
        user.groups.remove(*Group.objects.filter(name__in=removed))
    for cached in ("_forge_groups", "_forge_roles", "_forge_team_roles"):
        user.__dict__.pop(cached, None)  # forgeui.permissions.roles caches them on the user
    return added, removed


class ForgeOIDCBackend(OIDCAuthenticationBackend):
    """The provider's account, linked by issuer and subject, with roles from its groups."""

    def verify_token(self, token: str, **kwargs: Any) -> Any:
        """The library checks the signature and the nonce; the issuer and the audience
        are checked here, so a token the provider minted for another client is refused."""
        payload = super().verify_token(token, **kwargs)
        issuer = settings.FORGE_OIDC_ISSUER
        if issuer and payload.get("iss") != issuer:
            raise SuspiciousOperation("the ID token was issued by another provider")
        audience = payload.get("aud")
        audiences = [audience] if isinstance(audience, str) else list(audience or [])
        if self.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("the ID token was issued to another client")
        return payload

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        return bool(claims.get("sub"))

    def filter_users_by_claims(self, claims: dict[str, Any]) -> Any:
        reserved = {f"{self.UserModel.USERNAME_FIELD}__istartswith": AGENT_USER_PREFIX}
        return self.UserModel.objects.filter(
            sso_identity__issuer=settings.FORGE_OIDC_ISSUER,
            sso_identity__subject=str(claims["sub"])).exclude(**reserved)

    @transaction.atomic
    def create_user(self, claims: dict[str, Any]) -> Any:
        wanted = preferred_name(claims)
        if reserved_for_agents(wanted):
            return self.refuse(claims, f"the name {wanted!r} is reserved for agents")
        user = self.UserModel.objects.create_user(free_username(wanted),
                                                  email=claims.get("email") or "")
        SsoIdentity.objects.create(user=user, issuer=settings.FORGE_OIDC_ISSUER,
                                   subject=str(claims["sub"]))
        AuditEntry.objects.create(actor=user, sign_in=SignInMethod.SSO, action="sso.user_created",
                                  object_type="user", object_id=str(user.pk),
                                  detail={"subject": str(claims["sub"])})
        return self.update_user(user, claims)

    @transaction.atomic
    def update_user(self, user: Any, claims: dict[str, Any]) -> Any:
        if claims.get("email") and claims["email"] != user.email:
            user.email = claims["email"]
            user.save(update_fields=["email"])
        SsoIdentity.objects.filter(user=user).update(last_sign_in_at=timezone.now())
        with membership.acting(user, SignInMethod.SSO.value):
            added, removed = sync_roles(user, roles_from_claims(claims))
            in_teams = sync_team_roles(user, team_roles_from_claims(claims))
        added, removed = added + in_teams[0], removed + in_teams[1]
        if added or removed:
            AuditEntry.objects.create(actor=user, sign_in=SignInMethod.SSO,
                                      action="sso.roles_synced", object_type="user",
                                      object_id=str(user.pk),
                                      detail={"added": added, "removed": removed})
        return user

    def refuse(self, claims: dict[str, Any], reason: str) -> None:
        """No sign-in: the login page says why, and the audit log keeps the attempt."""
        logger.warning("single sign-on refused for subject %r: %s", claims.get("sub"), reason)
        AuditEntry.objects.create(action="sso.refused", object_type="user",
                                  detail={"subject": str(claims["sub"]), "reason": reason})
        request = getattr(self, "request", None)
        if request is not None:
            messages.error(request, f"Single sign-on refused: {reason}. Ask an administrator "
                                    f"to give your account another name at the provider.",
                           fail_silently=True)


def preferred_name(claims: dict[str, Any]) -> str:
    for candidate in (claims.get(settings.FORGE_OIDC_USERNAME_CLAIM),
                      str(claims.get("email") or "").partition("@")[0], claims.get("sub")):
        if isinstance(candidate, str) and candidate.strip():
            return candidate.strip()[:140]
    raise SuspiciousOperation("the provider named no user")


def free_username(wanted: str) -> str:
    """``wanted``, or ``wanted-2``, ``wanted-3``...: a local account keeps its name."""
    taken = set(get_user_model().objects.filter(username__startswith=wanted)
                .values_list("username", flat=True))
    name, n = wanted, 1
    while name in taken:
        n += 1
        name = f"{wanted}-{n}"
    return name


def only_when_enabled(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """The library's views read their settings when built: without SSO they 404 first."""
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not enabled():
            raise Http404("single sign-on is not configured")
        return view(request, *args, **kwargs)
    return guarded


def urlpatterns() -> list[URLPattern]:
    return [
        path("authenticate/", only_when_enabled(OIDCAuthenticationRequestView.as_view()),
             name="oidc_authentication_init"),
        path("callback/", only_when_enabled(OIDCAuthenticationCallbackView.as_view()),
             name="oidc_authentication_callback"),
    ]


def check_settings(app_configs: Iterable[Any] | None = None, **kwargs: Any) -> list[Any]:
    """A role map naming no forge role is a mistake to catch at start, not at sign-in."""
    if not enabled():
        return []
    errors = []
    known = {role.value for role in Role}
    for group, roles in getattr(settings, "FORGE_OIDC_ROLES", {}).items():
        names = [roles] if isinstance(roles, str) else roles
        if not isinstance(names, list) or not set(names) <= known:
            errors.append(checks.Error(
                f"FORGE_OIDC_ROLES maps {group!r} to {roles!r}; roles are "
                f"{', '.join(Role)}", id="forgeui.E030"))
    errors += check_team_map()
    if not settings.FORGE_OIDC_ISSUER:
        errors.append(checks.Error("FORGE_SSO needs FORGE_OIDC_ISSUER (the provider's "
                                   "issuer, as its ID tokens name it)", id="forgeui.E031"))
    return errors


def check_team_map() -> list[Any]:
    """E032: ``FORGE_OIDC_TEAMS`` maps a provider group to no role of a configured team."""
    errors = []
    for group, names in getattr(settings, "FORGE_OIDC_TEAMS", {}).items():
        listed = [names] if isinstance(names, str) else names
        if not isinstance(listed, list):
            listed = [repr(names)]
        wrong = [str(name) for name in listed if not is_team_role(str(name))]
        if wrong:
            errors.append(checks.Error(
                f"FORGE_OIDC_TEAMS maps {group!r} to {', '.join(map(repr, wrong))}: "
                f"{unknown_team_role(wrong[0])}", id="forgeui.E032",
                hint="a team role is TEAM:ROLE, with a team of FORGE_TEAMS"))
    return errors


def unknown_team_role(name: str) -> str:
    """Why ``name`` is no team role: the unknown team, or the unknown role."""
    parts = teams.split_group(name)
    if parts is None:
        return f"{name!r} is not TEAM:ROLE"
    team, role = parts
    if team not in teams.configured():
        known = ", ".join(sorted(teams.configured())) or "none"
        return f"no team {team!r} in FORGE_TEAMS (teams: {known})"
    return f"no role {role!r} (roles: {', '.join(Role)})"
