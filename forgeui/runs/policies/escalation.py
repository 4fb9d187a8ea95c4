"""``escalate_after_s``: an interrupt under a policy left unanswered that long is
reassigned to the policy's ``escalate_to`` group, whose members may then approve it.

The deadline sweep calls ``escalate_due``; each interrupt is escalated once, by one
conditional update, so two sweepers are harmless.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import partial

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q

from forgeui.models import AgentRequest, AuditEntry, EventKind, Interrupt, assignees
from forgeui.models.events import EventDraft, publish_on_commit
from forgeui.notifications.audience import told_of
from forgeui.notifications.mail import send_quietly
from forgeui.runs.policies.approvals import policy_for
from forgeui.runs.policies.config import Policy, policies
from forgeui.runs.registry import REQUEST_GRAPH


def escalate_due(now: datetime) -> list[str]:
    """Escalate every interrupt that waited past its policy's ``escalate_after_s``."""
    done: list[str] = []
    for policy in policies().by_name.values():
        if policy.escalate_after_s is None:
            continue
        since = now - timedelta(seconds=policy.escalate_after_s)
        waiting = (Interrupt.objects.pending().filter(escalated_at=None, created_at__lte=since)
                   .filter(_covered(policy)).select_related("run"))
        for interrupt in waiting[:500]:
            covering = policy_for(interrupt)  # not this one's escalation under a chosen name
            if covering is not None and covering.name == policy.name and \
                    covering.escalate_to and _escalate(interrupt, policy, now):
                done.append(interrupt.pk)
    return done


def _covered(policy: Policy) -> Q:
    found = Q(pk__in=[])
    for node in policy.nodes:
        graph, _, name = node.partition("/")
        found |= Q(run__graph=graph) if name == "*" else Q(run__graph=graph, node=name)
    if policy.agents:
        asked = AgentRequest.objects.filter(Q(agent__in=policy.agents)
                                            | Q(token_agent__in=policy.agents)
                                            | Q(owner__username__in=policy.agents))
        found |= Q(run__graph=REQUEST_GRAPH, root_thread_id__in=asked.values("id"))
    return found


def _escalate(interrupt: Interrupt, policy: Policy, now: datetime) -> bool:
    before = {"users": interrupt.assigned_users, "groups": interrupt.assigned_groups}
    with transaction.atomic():
        moved = Interrupt.objects.pending().filter(pk=interrupt.pk, escalated_at=None).update(
            escalated_at=now, assignees=assignees.encode([], [policy.escalate_to]),
            claimed_by=None, claimed_at=None)
        if not moved:
            return False
        AuditEntry.objects.create(
            action="interrupt.escalated", object_type="interrupt", object_id=interrupt.pk,
            run_id=interrupt.run_id, thread_id=interrupt.root_thread_id,
            before_checkpoint_id=interrupt.checkpoint_id,
            detail={"policy": policy.name, "to_group": policy.escalate_to, "before": before,
                    "reason": f"unanswered for {policy.escalate_after_s:g} s"})
        publish_on_commit([EventDraft(EventKind.INTERRUPT_UPDATED, interrupt.run_id,
                                      interrupt.root_thread_id, interrupt.pk,
                                      {"action": "interrupt.escalated"})])
        transaction.on_commit(partial(_tell_group, interrupt.pk, policy))
    return True


def _tell_group(interrupt_id: str, policy: Policy) -> None:
    """E-mail the group's members who may read the interrupt in its team."""
    team = Interrupt.objects.filter(pk=interrupt_id).values_list("team", flat=True).first()
    members = get_user_model().objects.filter(groups__name=policy.escalate_to, is_active=True)
    readable = get_user_model().objects.filter(told_of(team or ""))
    addresses = list(members.filter(pk__in=readable.values("pk")).exclude(email="")
                     .values_list("email", flat=True).distinct())
    send_quietly(f"[forge] interrupt {interrupt_id} was escalated to you",
                 f"Interrupt {interrupt_id} waited past {policy.escalate_after_s:g} s under "
                 f"policy {policy.name} and is now assigned to {policy.escalate_to}.",
                 addresses, about=f"group {policy.escalate_to} about interrupt {interrupt_id}")
