from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, include, path

from forgeui.api.routes import api
from forgeui.team import accounts
from forgeui.web import health, views

# The dashboard's pages (their paths are public), reversed as "forgeui:<name>".
pages: list[URLPattern | URLResolver] = [
    path("", views.inbox, name="inbox"),
    path("interrupts/bulk/", views.bulk, name="bulk"),
    path("interrupts/<str:interrupt_id>/", views.interrupt_detail, name="interrupt"),
    path("interrupts/<str:interrupt_id>/answer/", views.answer, name="answer"),
    path("interrupts/<str:interrupt_id>/note/", views.keep_note, name="keep-note"),
    path("interrupts/<str:interrupt_id>/claim/", views.claim, name="claim"),
    path("interrupts/<str:interrupt_id>/assign/", views.assign, name="assign"),
    path("runs/", views.runs, name="runs"),
    path("runs/start/", views.start, name="start-run"),
    path("runs/start/form/", views.start_form, name="start-form"),
    path("runs/<str:run_id>/", views.run_detail, name="run"),
    path("runs/<str:run_id>/steer/", views.steer, name="steer"),
    path("runs/<str:run_id>/cancel/", views.cancel, name="cancel"),
    path("runs/<str:run_id>/recover/", views.recover, name="recover"),
    path("runs/<str:run_id>/fork/", views.fork_with_changes, name="fork-edit"),
    # A sub-agent's thread id holds slashes ("<root>/<agent>:<id>"); the suffixed routes
    # come first so the greedy <path:> of the timeline cannot swallow them.
    path("threads/<path:thread_id>/export.json", views.thread_export, name="timeline-export"),
    path("threads/<path:thread_id>/fork/", views.fork, name="fork"),
    path("threads/<path:thread_id>/tree/", views.tree_history, name="tree-history"),
    path("threads/<path:thread_id>/", views.thread_timeline, name="timeline"),
    path("audit/", views.audit, name="audit"),
    path("audit/export.json", views.audit_export, name="audit-export"),
    path("audit/export.csv", views.audit_export, {"fmt": "csv"}, name="audit-export-csv"),
    path("audit/decisions/", views.decisions, name="decisions"),
    path("audit/decisions/export.json", views.decisions_export, name="decisions-export"),
    path("audit/decisions/export.csv", views.decisions_export, {"fmt": "csv"},
         name="decisions-export-csv"),
    path("checkpoints/<str:checkpoint_id>/", views.checkpoint, name="checkpoint"),
]

urlpatterns: list[URLPattern | URLResolver] = [
    # Anonymous probes (forgeui.web.health), exempt from the SSL redirect (settings).
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    # Logging out is a POST that lands on the login page (not the admin's logged-out page).
    path("accounts/logout/", auth_views.LogoutView.as_view(next_page="login"), name="logout"),
    path("accounts/", include(accounts.urlpatterns())),
    path("", include((pages, "forgeui"))),
]
