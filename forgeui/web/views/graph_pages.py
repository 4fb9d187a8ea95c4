"""A registered graph before any run: its drawing, and the form that starts one."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from forgeui.permissions.roles import Action, allowed
from forgeui.permissions.teams import team_of_graph
from forgeui.runs import registry
from forgeui.runs.exceptions import ForgeUIError
from forgeui.web import graphsvg
from forgeui.web.views.common import page, requires
from forgeui.web.views.run_pages import start_context
from forgeui.web.visibility import graphs_for


@require_GET
@requires(Action.READ)
def graph(request: HttpRequest, name: str) -> HttpResponse:
    """The drawing of graph ``name``; 404 naming the graphs the user may read when it is
    not one of them (another team's graph is as unknown as one never registered)."""
    readable = graphs_for(request.user)
    if name not in readable:
        context = {"name": name, "missing": True, "graphs": readable}
        return page(request, "forgeui/graph.html", "drawing", context, status=404)
    team = team_of_graph(name)
    context = {"name": name, "others": [g for g in readable if g != name]}
    try:
        context["svg"] = graphsvg.draw(registry.get_executor(name), graphsvg.Marks())
    except ForgeUIError as exc:  # a broken registration: said on the page, not a 500
        context["problem"] = str(exc)
    if allowed(request.user, Action.START_RUN, team):
        context["start"] = start_context(name, fixed=True, user=request.user)
    return page(request, "forgeui/graph.html", "drawing", context, team=team)
