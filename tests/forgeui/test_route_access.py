"""Every route in the URLconf, pages and API alike, for every kind of caller.

The routes come from ``get_resolver()``, not from a list kept by hand: a route with no
entry in ``RULES`` fails here, so a new one cannot ship without saying who may call it.
Each is called with real ids (a paused run of the demo ``transfer`` graph) by anonymous
visitors (login redirect, or 401 from the API), by a user with no forge role (403) and by
each role: refused (403) unless the role table allows the route's action.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group, User
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver

from forgeui.asgi import application
from forgeui.models import (
    AgentRequest,
    Answer,
    ApiToken,
    Checkpoint,
    Interrupt,
    Run,
    SteeringNote,
)
from forgeui.permissions.roles import PERMISSIONS, Action, Role
from forgeui.requests import service
from forgeui.requests.service import Caller
from forgeui.runs import services
from forgeui.slack import linking
from forgeui.team import decision_links
from tests.forgeui.inbox.test_consumers import headers, session_cookie

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


# -- teams: every route, for each role held in one team ----------------------------------
# Two teams and a graph no team owns. A member of one team must find nothing of the
# other's, nor of the unowned graph's, in any body: ids and payload text are searched for
# in what comes back, whatever the status. Another team's object is 404 to every role.
TEAMS = {"finance": {"graphs": ["custom"], "agents": ["finance-bot"]},
         "support": {"graphs": ["signoff"], "agents": ["support-bot"]}}
UNOWNED = "race"  # owned by no team: plain roles only
TEAM_CALLERS = [f"{team}:{role.value}" for team in TEAMS for role in Role]
# Path parameters that name an object some team owns: another team's is not found.
OWNED_PARAMETERS = frozenset({"interrupt_id", "run_id", "thread_id", "checkpoint_id",
                              "request_id", "name"})
# Bodies naming a team's objects (its graph to start, its interrupts to answer in bulk).
TEAM_BODIES: dict[str, Any] = {
    **BODIES, "api:start_run": {"graph": "{name}", "input": {"payload": {}}},
    "forgeui:bulk": {"ids": ["{interrupt_id}"], "value": "approve"},
    "forgeui:start-run": {"graph": "{name}"},
}


@dataclass
class Owned:
    """What one team (or nobody) owns: the ids for the URLs, and every text of theirs."""

    ids: dict[str, str]
    secrets: set[str]


def owned_by(owner: str, graph: str, supervisor: User, reviewer: User) -> Owned:
    """A paused run, an answered one and an agent's request, each with a secret text (the
    unowned graph shows only the amount in its payload: a number nothing else has)."""
    secret = f"{owner or 'nobody'}-secret-{(owner or 'nobody')[::-1]}"
    amount = 917364251 if graph == UNOWNED else 1
    order = {"amount": amount, "ledger": os.devnull}
    run = services.start_run(supervisor, graph, {**order, "payload": {"note": f"{secret}-p"}})
    done = services.start_run(supervisor, graph, {**order, "payload": {"note": f"{secret}-a"}})
    answered = Interrupt.objects.get(run_id=done.run_id)
    services.answer_interrupt(reviewer, answered.pk, True)
    agent = TEAMS[owner]["agents"][0] if owner else "stray-bot"
    asked = service.create(Caller(User.objects.create_user(f"agent:{agent}"), agent), {
        "actions": [{"name": "send_email", "args": {"to": f"{secret}-r"}}]})
    checkpoint = Checkpoint.objects.filter(thread_id=run.thread_id).latest("seq")
    ids = {"interrupt_id": Interrupt.objects.get(run_id=run.run_id).pk, "run_id": run.run_id,
           "thread_id": run.thread_id, "checkpoint_id": checkpoint.pk, "name": graph,
           "request_id": asked.row.id}
    texts = {str(amount)} if graph == UNOWNED else {f"{secret}-p", f"{secret}-a"}
    found = {*ids.values(), answered.pk, done.run_id, done.thread_id, f"{secret}-r", *texts,
             *Interrupt.objects.filter(run_id=asked.row.id).values_list("id", flat=True)}
    return Owned(ids, found - {graph})


@pytest.fixture
def teams_world(users: dict[str, User]) -> Any:
    with override_settings(FORGE_TEAMS=TEAMS):
        world = {owner: owned_by(owner, graph, users["supervisor"], users["reviewer"])
                 for owner, graph in (("finance", "custom"), ("support", "signoff"),
                                      ("", UNOWNED))}
        for caller in TEAM_CALLERS:
            member = User.objects.create_user(caller.replace(":", "-"))
            member.groups.add(Group.objects.get_or_create(name=caller)[0])
            users[caller] = member
        yield world


def strangers(world: dict[str, Owned], team: str) -> set[str]:
    """Every text of the objects ``team``'s members may not see."""
    return {text for owner, owned in world.items() if owner != team for text in owned.secrets}


def leaked(response: Any, secrets: set[str], sent: set[str] = frozenset()) -> list[str]:
    """The ``secrets`` found in the body (not counting what the caller itself sent)."""
    body = b"".join(response) if getattr(response, "streaming", False) else response.content
    text = body.decode(errors="replace")
    return sorted(s for s in secrets - sent if s in text)


def team_routes() -> list[Route]:
    """Every route a person may call (the admin site is for staff, tested above)."""
    return [r for r in routes() if not r.name.startswith(f"{STAFF_NAMESPACE}:")
            and r.rule[1] not in (STAFF, SCRAPER) and r.name != "logout"]


def parameters(route: Route) -> set[str]:
    return {m.group("parameter") for m in (*CONVERTER.finditer(route.pattern),
                                           *GROUP.finditer(route.pattern))}


def list_urls(own: Owned, other: Owned) -> list[tuple[str, set[str]]]:
    """The lists and exports, and their searches for the other team's words (each URL
    with what it sends: a search box may show the words it was given)."""
    word = sorted(s for s in other.secrets if "-secret-" in s)[0]
    run = other.ids["run_id"]
    return [(url_of(r.pattern, own.ids | RANDOM_IDS), set()) for r in team_routes()
            if r.rule[0] == "GET" and not parameters(r) & OWNED_PARAMETERS] + [
        (f"/?q={word}", {word}), (f"/?tab=mine&q={word}", {word}),
        (f"/api/interrupts?q={word}", {word}), ("/api/interrupts?status=answered", set()),
        ("/api/runs?status=completed", set()), (f"/audit/?object={run}", {run}),
        (f"/api/audit?object={run}", {run}), (f"/audit/decisions/?q={word}", {word}),
        (f"/audit/decisions/export.csv?q={word}", {word})]


# Ids no team owns, for the routes whose other parameters are not objects.
RANDOM_IDS = {"rest": "no/such/route", "url": "no-such-page/", "token": "no-such-token",
              "signed": "no-such-link", "object_id": "1", "id": "1", "app_label": "forgeui",
              "content_type_id": "1"}


def test_team_members_find_nothing_of_another_team_in_any_list(
        users: dict[str, User], teams_world: dict[str, Owned]) -> None:
    leaks, clients = [], Clients(users)
    for caller in TEAM_CALLERS:
        team = caller.split(":")[0]
        other = teams_world["support" if team == "finance" else "finance"]
        for url, sent in list_urls(teams_world[team], other):
            response = clients[caller].get(url)
            if found := leaked(response, strangers(teams_world, team), sent):
                leaks.append(f"GET {url} as {caller}: {response.status_code} shows {found}")
    assert leaks == [], "\n".join(leaks)


def test_team_members_see_their_own_teams_work_in_the_lists(
        users: dict[str, User], teams_world: dict[str, Owned]) -> None:
    missing, clients = [], Clients(users)
    for caller in TEAM_CALLERS:
        own = teams_world[caller.split(":")[0]]
        for url in ("/", "/api/interrupts", "/runs/", "/api/runs"):
            if own.ids["interrupt_id" if "interrupts" in url or url == "/" else "run_id"] \
                    not in clients[caller].get(url).content.decode():
                missing.append(f"GET {url} as {caller}")
    everything = {owned.ids["interrupt_id"] for owned in teams_world.values()}
    inbox = clients["auditor"].get("/").content.decode()  # a plain role: everywhere
    assert missing == [] and all(i in inbox for i in everything), "\n".join(missing)


def test_another_teams_objects_are_not_found_by_any_role(
        users: dict[str, User], teams_world: dict[str, Owned]) -> None:
    wrong, clients = [], Clients(users)
    before = state_of(teams_world)
    for caller in TEAM_CALLERS:
        team = caller.split(":")[0]
        for owner, other in teams_world.items():
            if owner == team:
                continue
            for route in team_routes():
                ids = other.ids | RANDOM_IDS
                body = filled(TEAM_BODIES.get(route.name, {}), ids)
                named = parameters(route) & OWNED_PARAMETERS
                if route.name == "api:create_request" or not (
                        named or (route.rule[0] == "POST" and body)):
                    continue  # a new request names no object of anyone's
                response = call_with(clients[caller], route, ids, body)
                sent = {ids[p] for p in named} | set(re.findall(r"[\w-]+", json.dumps(body)))
                if named and response.status_code not in not_found(caller, route):
                    wrong.append(f"{route.rule[0]} /{route.pattern} of {owner or 'nobody'} as "
                                 f"{caller}: {response.status_code}, not 404")
                if found := leaked(response, strangers(teams_world, team), sent):
                    wrong.append(f"{route.rule[0]} /{route.pattern} as {caller} shows {found}")
    assert wrong == [], "\n".join(wrong)
    assert state_of(teams_world) == before, "another team's objects were changed"


def not_found(caller: str, route: Route) -> set[int]:
    """404; or 403 where the caller's role may not do the route's action in any team: that
    refusal comes before any object is looked up, so it says nothing of the object."""
    needs, role = route.rule[1], Role(caller.split(":")[1])
    if isinstance(needs, Action) and role not in PERMISSIONS[needs]:
        return {403, 404}
    return {404}


def test_team_roles_do_in_their_team_what_the_role_table_says(
        users: dict[str, User], teams_world: dict[str, Owned]) -> None:
    """Refusals and reads only: an allowed POST would change the run the rest use."""
    wrong, clients = [], Clients(users)
    for caller in TEAM_CALLERS:
        team, role = caller.split(":")
        for route in team_routes():
            if not isinstance(route.rule[1], Action) or route.name == "api:create_request":
                continue
            may_act = Role(role) in PERMISSIONS[route.rule[1]]
            if route.rule[0] == "POST" and may_act:
                continue
            ids = teams_world[team].ids | RANDOM_IDS
            response = call_with(clients[caller], route, ids,
                                 filled(TEAM_BODIES.get(route.name, {}), ids))
            if not may_act and response.status_code != 403:
                wrong.append(f"{route.rule[0]} /{route.pattern} as {caller}: "
                             f"{response.status_code}, not 403")
            elif may_act and not served(response):
                wrong.append(f"GET /{route.pattern} as {caller}: {response.status_code}")
    assert wrong == [], "\n".join(wrong)


def call_with(client: Client, route: Route, ids: dict[str, str], body: Any) -> Any:
    url = url_of(route.pattern, ids)
    if route.rule[0] == "GET":
        return client.get(url)
    if not route.api:
        return client.post(url, body)
    return client.post(url, body, content_type="application/json")


def state_of(world: dict[str, Owned]) -> dict[str, Any]:
    """What an action on another team's objects would change: statuses, answers, notes,
    claims, runs and requests."""
    runs = [owned.ids["run_id"] for owned in world.values()]
    return {"interrupts": sorted(Interrupt.objects.filter(run_id__in=runs).values_list(
                "id", "status", "claimed_by_id", "assignees")),
            "runs": sorted(Run.objects.values_list("run_id", "status")),
            "answers": Answer.objects.count(), "notes": SteeringNote.objects.count(),
            "requests": AgentRequest.objects.count()}


@sync_to_async
def started_in_team(supervisor: User, graph: str, note: str) -> str:
    run = services.start_run(supervisor, graph, {"payload": {"note": note}, "ledger": "x"})
    return str(Interrupt.objects.get(run_id=run.run_id).pk)


async def frames_until(socket: WebsocketCommunicator, wanted: str = "") -> str:
    """Every frame until one holds ``wanted`` (with none wanted: until the socket is
    quiet), then those still on their way."""
    text = ""
    while wanted and wanted not in text:
        text += await socket.receive_from(timeout=5)
    while not await socket.receive_nothing(timeout=0.5):
        text += await socket.receive_from(timeout=1)
    return text


async def test_a_team_members_socket_never_carries_another_teams_rows(
        users: dict[str, User], teams_world: dict[str, Owned]) -> None:
    member = users["finance:reviewer"]
    own, others = teams_world["finance"], strangers(teams_world, "finance")
    cookie = await sync_to_async(session_cookie)(member)
    socket = WebsocketCommunicator(application, "/ws/inbox/", headers=headers(cookie))
    connected, _ = await socket.connect(timeout=5)
    assert connected
    try:
        await socket.send_json_to({"after": 0})  # the replay: every event there is
        replayed = await frames_until(socket, own.ids["interrupt_id"])
        assert [s for s in others if s in replayed] == []
        theirs = await started_in_team(users["supervisor"], "signoff", "support-new-secret")
        mine = await started_in_team(users["supervisor"], "custom", "finance-new-secret")
        live = await frames_until(socket, mine)
        assert "finance-new-secret" in live
        assert [s for s in {*others, theirs, "support-new-secret"} if s in live] == []
    finally:
        await socket.disconnect()
