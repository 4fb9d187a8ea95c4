"""What one person may see on the dashboard when teams share it.

An object outside the teams in which they may read is not found (404, never 403), so its
id gives nothing away. A payload's sensitive keys, and the same keys wherever a run's
input, state or answers hold them, are shown whole only to those who may answer in the
object's team (``forgeui.team.sensitive``); exports mask them for everyone.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from django.http import Http404

from forgeui.models import Interrupt, Run
from forgeui.permissions.roles import Action, allowed, teams_where
from forgeui.permissions.teams import enabled, team_of_graph
from forgeui.runs import registry, services
from forgeui.runs.decision_context import Decision, StateEntry
from forgeui.runs.exceptions import NotFound
from forgeui.team.sensitive import mask

RELATED = ("run", "claimed_by")


def filtered(user: Any) -> bool:
    """Does ``user`` see only some teams' objects (so lists leave others out)?"""
    return enabled() and teams_where(user, Action.READ) is not None


def interrupt_or_404(user: Any, interrupt_id: str, *related: str) -> Interrupt:
    """The interrupt, if ``user`` may read it in its team; else 404 as if it did not exist."""
    found = (Interrupt.objects.visible_to(user).select_related(*(related or RELATED))
             .filter(pk=interrupt_id).first())
    if found is None:
        raise Http404(f"no interrupt {interrupt_id!r}")
    return found


def run_or_404(user: Any, run_id: str) -> Run:
    try:
        return services.get_run(user, run_id)
    except NotFound as exc:
        raise Http404(str(exc)) from None


def run_seen_or_404(user: Any, run_id: str) -> None:
    """404 unless ``user`` may read the run; nothing to check for who sees every team (a
    missing run is then the service's to name)."""
    if filtered(user):
        run_or_404(user, run_id)


def thread_or_404(user: Any, thread_id: str, missing: str = "") -> None:
    """404 (saying ``missing``) unless ``user`` may read the thread's run, or sees every
    team."""
    if not filtered(user):
        return
    if not Run.objects.visible_to(user).filter(thread_id=thread_id).exists():
        raise Http404(missing or f"no thread {thread_id!r}")


def graphs_for(user: Any, action: Action = Action.READ) -> list[str]:
    """The registered graphs in whose team ``user`` may do ``action`` (a short list of
    names, not rows)."""
    return [name for name in registry.graph_names()
            if allowed(user, action, team_of_graph(name))]


def may_answer_in(user: Any, team: str) -> bool:
    return allowed(user, Action.ANSWER, team)


# Whether a reader sees a team's sensitive keys whole; exports and mail use ``nobody``.
Whole = Callable[[str], bool]


def nobody(team: str) -> bool:
    return False


def sensitive_keys(interrupts: Any) -> frozenset[str]:
    """Every key the given interrupts (a queryset) mark sensitive."""
    keys: set[str] = set()
    for marked in interrupts.exclude(sensitive=[]).values_list("sensitive", flat=True):
        keys.update(marked or ())
    return frozenset(keys)


def tree_keys(root_thread_id: str) -> frozenset[str]:
    """The sensitive keys of every interrupt of a run tree."""
    return sensitive_keys(Interrupt.objects.filter(root_thread_id=root_thread_id))


def shown(user: Any, interrupt: Interrupt) -> Interrupt:
    """``interrupt`` as ``user`` may see it: a copy with its sensitive keys masked for
    who may not answer it (the row itself is untouched)."""
    if not interrupt.sensitive or may_answer_in(user, interrupt.team):
        return interrupt
    return masked_copy(interrupt)


def masked_copy(interrupt: Interrupt) -> Interrupt:
    """A copy to show, its payload and its run's input masked (summaries read both)."""
    if not interrupt.sensitive:
        return interrupt
    seen = copy.copy(interrupt)  # a model's copy has its own cache of related rows
    seen.payload = mask(interrupt.payload, interrupt.sensitive)
    if Interrupt.run.is_cached(interrupt):
        seen.run = copy.copy(interrupt.run)
        seen.run.input = mask(interrupt.run.input, interrupt.sensitive)
    return seen


def masked_runs(user: Any, root: Run, runs: Iterable[Any]) -> None:
    """Give each node of ``root``'s tree (``node.run``) a copy of its run with input and
    output masked, unless ``user`` may answer in the tree's team."""
    if may_answer_in(user, root.team):
        return
    keys = tree_keys(root.root_thread_id)
    for node in runs if keys else ():
        node.run = copy.copy(node.run)
        node.run.input = mask(node.run.input, keys)
        node.run.output = mask(node.run.output, keys)


def masked_decision(decision: Decision, keys: Iterable[str]) -> Decision:
    """The context panel with the run's input, the node's input and state masked."""
    names = frozenset(keys)
    if not names:
        return decision
    state = [StateEntry(e.key, mask({e.key: e.value}, names)[e.key], e.named)
             for e in decision.state]
    return dataclasses.replace(decision, run_input=mask(decision.run_input, names),
                               node_input=mask(decision.node_input, names), state=state)


def decision_for(user: Any, interrupt: Interrupt, decision: Decision) -> Decision:
    if may_answer_in(user, interrupt.team):
        return decision
    return masked_decision(decision, tree_keys(interrupt.root_thread_id))


def masked_fork(link: Any, keys: frozenset[str]) -> Any:
    """A fork link whose edited values hide ``keys`` (None stays None)."""
    if link is None or not keys or not link.edits:
        return link
    edits = [{**edit, "value": mask(edit.get("value"), keys)} for edit in link.edits]
    return dataclasses.replace(link, edits=edits)
