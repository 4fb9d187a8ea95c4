"""An interrupt as a Slack message: Block Kit blocks, rendered from the database alone.

Pending: the summary, a few context fields, the choices (per call for tool calls), the
deadline, where a policy stands, and a link to the interrupt page. Ended: who decided
what, when and where, and no buttons. A channel has many readers: payload keys marked
sensitive are masked in every message. Every button names its interrupt (and call) in
its ``value``; ``acting`` reads them back.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.urls import reverse

from forgeui.inbox.rows import asks_yes_no, masked_answer, masked_copy
from forgeui.models import Answer, Interrupt, InterruptStatus
from forgeui.requests import present
from forgeui.requests.shapes import allowed
from forgeui.runs import wording
from forgeui.runs.policies import approvals
from forgeui.slack import config

LABELS = {"approve": "Approve", "reject": "Reject…", "edit": "Edit…", "respond": "Respond…",
          "continue": "Continue", "cancel": "Cancel run…"}
STYLES = {"approve": "primary", "continue": "primary", "reject": "danger", "cancel": "danger"}
ARGS_CHARS = 600
TEXT_CHARS = 2900  # a section's text holds 3000
MAX_CALLS = 20


def message(interrupt: Interrupt) -> tuple[str, list[dict[str, Any]]]:
    """The notification text and the blocks of ``interrupt``'s message, as it stands."""
    interrupt = masked_copy(interrupt)
    summary = wording.interrupt_summary(interrupt)
    blocks = [section(f"*{mrkdwn(summary)}*"), context_fields(interrupt)]
    if interrupt.status == InterruptStatus.PENDING:
        blocks += pending_blocks(interrupt)
    else:
        blocks.append(section(ended_words(interrupt)))
    blocks.append({"type": "context", "elements": [
        {"type": "mrkdwn", "text": f"<{page_link(interrupt)}|Open in forge>"}]})
    return f"forge: {summary}", blocks


def pending_blocks(interrupt: Interrupt) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if interrupt.deadline_at is not None:
        overdue = " (overdue)" if interrupt.overdue_at is not None else ""
        blocks.append(section(f"*Deadline:* {when(interrupt.deadline_at)}{overdue}"))
    if (policy := approvals.policy_for(interrupt)) is not None:
        blocks.append(section(f"*Policy {policy.name}:* "
                              f"{mrkdwn(approvals.tally(policy, interrupt).text())}"))
    return blocks + choices(interrupt)


def choices(interrupt: Interrupt) -> list[dict[str, Any]]:
    """The buttons: per call for tool calls, else continue/cancel or approve/reject; an
    interrupt asking for anything else is answered on its page."""
    if present.is_request(interrupt):
        calls = present.actions_of(interrupt)
        if len(calls) > MAX_CALLS:  # a message holds at most fifty blocks
            return [section(f"This request proposes {len(calls)} calls: decide them on "
                            f"its page in forge.")]
        return [block for index, action in enumerate(calls)
                for block in call_blocks(interrupt, index, action)]
    if interrupt.is_breakpoint:
        return [actions(interrupt, None, ["continue", "cancel"])]
    if asks_yes_no(interrupt.payload):
        return [actions(interrupt, None, ["approve", "reject"])]
    return [section("This interrupt asks for a specific answer: open it in forge.")]


def call_blocks(interrupt: Interrupt, index: int, action: dict[str, Any]) -> list[dict[str, Any]]:
    args = json.dumps(action.get("args"), ensure_ascii=False, indent=1)
    head = f"*{index + 1}. `{mrkdwn(str(action.get('name', '')))}`*"
    if action.get("description"):
        head += f" {mrkdwn(str(action['description']))}"
    return [section(f"{head}\n```{clip(args, ARGS_CHARS)}```"),
            actions(interrupt, index, allowed(action))]


def actions(interrupt: Interrupt, index: int | None, verbs: list[str]) -> dict[str, Any]:
    value = json.dumps({"i": interrupt.pk, "c": index}, separators=(",", ":"))
    suffix = "" if index is None else f":{index}"
    return {"type": "actions", "block_id": f"forge{suffix}", "elements": [
        {"type": "button", "action_id": f"{verb}{suffix}", "value": value,
         "text": {"type": "plain_text", "text": LABELS[verb]},
         **({"style": STYLES[verb]} if verb in STYLES else {})} for verb in verbs]}


def context_fields(interrupt: Interrupt) -> dict[str, Any]:
    path = "/".join(interrupt.namespace) or interrupt.run.graph
    fields = [f"*Graph* {interrupt.run.graph}", f"*Node* {path}:{interrupt.node}"]
    if interrupt.assignees:
        names = [*interrupt.assigned_users, *interrupt.assigned_groups]
        fields.append(f"*For* {', '.join(names)}")
    if not present.is_request(interrupt):
        about = interrupt.payload
        if interrupt.is_breakpoint and isinstance(about, dict):
            about = about.get("input" if interrupt.kind == "before" else "output")
        fields += wording.scalar_fields(about, limit=4)
    return {"type": "context",
            "elements": [{"type": "mrkdwn", "text": mrkdwn(f)} for f in fields[:10]]}


def ended_words(interrupt: Interrupt) -> str:
    """Who decided what, when, and where it was answered."""
    if interrupt.status == InterruptStatus.CANCELLED:
        return f":no_entry_sign: *Cancelled* (the run moved on) · {when(interrupt.answered_at)}"
    answer = (Answer.objects.filter(interrupt_id=interrupt.pk).select_related("user")
              .order_by("-id").first())
    if answer is None:
        return f":white_check_mark: *Answered* · {when(interrupt.answered_at)}"
    answer.interrupt = interrupt
    decided = mrkdwn(wording.decision_words(masked_answer(answer, interrupt) or answer))
    if answer.user is None:
        who = "by its deadline" if interrupt.deadline_at is not None else "by forge"
    else:
        who = f"by {mrkdwn(answer.user.get_username())}"
        who += f" (in {answer.sign_in})" if answer.sign_in else ""
    return f":white_check_mark: *{decided}* {who} · {when(answer.created_at)}"


def page_link(interrupt: Interrupt) -> str:
    return config.page_url(reverse("forgeui:interrupt", args=[interrupt.pk]))


def when(at: datetime | None) -> str:
    """A time every reader sees in their own time zone (Slack's date formatting)."""
    if at is None:
        return ""
    return f"<!date^{int(at.timestamp())}^{{date_short_pretty}} {{time}}|{at.isoformat()}>"


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": clip(text, TEXT_CHARS)}}


def mrkdwn(text: str) -> str:
    """Text shown as typed: Slack's three control characters escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"
