"""Every route in the URLconf, pages and API alike, for every kind of caller.

The routes come from ``get_resolver()``, not from a list kept by hand: a route with no
entry in ``RULES`` fails here, so a new one cannot ship without saying who may call it.
Each is called with real ids (a paused run of the demo ``transfer`` graph) by anonymous
visitors (login redirect, or 401 from the API), by a user with no forge role (403) and by
each role: refused (403) unless the role table allows the route's action.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver

from forgeui.models import ApiToken, Checkpoint, Interrupt
from forgeui.requests import service
from forgeui.requests.service import Caller
from forgeui.runs import services
from forgeui.slack import linking
from forgeui.team import decision_links
from forgeui.team.roles import PERMISSIONS, Action, Role

pytestmark = pytest.mark.django_db(transaction=True)

PUBLIC = "public"          # anyone, signed in or not
SIGNED_IN = "signed in"    # any account, with or without a forge role
STAFF = "staff"            # the admin site: staff accounts only
AGENT_OR_ROLE = "asking"   # an agent token, or a person with any forge role
RECIPIENT = "recipient"    # the one person a decision link was e-mailed to (a reviewer)
SCRAPER = "scraper"        # Prometheus, with FORGE_METRICS_TOKEN: no person nor API token
Rule = tuple[str, Action | str]  # (method, who may)

RULES: dict[str, Rule] = {
    "healthz": ("GET", PUBLIC),
    "readyz": ("GET", PUBLIC),
    "metrics": ("GET", SCRAPER),
    "login": ("GET", PUBLIC),
    "logout": ("POST", PUBLIC),
    "password_change": ("GET", SIGNED_IN),
    "password_change_done": ("GET", SIGNED_IN),
    "admin-password-change": ("GET", PUBLIC),  # a redirect to password_change
    "forgeui:decision-link": ("GET", RECIPIENT),
    # Slack signs its own requests (401 otherwise, 404 until Slack is configured).
    "slack-events": ("POST", PUBLIC),
    "slack-profile": ("GET", SIGNED_IN),
    "slack-link": ("GET", SIGNED_IN),
    # Not found unless single sign-on is configured, and then the provider's round trip.
    "oidc_authentication_init": ("GET", PUBLIC),
    "oidc_authentication_callback": ("GET", PUBLIC),
    # The API
    "api:openapi-json": ("GET", Action.READ),
    "api:openapi-view": ("GET", Action.READ),
    "api:api-root": ("GET", PUBLIC),
    "api:health": ("GET", PUBLIC),
    "api:not_found": ("GET", PUBLIC),
    "api:create_request": ("POST", AGENT_OR_ROLE),
    "api:get_request": ("GET", AGENT_OR_ROLE),
    "api:decide_request": ("POST", Action.ANSWER),
    "api:list_graphs": ("GET", Action.READ),
    "api:list_runs": ("GET", Action.READ),
    "api:start_run": ("POST", Action.START_RUN),
    "api:get_run": ("GET", Action.READ),
    "api:list_checkpoints": ("GET", Action.READ),
    "api:get_checkpoint": ("GET", Action.READ),
    "api:get_checkpoint_state": ("GET", Action.READ),
    "api:list_interrupts": ("GET", Action.READ),
    "api:bulk_resume": ("POST", Action.ANSWER),
    "api:cancel_at_breakpoint": ("POST", Action.ANSWER),
    "api:get_interrupt": ("GET", Action.READ),
    "api:list_audit": ("GET", Action.READ),
    "api:resume_interrupt": ("POST", Action.ANSWER),
    "api:claim_interrupt": ("POST", Action.ANSWER),
    "api:release_interrupt": ("POST", Action.ANSWER),
    "api:assign_interrupt": ("POST", Action.ASSIGN),
    "api:resume_targeted": ("POST", Action.RESUME_TARGETED),
    "api:resume_map": ("POST", Action.ANSWER),  # a sub-agent's answer needs more
    "api:fork_thread": ("POST", Action.FORK),
    "api:add_steering": ("POST", Action.STEER),
    "api:cancel_run": ("POST", Action.CANCEL),
    "api:recover_run": ("POST", Action.RECOVER),
    # The pages
    "forgeui:inbox": ("GET", Action.READ),
    "forgeui:bulk": ("POST", Action.ANSWER),
    "forgeui:interrupt": ("GET", Action.READ),
    "forgeui:answer": ("POST", Action.ANSWER),
    "forgeui:cancel-at-breakpoint": ("POST", Action.ANSWER),
    "forgeui:decide": ("POST", Action.ANSWER),
    "forgeui:keep-note": ("POST", Action.STEER),
    "forgeui:claim": ("POST", Action.ANSWER),
    "forgeui:assign": ("POST", Action.ASSIGN),
    "forgeui:graph": ("GET", Action.READ),
    "forgeui:runs": ("GET", Action.READ),
    "forgeui:start-run": ("POST", Action.START_RUN),
    "forgeui:start-form": ("GET", Action.START_RUN),
    "forgeui:run": ("GET", Action.READ),
    "forgeui:steer": ("POST", Action.STEER),
    "forgeui:cancel": ("POST", Action.CANCEL),
    "forgeui:recover": ("POST", Action.RECOVER),
    "forgeui:fork-edit": ("POST", Action.FORK),
    "forgeui:timeline-export": ("GET", Action.READ),
    "forgeui:fork": ("POST", Action.FORK),
    "forgeui:tree-history": ("GET", Action.READ),
    "forgeui:timeline": ("GET", Action.READ),
    "forgeui:audit": ("GET", Action.READ),
    "forgeui:audit-export": ("GET", Action.READ),
    "forgeui:audit-export-csv": ("GET", Action.READ),
    "forgeui:decisions": ("GET", Action.READ),
    "forgeui:decisions-export": ("GET", Action.READ),
    "forgeui:decisions-export-csv": ("GET", Action.READ),
    "forgeui:checkpoint": ("GET", Action.READ),
}
# The admin site wraps every view of its own in its staff check; each is still called.
STAFF_NAMESPACE = "admin"
RULES.update({"admin:login": ("GET", PUBLIC), "admin:logout": ("GET", PUBLIC),
              # Shadowed by admin-password-change, which comes first.
              "admin:password_change": ("GET", PUBLIC),
              # The approval policies, listed read-only inside the admin site.
              "admin-policies": ("GET", STAFF)})
# A valid JSON body for each API POST, so a refusal cannot hide behind a 422.
BODIES: dict[str, Any] = {
    "api:start_run": {"graph": "transfer", "input": {"amount": 1}},
    "api:bulk_resume": {"ids": ["{interrupt_id}"], "value": True},
    "api:cancel_at_breakpoint": {"reason": "not needed"},
    "api:resume_interrupt": {"value": True},
    "api:assign_interrupt": {"users": ["reviewer"]},
    "api:resume_targeted": {"run_id": "{run_id}", "value": True},
    "api:resume_map": {"thread_id": "{thread_id}", "answers": {"{interrupt_id}": True}},
    "api:add_steering": {"run_id": "{run_id}", "text": "be brief"},
    "api:create_request": {"actions": [{"name": "send_email"}]},
    "api:decide_request": {"decisions": [{"type": "approve"}]},
}
CALLERS = ["anonymous", "nobody", *(role.value for role in Role)]


@dataclass(frozen=True)
class Route:
    name: str       # "namespace:name", or the pattern itself where it has no name
    pattern: str    # the full pattern, as the URLconf spells it
    api: bool

    @property
    def rule(self) -> Rule:
        if self.name.startswith(f"{STAFF_NAMESPACE}:") and self.name not in RULES:
            return ("GET", STAFF)
        if self.name not in RULES:
            raise AssertionError(f"route {self.pattern!r} ({self.name}) has no entry in "
                                 f"RULES: say who may call it")
        return RULES[self.name]


def routes() -> list[Route]:
    """Every URL pattern reachable from the root URLconf."""
    found: list[Route] = []

    def walk(patterns: list[Any], prefix: str, namespace: str) -> None:
        for entry in patterns:
            if isinstance(entry, URLResolver):
                inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
                walk(entry.url_patterns, prefix + str(entry.pattern), inner)
            elif isinstance(entry, URLPattern):
                pattern = prefix + str(entry.pattern)
                name = f"{namespace}{entry.name}" if entry.name else f"{namespace}{pattern}"
                found.append(Route(name, pattern, pattern.startswith("api/")))

    walk(get_resolver().url_patterns, "", "")
    return found


CONVERTER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<parameter>[^>]+)>")
GROUP = re.compile(r"\(\?P<(?P<parameter>[^>]+)>[^)]*\)")


def url_of(pattern: str, ids: dict[str, str]) -> str:
    """``pattern`` with each parameter filled with a real id."""
    def value(match: re.Match[str]) -> str:
        parameter = match.group("parameter")
        if parameter not in ids:
            raise AssertionError(f"no id for <{parameter}> in {pattern!r}: add one to ids")
        return ids[parameter]
    filled = GROUP.sub(value, CONVERTER.sub(value, pattern))
    return "/" + filled.replace("^", "").replace("$", "")


@pytest.fixture
def ids(users: dict[str, User]) -> dict[str, str]:
    """Real ids for every path parameter the URLconf has."""
    run = services.start_run(users["supervisor"], "transfer", {"amount": 5})
    interrupt = Interrupt.objects.get(run_id=run.run_id)
    checkpoint = Checkpoint.objects.filter(thread_id=run.thread_id).latest("seq")
    asked = service.create(Caller(users["supervisor"]), {"actions": [{"name": "send_email"}]})
    return {"interrupt_id": interrupt.pk, "run_id": run.run_id, "thread_id": run.thread_id,
            "checkpoint_id": checkpoint.pk, "name": "transfer", "request_id": asked.row.id,
            "rest": "no/such/route", "object_id": str(users["reviewer"].pk),
            "content_type_id": "1", "id": str(users["reviewer"].pk), "app_label": "forgeui",
            "url": "no-such-page/",
            "token": decision_links.token_for(users["reviewer"], interrupt.pk),
            "signed": linking.link_url("U0", "").rstrip("/").rsplit("/", 1)[1]}


class Clients:
    """One signed-in client per caller, signed in again only when a call signed it out
    (a POST to logout): a sign-in costs more than most of the calls themselves."""

    def __init__(self, users: dict[str, User]) -> None:
        self.users = users
        self.signed_in: dict[str, Client] = {}

    def __getitem__(self, who: str) -> Client:
        if who == "anonymous":
            return Client()
        client = self.signed_in.get(who)
        if client is None or client.session.get("_auth_user_id") != str(self.users[who].pk):
            client = self.signed_in[who] = Client()
            client.force_login(self.users[who])
        return client


def call(client: Client, route: Route, ids: dict[str, str]) -> Any:
    url = url_of(route.pattern, ids)
    if route.rule[0] == "GET":
        return client.get(url)
    if not route.api:
        return client.post(url, {})
    return client.post(url, filled(BODIES.get(route.name, {}), ids),
                       content_type="application/json")


def filled(body: Any, ids: dict[str, str]) -> Any:
    """``body`` with each ``"{parameter}"`` replaced by its real id."""
    if isinstance(body, dict):
        return {filled(key, ids): filled(value, ids) for key, value in body.items()}
    if isinstance(body, list):
        return [filled(item, ids) for item in body]
    return body.format(**ids) if isinstance(body, str) else body


def may(who: str, rule: Rule) -> bool:
    _method, needs = rule
    if needs == PUBLIC:
        return True
    if who == "anonymous" or needs in (STAFF, SCRAPER):
        return False
    if needs == SIGNED_IN:
        return True
    if needs == RECIPIENT:
        return who == Role.REVIEWER.value
    if who == "nobody":
        return False
    return needs == AGENT_OR_ROLE or Role(who) in PERMISSIONS[Action(needs)]


def refused(route: Route, who: str, response: Any) -> bool:
    """Did the route turn ``who`` away, the way it must turn such a caller away?"""
    location = response.get("Location", "")
    if route.rule[1] == PUBLIC:
        return response.status_code in (401, 403)
    if route.rule[1] == STAFF:
        return response.status_code == 302 and location.startswith("/admin/login/")
    if route.rule[1] == SCRAPER:  # off without the setting (404), else 401 to the rest
        return response.status_code in (401, 404)
    if who == "anonymous":
        if route.api:
            return response.status_code == 401
        return response.status_code == 302 and location.startswith("/accounts/login/")
    return response.status_code == 403


def served(response: Any) -> bool:
    """A page or its redirect elsewhere (a checkpoint's page is its thread's timeline)."""
    location = response.get("Location", "")
    return response.status_code == 200 or (response.status_code == 302 and not any(
        location.startswith(login) for login in ("/accounts/login/", "/admin/login/")))


def checks(route_list: list[Route]) -> Iterator[tuple[Route, str]]:
    """Refusals first, then what is allowed: an allowed POST may change the run."""
    pairs = [(route, who) for route in route_list for who in CALLERS]
    yield from [(r, w) for r, w in pairs if not may(w, r.rule)]
    yield from [(r, w) for r, w in pairs if may(w, r.rule) and r.rule[0] == "GET"]
    yield from [(r, w) for r, w in pairs if may(w, r.rule) and r.rule[0] != "GET"]


def test_every_route_has_a_rule_and_every_rule_a_route() -> None:
    found = routes()
    assert len(found) > 50
    names = {route.name for route in found}
    unruled = sorted(route.pattern for route in found
                     if not route.name.startswith(f"{STAFF_NAMESPACE}:")
                     and route.name not in RULES)
    assert unruled == [], f"routes with no entry in RULES: {unruled}"
    assert sorted(set(RULES) - names) == [], "RULES names routes that no longer exist"


def test_every_route_refuses_whom_it_must_and_serves_whom_it_may(
        users: dict[str, User], ids: dict[str, str]) -> None:
    wrong = []
    clients = Clients(users)
    for route, who in checks(routes()):
        method = route.rule[0]
        response = call(clients[who], route, ids)
        if may(who, route.rule) == refused(route, who, response):
            wrong.append(f"{method} /{route.pattern} as {who}: {response.status_code} "
                         f"{response.get('Location', '')}")
        elif may(who, route.rule) and method == "GET" and route.rule[1] != PUBLIC \
                and not served(response):
            wrong.append(f"GET /{route.pattern} as {who}: {response.status_code}, not served")
    assert wrong == [], "\n".join(wrong)


# An agent's policy comes with its token; a name the agent gives itself cannot take it.
BILLING = {"billing": {"agents": ["billing-bot"], "approvals": 2,
                       "auto_approve": {"field": "amount", "lt": 1000}}}


@override_settings(FORGE_POLICIES=BILLING)
def test_agents_naming_themselves_after_other_agents_get_none_of_theirs(
        users: dict[str, User]) -> None:
    bearer = {name: ApiToken.objects.issue(User.objects.create_user(f"agent:{name}"),
                                           agent=name)[1]
              for name in ("billing-bot", "helper-bot")}
    bearer |= {who: ApiToken.objects.issue(users[who])[1] for who in ("auditor", "reviewer")}
    asked = {who: _ask(token, "billing-bot") for who, token in bearer.items()}
    own = asked.pop("billing-bot")
    assert own["status"] == "decided" and own["policy"]["decided_by"] == "policy"
    for who, made in asked.items():  # the auditor's own token included
        assert made["status"] == "pending", who
        assert made["approvals"].startswith("0 of 2 approvals"), who
    impostor = Client(headers={"Authorization": f"Bearer {bearer['helper-bot']}"})
    assert impostor.get(f"/api/requests/{own['id']}").status_code == 404
    assert impostor.post(f"/api/requests/{asked['helper-bot']['id']}/decision",
                         {"decisions": [{"type": "approve"}]},
                         content_type="application/json").status_code == 403


def _ask(token: str, name: str) -> dict[str, Any]:
    client = Client(headers={"Authorization": f"Bearer {token}"})
    made = client.post("/api/requests", {"actions": [{"name": "wire", "args": {
        "amount": 999}}], "agent": {"name": name}}, content_type="application/json")
    assert made.status_code == 201, made.content
    read = client.get(f"/api/requests/{made.json()['id']}")
    assert read.status_code == 200, read.content
    return dict(read.json())
