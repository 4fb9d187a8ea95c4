"""Every decision records who made it and how they had signed in: password, sso, token."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.auth.models import User
from django.test import Client

from forgeui.models import Answer, ApiToken, AuditEntry, Interrupt, SteeringNote
from forgeui.runs import services
from forgeui.team import sign_in

pytestmark = pytest.mark.django_db(transaction=True)


def password_client(name: str) -> Client:
    client = Client()
    response = client.post("/accounts/login/", {"username": name, "password": name})
    assert response.status_code == 302, response.content[:500]
    return client


def paused(users: dict[str, User], graph: str = "transfer") -> Interrupt:
    thread = services.start_run(users["supervisor"], graph, {}).thread_id
    return Interrupt.objects.of_tree(thread).pending().get()


def test_a_password_login_is_recorded_on_the_answer_its_note_and_audit_row(
        users: dict[str, User]) -> None:
    pending = paused(users)
    client = password_client("reviewer")
    assert client.session[sign_in.SESSION_KEY] == "password"
    response = client.post(f"/interrupts/{pending.pk}/answer/",
                           {"action": "approve", "steering": "checked the payee"})
    assert response.status_code in (200, 302), response.content[:500]
    answer = Answer.objects.get(interrupt=pending)
    assert (answer.user.username, answer.sign_in) == ("reviewer", "password")
    assert SteeringNote.objects.get(answer=answer).sign_in == "password"
    assert AuditEntry.objects.get(action="answer").sign_in == "password"


def test_a_bearer_token_is_recorded_as_token(users: dict[str, User]) -> None:
    pending = paused(users)
    _, secret = ApiToken.objects.issue(users["reviewer"])
    response = Client().post(f"/api/interrupts/{pending.pk}/resume",
                             json.dumps({"value": True, "steering": "by script"}),
                             content_type="application/json",
                             HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert response.status_code == 202, response.content
    answer = Answer.objects.get(interrupt=pending)
    assert answer.sign_in == "token"
    assert SteeringNote.objects.get(answer=answer).sign_in == "token"
    assert AuditEntry.objects.get(action="answer").sign_in == "token"


def test_steering_notes_forks_and_cancels_record_the_method(users: dict[str, User]) -> None:
    pending = paused(users, "deploy")
    _, secret = ApiToken.objects.issue(users["supervisor"])
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {secret}", "content_type": "application/json"}
    client = Client()
    assert client.post("/api/steering", json.dumps({"run_id": pending.run_id, "text": "slowly"}),
                       **bearer).status_code in (200, 201, 202)
    assert SteeringNote.objects.get(text="slowly").sign_in == "token"
    supervisor = password_client("supervisor")
    assert supervisor.post(f"/threads/{pending.root_thread_id}/fork/").status_code == 302
    assert supervisor.post(f"/runs/{pending.run_id}/cancel/").status_code == 302
    methods = dict(AuditEntry.objects.filter(action__in=["steering.note", "thread.fork",
                                                         "run.cancel"])
                   .values_list("action", "sign_in"))
    assert methods == {"steering.note": "token", "thread.fork": "password",
                       "run.cancel": "password"}


def test_a_session_from_before_the_key_is_judged_by_its_backend(users: dict[str, User]) -> None:
    assert sign_in.from_session({BACKEND_SESSION_KEY: sign_in.SSO_BACKEND}) == "sso"
    assert sign_in.from_session({BACKEND_SESSION_KEY: "axes.backends.AxesStandaloneBackend"}) \
        == "password"
    assert sign_in.from_session({}) is None


def test_the_system_records_no_method(users: dict[str, User]) -> None:
    pending = paused(users)
    services.answer_interrupt(None, pending.pk, True)
    assert Answer.objects.get(interrupt=pending).sign_in == ""


def test_decisions_list_csv_and_audit_page_show_the_method(users: dict[str, User]) -> None:
    pending = paused(users)
    password_client("reviewer").post(f"/interrupts/{pending.pk}/answer/", {"action": "approve"})
    auditor = password_client("auditor")
    assert "(password)" in auditor.get("/audit/decisions/").content.decode()
    exported = b"".join(auditor.get("/audit/decisions/export.csv").streaming_content).decode()
    [row] = list(csv.DictReader(io.StringIO(exported)))
    assert (row["answered_by"], row["signed_in_with"]) == ("reviewer", "password")
    audit_page = auditor.get("/audit/", {"action": "answer"}).content.decode()
    assert "reviewer <span" in audit_page and "(password)" in audit_page
    audit_csv = b"".join(auditor.get("/audit/export.csv", {"action": "answer"})
                         .streaming_content).decode()
    assert [r["sign_in"] for r in csv.DictReader(io.StringIO(audit_csv))
            if r["action"] == "answer"] == ["password"]
