"""A decision link from a notification e-mail: sign in, then the interrupt's page.

Following a link only ever redirects: deciding stays the interrupt page's POST. A link
expired or not made here says so; one e-mailed to someone else is 403 for whoever is
signed in, and the refusal is audited.
"""

from __future__ import annotations

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from forgeui.models import AuditEntry, Interrupt
from forgeui.team import decision_links
from forgeui.team.sign_in import method_of


@require_GET
def follow(request: HttpRequest, token: str) -> HttpResponse:
    try:
        link = decision_links.read(token)
    except decision_links.LinkExpired:
        return refused(request, "This link has expired",
                       "Decision links last a few days. The decision, if it is still "
                       "open, is waiting in the inbox.", status=410)
    except decision_links.LinkInvalid:
        return refused(request, "This link is not valid",
                       "It may have been cut short when it was copied. Open the inbox "
                       "instead.", status=404)
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    if request.user.pk != link.user_id:
        AuditEntry.objects.create(actor=request.user, sign_in=method_of(request.user),
                                  action="decision_link.refused", object_type="interrupt",
                                  object_id=link.interrupt_id,
                                  team=team_of(link.interrupt_id),
                                  detail={"sent_to": link.user_id})
        return refused(request, "This link was sent to someone else",
                       "A decision link opens only for the person it was e-mailed to. "
                       "Log out and sign in as them, or open the inbox.", status=403)
    return redirect(reverse("forgeui:interrupt", args=[link.interrupt_id]))


def team_of(interrupt_id: str) -> str:
    """The team of the interrupt a link names, for the audit row ("" once it is gone)."""
    found = Interrupt.objects.filter(pk=interrupt_id).values_list("team", flat=True).first()
    return found or ""


def refused(request: HttpRequest, title: str, why: str, status: int) -> HttpResponse:
    return render(request, "forgeui/decision_link.html", {"title": title, "why": why},
                  status=status)
