"""What a press or a form in Slack decides, through the inbox's own gate.

Every answer goes through ``forgeui.runs.services`` (or the requests' ``decide``, which
does), as the linked forge user marked as signed in via Slack: role, team, assignment,
claim, policy and no self-approval apply as on the page, and the gate's compare-and-set
makes a press sent twice, or two people pressing at once, decide once. The presser is
told the outcome in an ephemeral message; the message itself changes when the events of
the decision reach ``delivery``.

A form opens before any answer is made, so who may not answer in the interrupt's team is
turned away here first (one who may not even read it hears it does not exist).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from django.db import transaction

from forgeui.models import Interrupt
from forgeui.permissions.roles import Action, allowed
from forgeui.requests import present, service
from forgeui.requests.shapes import DecisionsRefused, check_decisions
from forgeui.runs import foreign, services
from forgeui.runs.exceptions import ForgeUIError, StaleAnswer
from forgeui.slack import config, linking, modals
from forgeui.slack.models import SlackMessage

logger = logging.getLogger(__name__)

FORMS = ("reject", "cancel", "respond", "edit")
GONE = "This interrupt no longer exists in forge."
VERBS = ("approve", "continue", *FORMS)


def pressed(payload: dict[str, Any]) -> str:
    """A ``block_actions`` payload: a decision, a form opened, or a reason why not."""
    slack_user, team, channel = who_where(payload)
    user = linking.acting_user(slack_user, team)
    if user is None:
        tell(channel, slack_user, linking.how_to_link(slack_user, team))
        return "unlinked"
    outcomes = [press(payload, action, user) for action in payload.get("actions") or []]
    return ",".join(outcomes) or "nothing"


def press(payload: dict[str, Any], action: dict[str, Any], user: Any) -> str:
    """One button of a ``block_actions`` payload, pressed by the linked ``user``."""
    slack_user, _, channel = who_where(payload)
    verb, interrupt, index = read_action(action)
    if interrupt is None:
        tell(channel, slack_user, GONE)
        return "unknown"
    if (why := refusal(user, interrupt)) is not None:
        tell(channel, slack_user, why)
        return "refused"
    if verb in FORMS:
        return open_form(payload, verb, interrupt, index, channel)
    return decide(user, slack_user, channel, interrupt, index, {"type": "approve"})


def refusal(user: Any, interrupt: Interrupt) -> str | None:
    """Why ``user`` may not answer ``interrupt`` in its team; None when they may."""
    if not allowed(user, Action.READ, interrupt.team):
        return GONE
    if not allowed(user, Action.ANSWER, interrupt.team):
        return "Not decided: your roles do not let you answer this team's interrupts."
    return None


def submitted(payload: dict[str, Any]) -> str:
    """A ``view_submission`` of one of ``modals``' forms (checked already)."""
    meta = modals.metadata(payload)
    interrupt = Interrupt.objects.select_related("run").filter(pk=str(meta.get("i"))).first()
    slack_user, team, _ = who_where(payload)
    channel = str(meta.get("ch", ""))
    user = linking.acting_user(slack_user, team)
    if user is None or interrupt is None:
        tell(channel, slack_user, linking.how_to_link(slack_user, team) if user is None
             else GONE)
        return "unlinked" if user is None else "unknown"
    if (why := refusal(user, interrupt)) is not None:
        tell(channel, slack_user, why)
        return "refused"
    _, decision, _errors = modals.read(payload, call_action(interrupt, meta.get("c")))
    if decision is None:
        return "invalid"
    return decide(user, slack_user, channel, interrupt, meta.get("c"), decision)


def form_errors(payload: dict[str, Any]) -> dict[str, str]:
    """A submitted form's field errors (sent back to Slack at once), {} when it fits."""
    meta = modals.metadata(payload)
    interrupt = Interrupt.objects.select_related("run").filter(pk=str(meta.get("i"))).first()
    if interrupt is None:
        return {}
    return modals.read(payload, call_action(interrupt, meta.get("c")))[2]


def decide(user: Any, slack_user: str, channel: str, interrupt: Interrupt, index: Any,
           decision: dict[str, Any]) -> str:
    """Answer the interrupt (or choose for one of its calls) and tell the presser."""
    if isinstance(index, int) and present.is_request(interrupt):
        return choose(user, slack_user, channel, interrupt, index, decision)
    kind, reason = decision["type"], decision.get("message") or None
    if interrupt.is_breakpoint and kind == "cancel":
        return attempt(slack_user, channel, lambda: services.cancel_at_breakpoint(
            user, interrupt.pk, reason or ""))
    if kind not in ("approve", "reject"):
        tell(channel, slack_user, "Answer this interrupt on its page in forge.")
        return "refused"
    return attempt(slack_user, channel, lambda: services.answer_interrupt(
        user, interrupt.pk, kind == "approve", steering=reason))


def choose(user: Any, slack_user: str, channel: str, interrupt: Interrupt, index: int,
           decision: dict[str, Any]) -> str:
    """Keep one call's decision; once every call has one, submit them together."""
    calls = present.actions_of(interrupt)
    if not 0 <= index < len(calls):
        return "unknown"
    with transaction.atomic():
        # Drafts are kept on the interrupt's first message, wherever the press came from.
        message = (SlackMessage.objects.select_for_update().filter(interrupt=interrupt)
                   .order_by("pk").first())
        mine = dict((message.drafts if message else {}).get(slack_user) or {})
        mine[str(index)] = decision
        done = len(mine) >= len(calls)
        if message is not None:
            message.drafts = {**message.drafts, slack_user: None if done else mine}
            message.drafts = {k: v for k, v in message.drafts.items() if v}
            message.save(update_fields=["drafts"])
    if not done:
        left = ", ".join(str(i + 1) for i in range(len(calls)) if str(i) not in mine)
        tell(channel, slack_user, f"Call {index + 1}: {decision['type']} noted. "
                                  f"Still to decide: call {left}.")
        return "noted"
    decisions = [mine[str(i)] for i in range(len(calls))]
    if present.is_agent_request(interrupt):
        return attempt(slack_user, channel, lambda: service.decide(
            user, interrupt.root_thread_id, decisions))
    return attempt(slack_user, channel, lambda: answer_foreign(user, interrupt, decisions))


def answer_foreign(user: Any, interrupt: Interrupt, decisions: list[dict[str, Any]]) -> Any:
    """A graph's own request shape: checked as a request's decisions are, then answered
    in the shape the graph reads."""
    check_decisions(present.actions_of(interrupt), decisions)
    return services.answer_interrupt(user, interrupt.pk,
                                     foreign.answer(interrupt.payload, decisions))


def attempt(slack_user: str, channel: str, answer: Callable[[], Any]) -> str:
    """Run one answer through the gate; the presser hears how it went."""
    try:
        made = answer()
    except StaleAnswer as stale:
        tell(channel, slack_user, f"Not counted: {stale.reason}")
        return "stale"
    except (ForgeUIError, DecisionsRefused) as refused:
        tell(channel, slack_user, f"Not decided: {refused}")
        return "refused"
    if isinstance(made, services.Decided) and made.approval is not None:
        tell(channel, slack_user, f"Your {made.approval.vote} was counted: {made.progress}")
        return "counted"
    return "decided"


def open_form(payload: dict[str, Any], verb: str, interrupt: Interrupt, index: int | None,
              channel: str) -> str:
    meta = {"i": interrupt.pk, "c": index, "v": verb, "ch": channel}
    try:
        config.client().views_open(trigger_id=payload.get("trigger_id", ""),
                                   view=modals.view(verb, meta, call_action(interrupt, index)))
    except Exception:
        logger.exception("could not open the %s form of %s", verb, interrupt.pk)
        return "form-failed"
    return "form"


def read_action(action: dict[str, Any]) -> tuple[str, Interrupt | None, int | None]:
    """(verb, interrupt, call index) a button stands for; its value is forge's own."""
    verb = str(action.get("action_id", "")).split(":", 1)[0]
    try:
        value = json.loads(action.get("value") or "{}")
    except ValueError:
        value = {}
    if verb not in VERBS or not isinstance(value, dict):
        return verb, None, None
    index = value.get("c") if isinstance(value.get("c"), int) else None
    interrupt = Interrupt.objects.select_related("run").filter(pk=str(value.get("i"))).first()
    return verb, interrupt, index


def call_action(interrupt: Interrupt, index: Any) -> dict[str, Any] | None:
    calls = present.actions_of(interrupt) if present.is_request(interrupt) else []
    return calls[index] if isinstance(index, int) and 0 <= index < len(calls) else None


def who_where(payload: dict[str, Any]) -> tuple[str, str, str]:
    """(Slack user id, team id, channel id) of a payload."""
    user = payload.get("user") or {}
    team = str(user.get("team_id") or (payload.get("team") or {}).get("id") or "")
    channel = ((payload.get("container") or {}).get("channel_id")
               or (payload.get("channel") or {}).get("id") or "")
    return str(user.get("id", "")), team, str(channel)


def tell(channel: str, slack_user: str, text: str) -> None:
    """An ephemeral message only the presser sees; a failure is logged, not raised."""
    if not channel or not slack_user:
        return
    try:
        config.client().chat_postEphemeral(channel=channel, user=slack_user, text=text)
    except Exception:
        logger.exception("could not tell Slack user %s", slack_user)
