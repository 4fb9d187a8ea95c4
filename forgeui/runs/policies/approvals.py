"""Counting approvals toward a policy: which policy covers an interrupt, who may count,
what an answer counts as, and how far it has come ("1 of 2 approvals: alice; ...").

The service that records an answer calls these inside its transaction, with the
interrupt's row locked, so the count it reads is the count it adds to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from forgeui.models import AgentRequest, Approval, Interrupt, Run, Vote
from forgeui.permissions.roles import PERMISSIONS, ROLE_NAMES, Action, groups_of
from forgeui.runs.policies.config import Policies, Policy, policies
from forgeui.runs.registry import REQUEST_GRAPH

ANSWERING = frozenset(role.value for role in PERMISSIONS[Action.ANSWER])
NUMBERS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def policy_for(interrupt: Interrupt) -> Policy | None:
    """The policy covering ``interrupt``: by its graph and node, or for an agent's request
    by its token (its agent name, its user), tightened by the name the agent gave; else
    its team's."""
    found = policies()
    if not found.by_name:
        return None
    return _own_policy(found, interrupt) or found.for_team(interrupt.team)


def _own_policy(found: Policies, interrupt: Interrupt) -> Policy | None:
    graph = interrupt.run.graph
    if graph != REQUEST_GRAPH:
        return found.for_node(graph, interrupt.node)
    names = (AgentRequest.objects.filter(pk=interrupt.root_thread_id)
             .values_list("agent", "token_agent", "owner__username").first())
    if not names:
        return None
    chosen, token_agent, owner = names
    return found.for_request(chosen, token_agent, owner or "")


def starter_ids(interrupt: Interrupt) -> set[int]:
    """Who may not approve: the person who started the tree (a fork keeps its original's
    starter), who forked it, or owns the asking token (a request's run's starter)."""
    return starters_of([interrupt])[interrupt.pk]


def starters_of(interrupts: list[Interrupt]) -> dict[str, set[int]]:
    """``starter_ids`` of each interrupt, in at most one query for a page of rows."""
    roots: dict[str, list[Run]] = {}
    for interrupt in interrupts:  # a root run's own interrupt: its run is loaded already
        if interrupt.run.parent_run_id is None:
            roots.setdefault(interrupt.root_thread_id, []).append(interrupt.run)
    missing = {i.root_thread_id for i in interrupts} - set(roots)
    for root in Run.objects.filter(thread_id__in=missing, parent_run_id=None):
        roots.setdefault(root.thread_id, []).append(root)
    return {i.pk: {pk for root in roots.get(i.root_thread_id, [])
                   for pk in (root.started_by_id, root.forked_by_id) if pk is not None}
            for i in interrupts}


@dataclass(frozen=True, slots=True)
class Person:
    """What the policy's rules read of whoever answers."""

    pk: int | None
    username: str
    groups: frozenset[str]
    is_superuser: bool

    @classmethod
    def of(cls, user: Any) -> Person:
        return cls(user.pk, user.get_username(), groups_of(user), bool(user.is_superuser))

    def roles_in(self, team: str) -> frozenset[str]:
        """The roles they hold everywhere, and those held in ``team``."""
        held = {name.partition(":")[2] for name in self.groups if team
                and name.startswith(f"{team}:")}
        return frozenset((self.groups | held) & ROLE_NAMES)

    def answers_in(self, team: str) -> bool:
        """Whether a role lets them answer an interrupt of ``team`` at all."""
        return self.is_superuser or bool(self.roles_in(team) & ANSWERING)


def why_not_counted(policy: Policy, user: Any, interrupt: Interrupt,
                    starters: set[int] | None = None) -> str | None:
    """Why ``user``'s approval cannot count, or None when it can (``starters``: the
    interrupt's ``starter_ids`` when already known)."""
    person = user if isinstance(user, Person) else Person.of(user)
    if person.pk in (starter_ids(interrupt) if starters is None else starters):
        return (f"policy {policy.name!r}: you started this run (or forked it, or own the "
                f"token that asked), and nobody approves their own")
    if interrupt.team and not person.answers_in(interrupt.team):
        return (f"policy {policy.name!r}: only people who answer in team {interrupt.team} "
                f"may approve")
    for part in policy.parts:  # every part's say: a name an agent chose only narrows
        if (reason := _outside(part, person, interrupt)) is not None:
            return reason
    return None


def _outside(policy: Policy, person: Person, interrupt: Interrupt) -> str | None:
    escalated = bool(interrupt.escalated_at and policy.escalate_to)
    if not policy.restricted and not escalated:
        return None
    groups = person.groups
    if escalated and policy.escalate_to in groups:
        return None
    if not policy.restricted:  # escalated: the group it went to decides now
        return f"policy {policy.name!r}: escalated to group {policy.escalate_to}"
    roles = person.roles_in(interrupt.team)
    if (person.username in policy.users or groups & policy.groups
            or roles & policy.roles or (person.is_superuser and policy.roles)):
        return None
    return f"policy {policy.name!r}: only {_who(policy, interrupt)} may approve"


def eligible(policy: Policy, interrupt: Interrupt, voted: frozenset[str] = frozenset()) -> str:
    """Who may count, in words: "finance or carol"; "" when anyone with the role may.
    Named users in ``voted`` are left out: they have had their say."""
    found = [words for part in policy.parts if (words := _who(part, interrupt, voted))]
    if len(found) < 2:
        return "".join(found)
    return " and also ".join(f"({words})" if " or " in words else words for words in found)


def _who(policy: Policy, interrupt: Interrupt, voted: frozenset[str] = frozenset()) -> str:
    names = [*sorted(policy.groups), *sorted(policy.users - voted),
             *(f"a {role}" for role in sorted(policy.roles))]
    if interrupt.escalated_at and policy.escalate_to:
        names = [policy.escalate_to, *[n for n in names if n != policy.escalate_to]]
    return " or ".join(names)


@dataclass(frozen=True, slots=True)
class Tally:
    """Where an interrupt under a policy stands."""

    policy: Policy
    approvals: list[Approval]
    rejections: list[Approval]
    who: str  # who may still approve, in words

    @property
    def approved(self) -> bool:
        return len(self.approvals) >= self.policy.approvals

    @property
    def rejected(self) -> bool:
        return len(self.rejections) >= self.policy.rejections

    @property
    def decided(self) -> bool:
        return self.approved or self.rejected

    def text(self) -> str:
        """ "1 of 2 approvals: alice; waiting for one more from finance" """
        need, have = self.policy.approvals, len(self.approvals)
        names = ", ".join(a.user.get_username() for a in self.approvals)
        words = f"{have} of {need} approval{'s' if need != 1 else ''}"
        words += f": {names}" if names else ""
        if self.rejections:
            words += (f"; {len(self.rejections)} of {self.policy.rejections} rejections: "
                      + ", ".join(r.user.get_username() for r in self.rejections))
        if not self.decided:
            more = need - have
            count = NUMBERS[more] if more < len(NUMBERS) else str(more)
            words += f"; waiting for {count}{' more' if have else ''}"
            words += f" from {self.who}" if self.who else ""
        return words

    def meta(self) -> dict[str, Any]:
        """What the run reads beside the answer (``ctx.answer_metadata()``)."""
        return {"policy": self.policy.name, "decided_by": "people",
                "decision": "approved" if self.approved else "rejected",
                "approvals": [_entry(a) for a in self.approvals],
                "rejections": [_entry(r) for r in self.rejections]}


def single_vote(policy: Policy, user: Any, vote: Vote) -> dict[str, Any]:
    """The metadata of a decision one vote makes (a policy of one approval and one
    rejection): nothing to count, so no ``Approval`` row; the answer records who."""
    entry = {"user": user.get_username(), "at": timezone.now().isoformat()}
    approved = vote == Vote.APPROVE
    return {"policy": policy.name, "decided_by": "people",
            "decision": "approved" if approved else "rejected",
            "approvals": [entry] if approved else [], "rejections": [] if approved else [entry]}


def single_vote_text(policy: Policy, user: Any, vote: Vote) -> str:
    if vote == Vote.APPROVE:
        return f"1 of 1 approval: {user.get_username()}"
    return f"0 of 1 approval; 1 of 1 rejections: {user.get_username()}"


def _entry(approval: Approval) -> dict[str, Any]:
    return {"user": approval.user.get_username(), "at": approval.created_at.isoformat(),
            "note": approval.steering}


def tally(policy: Policy, interrupt: Interrupt) -> Tally:
    return _tally(policy, interrupt,
                  list(Approval.objects.of(interrupt.pk).filter(policy=policy.name)))


def _tally(policy: Policy, interrupt: Interrupt, rows: list[Approval]) -> Tally:
    voted = frozenset(a.user.get_username() for a in rows)
    if any(part.users for part in policy.parts):  # a named starter (or forker) never counts
        roots = Run.objects.filter(thread_id=interrupt.root_thread_id, parent_run_id=None)
        voted |= frozenset(name for pair in roots.values_list(
            "started_by__username", "forked_by__username") for name in pair if name)
    return Tally(policy, [a for a in rows if a.vote == Vote.APPROVE],
                 [a for a in rows if a.vote == Vote.REJECT], eligible(policy, interrupt, voted))


def tallies(interrupts: list[Interrupt]) -> dict[str, Tally]:
    """The tally of each interrupt under a policy, for a page of rows (two queries)."""
    covered = {i.pk: p for i in interrupts if (p := policy_for(i)) is not None}
    if not covered:
        return {}
    rows: dict[str, list[Approval]] = {pk: [] for pk in covered}
    for approval in Approval.objects.filter(interrupt_id__in=list(covered)).select_related(
            "user").order_by("id"):
        if approval.policy == covered[approval.interrupt_id].name:
            rows[approval.interrupt_id].append(approval)
    by_id = {i.pk: i for i in interrupts}
    return {pk: _tally(p, by_id[pk], rows[pk]) for pk, p in covered.items()}


def record(user: Any, interrupt: Interrupt, policy: Policy, vote: Vote, value: Any,
           steering: str) -> tuple[Approval | None, Tally]:
    """Count ``user``'s vote once: the new row and the tally with it, or None and the
    tally as it was when they had already voted. The caller holds the interrupt's row
    lock, so the tally read here cannot change before the row is added (the unique
    constraint stays the last word)."""
    rows = list(Approval.objects.of(interrupt.pk).filter(policy=policy.name))
    if any(row.user_id == user.pk for row in rows):
        return None, _tally(policy, interrupt, rows)
    made = Approval.objects.create(interrupt=interrupt, user=user, policy=policy.name,
                                   vote=vote, value=value, steering=steering)
    return made, _tally(policy, interrupt, [*rows, made])
