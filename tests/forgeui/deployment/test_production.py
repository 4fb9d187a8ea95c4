"""Production mode: hardened settings, security headers, static files, no inline code.

``DEBUG=0`` switches production on (``forgeui.settings``); those settings are read at
import, so production is exercised in subprocesses with a production environment.
"""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from forgeui.models import Interrupt
from forgeui.runs import services
from tests.forgeui.conftest import ROOT
from tests.processes import manage

HOST = "forge.example.com"


def production_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "DEBUG": "0",
            "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": HOST,
            "CSRF_TRUSTED_ORIGINS": f"https://{HOST}",
            "DATABASE_URL": f"sqlite:///{tmp_path / 'prod.sqlite3'}",
            "STATIC_ROOT": str(tmp_path / "static"), **extra}


def test_check_deploy_passes_with_production_settings(tmp_path: Path) -> None:
    done = manage("check", "--deploy", "--fail-level", "WARNING", env=production_env(tmp_path))
    assert "no issues" in done.stdout


def test_production_refuses_to_start_with_the_dev_secret_key(tmp_path: Path) -> None:
    env = production_env(tmp_path)
    del env["SECRET_KEY"]
    done = subprocess.run([sys.executable, "manage.py", "check"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "DEBUG=0 needs SECRET_KEY" in done.stderr


FETCH = """
import json, re, django
django.setup()
from django.test import Client
client = Client(HTTP_HOST="forge.example.com")
plain = client.get("/accounts/login/")
probe = client.get("/healthz")
tls = client.get("/accounts/login/", secure=True)
css = re.search(r'<link rel="stylesheet" href="([^"]+)"', tls.content.decode()).group(1)
static = client.get(css, secure=True)
print(json.dumps({
    "plain": [plain.status_code, plain.get("Location", "")], "probe": probe.status_code,
    "headers": dict(tls.headers), "status": tls.status_code,
    "csrf_cookie_secure": bool(tls.cookies["csrftoken"]["secure"]),
    "css": css, "static": [static.status_code, static.get("Cache-Control", ""),
                           b"".join(static.streaming_content).decode()[:200]],
}))
"""


def test_production_serves_https_only_with_security_headers_and_static_files(
        tmp_path: Path) -> None:
    env = production_env(tmp_path, DJANGO_SETTINGS_MODULE="forgeui.settings")
    manage("collectstatic", "--noinput", env=env)
    done = subprocess.run([sys.executable, "-c", FETCH], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["plain"] == [301, f"https://{HOST}/accounts/login/"]
    assert found["probe"] == 200  # load balancers probe over plain http
    headers = found["headers"]
    assert found["status"] == 200
    assert headers["Strict-Transport-Security"] == (
        "max-age=31536000; includeSubDomains; preload")
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["Referrer-Policy"] == "same-origin"
    assert_strict_csp(headers["Content-Security-Policy"])
    assert found["csrf_cookie_secure"] is True
    # whitenoise serves the collected, content-hashed file with a far-future cache.
    assert re.fullmatch(r"/static/forgeui/forge\.[0-9a-f]{12}\.css", found["css"])
    status, cache, body = found["static"]
    assert status == 200 and "immutable" in cache and "forge" in body


def assert_strict_csp(policy: str) -> None:
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'" and directives["object-src"] == "'none'"
    assert "unsafe" not in policy


def test_embedded_default_stays_plain_http_with_the_same_csp(db: None) -> None:
    response = Client().get("/accounts/login/")
    assert response.status_code == 200  # no redirect to https, no HSTS
    assert "Strict-Transport-Security" not in response.headers
    assert not response.cookies["csrftoken"]["secure"]
    assert response["X-Frame-Options"] == "DENY"
    assert_strict_csp(response["Content-Security-Policy"])


# -- no inline code: what a strict CSP would block -------------------------------------------

INLINE = [
    re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.I),
    re.compile(r"<style\b", re.I),
    re.compile(r"\sstyle=", re.I),
    re.compile(r"\son[a-z]+=", re.I),
    re.compile(r"javascript:", re.I),
]


def inline_code(html: str) -> list[str]:
    return [m.group(0) for pattern in INLINE for m in pattern.finditer(html)]


@pytest.mark.django_db(transaction=True)
def test_no_rendered_page_carries_inline_script_or_style(users: dict[str, User]) -> None:
    run = services.start_run(users["supervisor"], "nested", {})
    pending = Interrupt.objects.of_tree(run.thread_id).pending().first()
    assert pending is not None
    client = Client()
    client.force_login(users["supervisor"])
    urls = ["/", "/runs/", "/audit/", f"/interrupts/{pending.pk}/", f"/runs/{run.run_id}/",
            f"/runs/{pending.run_id}/", f"/threads/{run.thread_id}/"]
    pages: dict[str, Any] = {url: client.get(url) for url in urls}
    pages["htmx /"] = client.get("/", HTTP_HX_REQUEST="true")
    pages["login"] = Client().get("/accounts/login/")
    for name, response in pages.items():
        assert response.status_code == 200, name
        html = response.content.decode()
        assert inline_code(html) == [], name


def test_templates_and_static_files_carry_no_inline_code() -> None:
    sources = [*(ROOT / "templates").rglob("*.html"), *(ROOT / "static/forgeui").glob("*.js")]
    for path in sources:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".js":  # scripts must not write inline handlers or styles either
            assert not re.search(r"setAttribute\(\s*[\"'](style|on[a-z]+)", text), path
            continue
        assert inline_code(text) == [], path
