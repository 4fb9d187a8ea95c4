"""The auditor's list of decisions: every accepted answer (or cancel at a breakpoint),
who gave it, how they had signed in (password, sso, token), when, to what; under an
approval policy, every vote counted toward it, each with its person and note.

Filters and a text search stand in for ids an auditor does not know; the same rows go
out as CSV or JSON (``forgeui.web.exports``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q, TextField
from django.db.models.functions import Cast
from django.http import QueryDict

from forgeui.models import Answer, Approval
from forgeui.permissions.roles import team_q
from forgeui.runs.services.forking import links as forks
from forgeui.runs.services.forking.links import ForkLink
from forgeui.runs.wording import decision_line, decision_words, interrupt_summary
from forgeui.team.sensitive import mask
from forgeui.web.visibility import Whole, masked_copy, nobody

# "decision" is the line an auditor reads; "answer" keeps the exact value, as JSON.
COLUMNS = ["answered_at", "answered_by", "signed_in_with", "graph", "path", "node", "summary",
           "answer_text", "decision", "answer", "steering", "approvals", "interrupt_id",
           "run_id", "thread_id", "checkpoint_id", "outcome", "reason", "forked_from",
           "forked_by"]
CHUNK = 500


@dataclass(frozen=True, slots=True)
class DecisionFilters:
    """What the auditor asked for: who, which graph and node, when, and any words."""

    who: str = ""
    graph: str = ""
    node: str = ""
    q: str = ""
    since: datetime | None = None
    until: datetime | None = None

    @classmethod
    def from_query(cls, query: QueryDict, since: datetime | None,
                   until: datetime | None) -> DecisionFilters:
        return cls(who=query.get("who", "").strip(), graph=query.get("graph", "").strip(),
                   node=query.get("node", "").strip(), q=query.get("q", "").strip(),
                   since=since, until=until)

    def apply(self, answers: Any) -> Any:
        found = answers
        if self.who == "system":
            found = found.filter(user__isnull=True)
        elif self.who:  # who answered, or whose approval (or rejection) counted toward it
            voted = Approval.objects.filter(user__username=self.who).values("interrupt_id")
            found = found.filter(Q(user__username=self.who) | Q(interrupt_id__in=voted))
        if self.graph:
            found = found.filter(interrupt__run__graph=self.graph)
        if self.node:
            found = found.filter(Q(interrupt__node__icontains=self.node)
                                 | Q(interrupt__sub_agent_id__icontains=self.node))
        if self.since:
            found = found.filter(created_at__gte=self.since)
        if self.until:
            found = found.filter(created_at__lt=self.until)
        return self._search(found) if self.q else found

    def _search(self, found: Any) -> Any:
        """Words in the question (payload), the answer or the steering note."""
        found = found.annotate(payload_text=Cast("interrupt__payload", TextField()),
                               value_text=Cast("value", TextField()))
        for word in self.q.split()[:8]:
            found = found.filter(Q(payload_text__icontains=word) | Q(value_text__icontains=word)
                                 | Q(steering__icontains=word) | Q(reason__icontains=word))
        return found


def decisions(user: Any) -> Any:
    """Every accepted answer ``user`` may read (by its interrupt's team), newest first,
    with what the rows show."""
    return (Answer.objects.filter(team_q(user, field="interrupt__team"))
            .select_related("user", "interrupt", "interrupt__run")
            .order_by("-created_at", "-id"))


def row(answer: Answer, fork: ForkLink | None = None,
        counted: list[Approval] | None = None, whole: bool = False) -> dict[str, Any]:
    """One decision as exported (and as the page reads it); ``fork``: the fork link of
    the run tree it was made in, when that tree is a fork; ``counted``: the votes a policy
    counted toward it. ``steering`` is the answerer's own note. Unless ``whole``, the keys
    the interrupt marks sensitive are masked, in the question and in the answer."""
    keys = () if whole else answer.interrupt.sensitive or ()
    if keys:
        answer = copy.copy(answer)
        answer.value = mask(answer.value, keys)
        answer.interrupt = masked_copy(answer.interrupt)
    interrupt = answer.interrupt
    summary = interrupt_summary(interrupt)
    words = decision_words(answer)
    return {
        "answered_at": answer.created_at.isoformat(),
        "answered_by": answer.user.get_username() if answer.user else "system",
        "signed_in_with": answer.sign_in,
        "graph": interrupt.run.graph, "path": "/".join(interrupt.namespace),
        "node": interrupt.node, "summary": summary, "answer_text": words,
        "decision": decision_line(summary, words), "answer": answer.value,
        "reason": answer.reason, "steering": answer.steering,
        "approvals": [vote.entry() for vote in counted or []],
        "interrupt_id": interrupt.pk, "run_id": interrupt.run_id,
        "thread_id": interrupt.root_thread_id, "checkpoint_id": interrupt.checkpoint_id,
        "outcome": answer.outcome,
        "forked_from": fork.source if fork else None,
        "forked_by": fork.by if fork else None,
    }


def page_rows(answers: Iterable[Answer], whole: Whole = nobody) -> list[dict[str, Any]]:
    """``row`` of each answer, with the fork links of their trees read at once;
    ``whole(team)``: are that team's sensitive keys shown to this reader?"""
    found = list(answers)
    links = forks.origins(a.interrupt.root_thread_id for a in found)
    counted = Approval.objects.counted_for(found)
    return [row(a, links.get(a.interrupt.root_thread_id), counted.get(a.interrupt_id),
                whole(a.interrupt.team))
            for a in found]


def rows(answers: Any) -> Iterator[dict[str, Any]]:
    """Every decision of ``answers``, read in chunks (for the exports)."""
    chunk: list[Answer] = []
    for answer in answers.iterator(chunk_size=CHUNK):
        chunk.append(answer)
        if len(chunk) == CHUNK:
            yield from page_rows(chunk)
            chunk = []
    yield from page_rows(chunk)
