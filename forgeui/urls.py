from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, include, path
from django.views.generic import RedirectView

from forgeui import admin as forge_admin
from forgeui.api.routes import api
from forgeui.slack import urls as slack_urls
from forgeui.team import accounts, sso
from forgeui.web import health
from forgeui.web.views import (
    audit_pages,
    graph_pages,
    inbox_pages,
    link_pages,
    request_pages,
    run_pages,
)

# The dashboard's pages (their paths are public), reversed as "forgeui:<name>".
pages: list[URLPattern | URLResolver] = [
    path("", inbox_pages.inbox, name="inbox"),
    path("interrupts/bulk/", inbox_pages.bulk, name="bulk"),
    path("interrupts/<str:interrupt_id>/", inbox_pages.interrupt_detail, name="interrupt"),
    path("interrupts/<str:interrupt_id>/answer/", inbox_pages.answer, name="answer"),
    path("interrupts/<str:interrupt_id>/cancel/", inbox_pages.cancel_at_breakpoint,
         name="cancel-at-breakpoint"),
    path("interrupts/<str:interrupt_id>/decide/", request_pages.decide, name="decide"),
    path("interrupts/<str:interrupt_id>/note/", inbox_pages.keep_note, name="keep-note"),
    path("interrupts/<str:interrupt_id>/claim/", inbox_pages.claim, name="claim"),
    path("interrupts/<str:interrupt_id>/assign/", inbox_pages.assign, name="assign"),
    path("links/<str:token>/", link_pages.follow, name="decision-link"),
    path("graphs/<str:name>/", graph_pages.graph, name="graph"),
    path("runs/", run_pages.runs, name="runs"),
    path("runs/start/", run_pages.start, name="start-run"),
    path("runs/start/form/", run_pages.start_form, name="start-form"),
    path("runs/<str:run_id>/", run_pages.run_detail, name="run"),
    path("runs/<str:run_id>/steer/", run_pages.steer, name="steer"),
    path("runs/<str:run_id>/cancel/", run_pages.cancel, name="cancel"),
    path("runs/<str:run_id>/recover/", run_pages.recover, name="recover"),
    path("runs/<str:run_id>/fork/", run_pages.fork_with_changes, name="fork-edit"),
    # A sub-agent's thread id holds slashes ("<root>/<agent>:<id>"); the suffixed routes
    # come first so the greedy <path:> of the timeline cannot swallow them.
    path("threads/<path:thread_id>/export.json", audit_pages.thread_export, name="timeline-export"),
    path("threads/<path:thread_id>/fork/", run_pages.fork, name="fork"),
    path("threads/<path:thread_id>/tree/", audit_pages.tree_history, name="tree-history"),
    path("threads/<path:thread_id>/", audit_pages.thread_timeline, name="timeline"),
    path("audit/", audit_pages.audit, name="audit"),
    path("audit/export.json", audit_pages.audit_export, name="audit-export"),
    path("audit/export.csv", audit_pages.audit_export, {"fmt": "csv"}, name="audit-export-csv"),
    path("audit/decisions/", audit_pages.decisions, name="decisions"),
    path("audit/decisions/export.json", audit_pages.decisions_export, name="decisions-export"),
    path("audit/decisions/export.csv", audit_pages.decisions_export, {"fmt": "csv"},
         name="decisions-export-csv"),
    path("checkpoints/<str:checkpoint_id>/", audit_pages.checkpoint, name="checkpoint"),
]

urlpatterns: list[URLPattern | URLResolver] = [
    # Anonymous probes (forgeui.web.health), exempt from the SSL redirect (settings).
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", health.metrics, name="metrics"),  # bearer FORGE_METRICS_TOKEN
    # One password change form for everyone, the one whose wrong old passwords are throttled.
    path("admin/password_change/", RedirectView.as_view(pattern_name="password_change"),
         name="admin-password-change"),
    path("admin/policies/", admin.site.admin_view(forge_admin.policies_page),
         name="admin-policies"),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    # Logging out is a POST that lands on the login page (not the admin's logged-out page).
    path("accounts/logout/", auth_views.LogoutView.as_view(next_page="login"), name="logout"),
    path("accounts/", include(accounts.urlpatterns())),
    path("oidc/", include(sso.urlpatterns())),  # 404 unless single sign-on is configured
    path("slack/", include(slack_urls)),  # /slack/events answers 404 until Slack is set up
    path("", include((pages, "forgeui"))),
]
