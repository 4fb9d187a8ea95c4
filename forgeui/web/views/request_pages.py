"""An agent's approval request on the interrupt page: one decision per proposed call."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from forgeui.models import Interrupt
from forgeui.permissions.roles import Action
from forgeui.requests import present, service
from forgeui.runs import foreign, services
from forgeui.runs.exceptions import ForgeUIError, StaleAnswer
from forgeui.runs.wording import interrupt_summary
from forgeui.team import assignment
from forgeui.web.answer_panel import panel_context
from forgeui.web.forms import read_request
from forgeui.web.views.common import page, refusal, requires
from forgeui.web.views.inbox_pages import context_for, next_item
from forgeui.web.visibility import interrupt_or_404


@require_POST
@requires(Action.ANSWER)
def decide(request: HttpRequest, interrupt_id: str) -> HttpResponse:
    """All of a request's decisions in one submission; a refusal keeps what was typed."""
    interrupt = interrupt_or_404(request.user, interrupt_id)
    if not present.is_request(interrupt):
        return refusal(request, ForgeUIError("this interrupt is not an approval request"))
    form, decisions = read_request(interrupt, request.POST)
    if not decisions:
        return shown(request, interrupt, form, 422)
    try:
        if present.is_foreign(interrupt):  # a graph's own shape; the message steers
            answered = services.answer_interrupt(request.user, interrupt.pk,
                                                 foreign.answer(interrupt.payload, decisions),
                                                 steering=form.message.strip() or None)
            counted = answered.progress if answered.approval is not None else None
        else:
            outcome = service.decide(request.user, interrupt.root_thread_id, decisions,
                                     form.message.strip() or None)
            counted = outcome.get("approvals") if outcome["status"] == "pending" else None
    except StaleAnswer as stale:
        return shown(request, interrupt, form, 409, stale=stale)
    except ForgeUIError as exc:
        return refusal(request, exc)
    return next_item(request, interrupt, counted and (
        f"Your decision on “{interrupt_summary(interrupt)}” was counted: {counted}."))


def shown(request: HttpRequest, interrupt: Interrupt, form: present.RequestForm,
          status: int, **extra: object) -> HttpResponse:
    panel = panel_context(interrupt, assignment.Viewer.of(request.user), user=request.user,
                          where="page", request=form, **extra)
    return page(request, "forgeui/interrupt.html", "panel",
                {"p": panel, "decision": context_for(request, interrupt)}, status,
                team=interrupt.team)
