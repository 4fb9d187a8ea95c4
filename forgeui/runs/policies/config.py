"""``FORGE_POLICIES``, read once and checked: what each policy requires, and what it covers.

::

    {"payments": {"nodes": ["transfer/ask"], "agents": ["billing-bot"], "teams": ["finance"],
                  "approvals": 2, "rejections": 1,
                  "roles": ["supervisor"], "groups": ["finance"], "users": ["carol"],
                  "auto_approve": {"field": "amount", "lt": 1000},
                  "answers": {"approve": {"field": "answer.ok", "eq": true},
                              "reject": {"field": "answer.ok", "eq": false}},
                  "escalate_after_s": 3600, "escalate_to": "finance-leads"}}

A node (``graph/node``, or ``graph/*`` for all of a graph's), an agent name and a team
(``FORGE_TEAMS``) belong to one policy at most, so which policy applies is never a matter
of order; a team's policy covers those of its interrupts that no node's or agent's does.
The settings are the only source: nothing in a payload or a request is read here. An
agent's policy is the one its token names; a name the agent gives itself may only add
requirements (``Policy.tightened_by``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from forgeui.runs.policies import rules

KEYS = frozenset({"nodes", "agents", "teams", "approvals", "rejections", "roles", "groups", "users",
                  "auto_approve", "answers", "escalate_after_s", "escalate_to",
                  "description"})
ANSWER_SIDES = ("approve", "reject")
MAX_APPROVALS = 20


class PolicyError(ValueError):
    """``FORGE_POLICIES`` is not usable; the message names the policy and the key."""


@dataclass(frozen=True, slots=True)
class Policy:
    """One named policy, as checked."""

    name: str
    nodes: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    teams: tuple[str, ...] = ()
    approvals: int = 1
    rejections: int = 1
    roles: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    users: frozenset[str] = frozenset()
    auto_approve: dict[str, Any] | None = None
    answers: dict[str, Any] | None = None  # rules on an answer: what approves, what rejects
    escalate_after_s: float | None = None
    escalate_to: str = ""
    description: str = ""
    rule_text: str = field(default="", compare=False)
    also: tuple[Policy, ...] = ()  # policies whose who-may-count must hold as well

    @property
    def restricted(self) -> bool:
        """Whether only named roles, groups or users may count (under this part)."""
        return bool(self.roles or self.groups or self.users)

    @property
    def parts(self) -> tuple[Policy, ...]:
        """This policy and those added to it: a person counts only if every part allows."""
        return (self, *self.also)

    def tightened_by(self, chosen: Policy) -> Policy:
        """This policy (the token's) with what ``chosen`` (the policy of a name the agent
        gave itself) adds: the most approvals, the fewest rejections to end it, people
        allowed by both, a rule only where both approve. Nothing of ``chosen`` can loosen
        it: its rule, its answers and its escalation are left out."""
        extra = chosen.requirements()
        if extra in self.parts:
            return self
        auto = ({"all": [self.auto_approve, chosen.auto_approve]}
                if self.auto_approve and chosen.auto_approve else None)
        return replace(self, approvals=max(self.approvals, extra.approvals),
                       rejections=min(self.rejections, extra.rejections), auto_approve=auto,
                       rule_text=json.dumps(auto, sort_keys=True) if auto else "",
                       also=(*self.also, extra))

    def requirements(self) -> Policy:
        """Only what this policy requires of people: no rule approves, no answer is read
        its own way, nothing escalates (all of which may let an approval through)."""
        return replace(self, auto_approve=None, rule_text="", answers=None,
                       escalate_after_s=None, escalate_to="", also=())

    def as_dict(self) -> dict[str, Any]:
        """The policy as recorded with a decision and shown on its page."""
        return {"name": self.name, "nodes": list(self.nodes), "agents": list(self.agents),
                **({"teams": list(self.teams)} if self.teams else {}),
                "approvals": self.approvals, "rejections": self.rejections,
                "roles": sorted(self.roles), "groups": sorted(self.groups),
                "users": sorted(self.users), "auto_approve": self.auto_approve,
                "answers": self.answers, "escalate_after_s": self.escalate_after_s,
                "escalate_to": self.escalate_to,
                **({"also": [p.as_dict() for p in self.also]} if self.also else {})}


@dataclass(frozen=True, slots=True)
class Policies:
    """Every policy, and the index that finds the one covering a node, an agent or a
    team."""

    by_name: dict[str, Policy]
    by_node: dict[str, Policy]
    by_agent: dict[str, Policy]
    by_team: dict[str, Policy] = field(default_factory=dict)

    def for_team(self, team: str) -> Policy | None:
        """The policy naming ``team`` ("" = owned by none: no team's policy covers it)."""
        return self.by_team.get(team) if team else None

    def for_node(self, graph: str, node: str) -> Policy | None:
        return self.by_node.get(f"{graph}/{node}") or self.by_node.get(f"{graph}/*")

    def for_agent(self, *names: str) -> Policy | None:
        """The strictest policy naming any of ``names`` (the names a token carries)."""
        found = [self.by_agent[n] for n in names if n and n in self.by_agent]
        return max(found, key=lambda p: (p.approvals, p.name), default=None)

    def for_request(self, chosen: str, *identity: str) -> Policy | None:
        """The policy of an agent's request: the one its token's ``identity`` selects,
        with whatever the name the agent ``chosen`` for itself adds (never less)."""
        found = self.for_agent(*identity)
        extra = self.by_agent.get(chosen) if chosen and chosen not in identity else None
        if extra is None:
            return found
        return extra.requirements() if found is None else found.tightened_by(extra)


def parse(raw: Any) -> Policies:
    """Check ``raw`` (the setting, or its JSON text) and index it; ``PolicyError`` if bad."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw or "{}")
        except json.JSONDecodeError as exc:
            raise PolicyError(f"FORGE_POLICIES is not JSON: {exc}") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise PolicyError("FORGE_POLICIES must be a JSON object {name: policy}")
    by_name = {name: _policy(name, body) for name, body in raw.items()}
    return Policies(by_name, _index(by_name, "nodes"), _index(by_name, "agents"),
                    _index(by_name, "teams"))


def _index(by_name: dict[str, Policy], key: str) -> dict[str, Policy]:
    index: dict[str, Policy] = {}
    for policy in by_name.values():
        for item in getattr(policy, key):
            if item in index:
                raise PolicyError(f"FORGE_POLICIES: {key[:-1]} {item!r} is in both "
                                  f"{index[item].name!r} and {policy.name!r}; one policy "
                                  f"covers it")
            index[item] = policy
    return index


def _policy(name: Any, body: Any) -> Policy:
    where = f"FORGE_POLICIES[{name!r}]"
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise PolicyError(f"{where}: a policy's name is a text of 1 to 200 characters")
    if not isinstance(body, dict):
        raise PolicyError(f"{where}: a JSON object, not {type(body).__name__}")
    if unknown := sorted(set(body) - KEYS):
        raise PolicyError(f"{where}: unknown keys {unknown}; known: {sorted(KEYS)}")
    nodes, agents, teams = (_names(body, key, where) for key in ("nodes", "agents", "teams"))
    _require_covered(nodes, agents, teams, where)
    auto = body.get("auto_approve")
    if auto is not None:
        try:
            rules.check(auto, f"{where}.auto_approve")
        except rules.RuleError as exc:
            raise PolicyError(str(exc)) from None
    answers = _answers(body.get("answers"), where)
    after, to = body.get("escalate_after_s"), body.get("escalate_to", "")
    if after is not None and (isinstance(after, bool) or not isinstance(after, int | float)
                              or not 0 < after < 10**9):
        raise PolicyError(f"{where}.escalate_after_s: seconds, from 1 to 10**9")
    if (after is None) != (not to) or not isinstance(to, str):
        raise PolicyError(f"{where}: escalate_after_s and escalate_to (a group name) go "
                          f"together")
    return Policy(name=name, nodes=tuple(nodes), agents=tuple(agents), teams=tuple(teams),
                  approvals=_count(body, "approvals", where),
                  rejections=_count(body, "rejections", where),
                  roles=frozenset(_names(body, "roles", where)),
                  groups=frozenset(_names(body, "groups", where)),
                  users=frozenset(_names(body, "users", where)),
                  auto_approve=auto, answers=answers,
                  escalate_after_s=None if after is None else float(after),
                  escalate_to=to, description=str(body.get("description") or ""),
                  rule_text=json.dumps(auto, sort_keys=True) if auto is not None else "")


def _require_covered(nodes: list[str], agents: list[str], teams: list[str],
                     where: str) -> None:
    if not nodes and not agents and not teams:
        raise PolicyError(f"{where}: covers nothing; name 'nodes' (graph/node), 'agents' "
                          f"or 'teams'")
    for node in nodes:
        graph, _, node_name = node.partition("/")
        if not graph or not node_name:
            raise PolicyError(f"{where}.nodes: {node!r} is not graph/node")


def _answers(raw: Any, where: str) -> dict[str, Any] | None:
    """``{"approve": rule, "reject": rule}`` (either or both), rules on ``answer``."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or not raw or set(raw) - set(ANSWER_SIDES):
        raise PolicyError(f"{where}.answers: {{\"approve\": rule, \"reject\": rule}}, "
                          f"either or both")
    for side, rule in raw.items():
        try:
            rules.check(rule, f"{where}.answers.{side}")
        except rules.RuleError as exc:
            raise PolicyError(str(exc)) from None
    return dict(raw)


def _count(body: dict[str, Any], key: str, where: str) -> int:
    value = body.get(key, 1)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_APPROVALS:
        raise PolicyError(f"{where}.{key}: a whole number from 1 to {MAX_APPROVALS}, "
                          f"not {value!r}")
    return value


def _names(body: dict[str, Any], key: str, where: str) -> list[str]:
    value = body.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise PolicyError(f"{where}.{key}: a list of names")
    return list(dict.fromkeys(v.strip() for v in value))


_loaded: dict[int, Policies] = {}


def policies() -> Policies:
    """The site's policies, parsed once per value of the setting."""
    raw = getattr(settings, "FORGE_POLICIES", None) or {}
    found = _loaded.get(id(raw))
    if found is None:
        _loaded.clear()  # the setting changed (tests override it); keep only the new one
        found = _loaded[id(raw)] = parse(raw)
    return found


@receiver(setting_changed)
def _forget(setting: str, **kwargs: Any) -> None:
    if setting == "FORGE_POLICIES":
        _loaded.clear()
