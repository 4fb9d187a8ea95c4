"""Settings, read from environment variables with embedded defaults.

With nothing set, forge runs embedded: a SQLite file next to ``manage.py``, an in-memory
channel layer and graph tasks on a thread pool inside the web process. Setting
``DATABASE_URL`` and ``REDIS_URL`` switches to PostgreSQL, the Redis channel layer and
``rqworker`` processes.

``DEBUG=0`` is the production switch: it requires ``SECRET_KEY``, turns on HTTPS-only
cookies, the SSL redirect and HSTS (each can be turned back off by its own variable),
serves collected static files with whitenoise and logs one JSON object per line. The
Content-Security-Policy (``forgeui.web.middleware``) applies in every mode, so the embedded
default exercises the same policy production sends.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    """``1/true/yes/on`` (any case) is true; unset means ``default``."""
    value = os.environ.get(name)
    return default if value is None else value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def env_json(name: str, default: str) -> Any:
    """The variable's JSON; text that is not JSON is kept for a system check to name."""
    with contextlib.suppress(ValueError):
        return json.loads(os.environ.get(name) or default)
    return os.environ.get(name) or default


def database(url: str) -> dict[str, Any]:
    """One DATABASES entry; SQLite gets WAL, a busy timeout and write-locking transactions,
    PostgreSQL server-side binding and prepared statements."""
    config: dict[str, Any] = dj_database_url.parse(url, conn_health_checks=True)
    if config["ENGINE"] == "django.db.backends.sqlite3":
        config["OPTIONS"] = {
            # WAL lets readers run beside the writer; FULL keeps a commit on disk.
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL",
            # IMMEDIATE takes the write lock at BEGIN, so concurrent writers wait for
            # the busy timeout instead of failing when a read lock would be upgraded.
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
        }
        # Kept open per thread: opening one costs more than most queries here (the
        # PRAGMAs and Django's SQL functions), and the inbox asks for one per event.
        config["CONN_MAX_AGE"] = None
    elif config["ENGINE"] == "django.db.backends.postgresql":
        options = config.setdefault("OPTIONS", {})
        if env_bool("FORGE_PG_PREPARED", True):
            # A statement a connection runs often is planned once by the server, not at
            # every save; off behind a pooler that cannot keep prepared statements.
            options.update(server_side_binding=True, prepare_threshold=5)
        # A pool, as each ASGI request has a thread; its wait bounded: the DB down, no 30 s hangs.
        if pool_size := int(os.environ.get("FORGE_DB_POOL", "20")):
            wait = float(os.environ.get("FORGE_DB_POOL_TIMEOUT", "10"))
            options["pool"] = {"min_size": 1, "max_size": pool_size, "timeout": wait}
    return config


DEFAULT_GRAPHS = {
    "transfer": "forgeui.demo.graphs:transfer",
    "supervisor": "forgeui.demo.graphs:supervisor",
    "parallel_approvals": "forgeui.demo.graphs:parallel_approvals",
    "deploy": "forgeui.demo.graphs:deploy",
    "nested": "forgeui.demo.graphs:nested",
    "email": "forgeui.demo.graphs:email",
}
# The LangGraph example, where LangGraph (the optional extra) is installed.
if importlib.util.find_spec("langgraph") is not None:
    DEFAULT_GRAPHS["refund_agent"] = "forgeui.demo.langgraph_agent:refund_agent"

DEV_SECRET_KEY = "forge-dev-only-insecure-secret-key-change-me"
SECRET_KEY = os.environ.get("SECRET_KEY", DEV_SECRET_KEY)
DEBUG = env_bool("DEBUG", True)
PRODUCTION = not DEBUG
if PRODUCTION and SECRET_KEY == DEV_SECRET_KEY:
    raise ImproperlyConfigured("DEBUG=0 needs SECRET_KEY from the environment")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")
REDIS_URL = os.environ.get("REDIS_URL", "")
# A site's FORGE_GRAPHS replaces the example graphs; FORGE_EXAMPLES=1 keeps them beside it.
# Text that is not JSON is kept, for the system check (forgeui.E002) to name the error.
FORGE_GRAPHS: Any = env_json("FORGE_GRAPHS", "null") or DEFAULT_GRAPHS
if env_bool("FORGE_EXAMPLES", False) and isinstance(FORGE_GRAPHS, dict):
    FORGE_GRAPHS = {**DEFAULT_GRAPHS, **FORGE_GRAPHS}
# Approval policies, {name: {"nodes": ["graph/node"], "agents": [...], "approvals": M, ...}}
# (forgeui.runs.policies.config); the system check E010 names what is wrong.
FORGE_POLICIES: Any = env_json("FORGE_POLICIES", "{}")
# Teams, {team: {"graphs": ["graph", "graph/*"], "agents": ["agent-name"]}}
# (forgeui.permissions.teams); the system check E050 names what is wrong.
FORGE_TEAMS: Any = env_json("FORGE_TEAMS", "{}")
# Sync nodes run in a worker thread, where Django's ORM may be used ("auto": inline).
FORGE_SYNC_NODES = os.environ.get("FORGE_SYNC_NODES", "thread")
# Extra exact websocket origins, e.g. "https://forge.example.com" behind a TLS proxy.
FORGE_WS_ORIGINS = env_list("FORGE_WS_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # Before staticfiles, so `runserver` is forgeui's: daphne's ASGI server, websockets
    # included. Not the daphne app itself, which loads Twisted into every process.
    "forgeui",
    "django.contrib.staticfiles",
    "channels",
    "django_tasks",
    "template_partials",
    "ninja",  # /api/docs loads Swagger UI from these static files, not a CDN (CSP 'self')
    "axes",  # login throttling: failed attempts and lockouts, in the database
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "forgeui.web.middleware.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "forgeui.web.middleware.SignInMethodMiddleware",  # how they signed in (forgeui.team.sso)
    "forgeui.web.middleware.NulInputMiddleware",  # after auth: its 400 page shows the user
    "forgeui.web.middleware.BidiMarkingMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Turns a locked-out login into the lockout page; last of those that touch a response.
    "axes.middleware.AxesMiddleware",
    "forgeui.web.middleware.OneThreadPerRequest",  # sync only, and last: see there
]

ROOT_URLCONF = "forgeui.urls"
ASGI_APPLICATION = "forgeui.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": database(os.environ.get("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"))
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# redis-py 8 gives every read a 5 s timeout by default, as long as the channel layer's own
# blocking pop (BZPOPMIN): an idle websocket's receive then fails and daphne closes it.
# Reads get a timeout well above that pop, so a dead connection is still noticed; RQ
# workers raise their own above their blocking dequeue, and the readiness probe sets its own.
REDIS_SOCKET_TIMEOUT = float(os.environ.get("REDIS_SOCKET_TIMEOUT", "30"))


def channel_layer_host(url: str) -> dict[str, Any]:
    """One ``channels_redis`` host: the URL and explicit client options."""
    return {"address": url, "socket_timeout": REDIS_SOCKET_TIMEOUT,
            "socket_connect_timeout": 5, "socket_keepalive": True,
            "health_check_interval": 30}


if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # A prefix of its own lets several forges (or test runs) share one Redis.
            "CONFIG": {"hosts": [channel_layer_host(REDIS_URL)],
                       "prefix": os.environ.get("CHANNEL_LAYER_PREFIX", "asgi")},
        }
    }

# Runs in flight at most per graph, across all workers (a model API's rate limit), as JSON:
# {"name": 5}; the rest queue. Needs FORGE_QUEUE=procrastinate.
FORGE_GRAPH_CAPS: dict[str, int] = json.loads(os.environ.get("FORGE_GRAPH_CAPS") or "{}")

# A forge_worker's heartbeat; one silent for six beats is dead (recover_runs takes its jobs).
FORGE_WORKER_HEARTBEAT_SECONDS = float(os.environ.get("FORGE_WORKER_HEARTBEAT_SECONDS", "5"))
# Where production's tasks queue: "procrastinate" (PostgreSQL; `manage.py forge_worker`
# holds many runs per process) or "rq" (Redis; `rqworker`, one run per process, for a
# database other than PostgreSQL). Without REDIS_URL tasks run in the web process.
FORGE_QUEUE = os.environ.get("FORGE_QUEUE") or (
    "" if not REDIS_URL else
    "procrastinate" if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
    else "rq")
if FORGE_QUEUE == "procrastinate":
    TASKS = {alias: {"BACKEND": "forgeui.worker.backend.ProcrastinateBackend"}
             for alias in ("default", "notify")}
    INSTALLED_APPS += ["procrastinate.contrib.django"]
    PROCRASTINATE_AUTODISCOVER_MODULE_NAME = ""
    PROCRASTINATE_IMPORT_PATHS = ["forgeui.worker.jobs"]
elif FORGE_QUEUE == "rq":
    TASKS = {"default": {"BACKEND": "django_tasks_rq.RQBackend", "QUEUES": ["default"]},
             "notify": {"BACKEND": "django_tasks_rq.RQBackend", "QUEUES": ["default"]}}
    # Workers: `manage.py rqworker --job-class django_tasks_rq.Job default`
    INSTALLED_APPS += ["django_rq", "django_tasks_rq"]
    RQ_QUEUES = {"default": {"URL": REDIS_URL, "DEFAULT_TIMEOUT": 86_400}}
if not REDIS_URL:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
if not FORGE_QUEUE:
    # Tasks run in the web process; webhooks and e-mail on a pool of their own, so a slow
    # receiver never holds up a run.
    TASKS = {"default": {"BACKEND": "forgeui.runs.backends.ThreadPoolBackend"},
             "notify": {"BACKEND": "forgeui.runs.backends.ThreadPoolBackend",
                        "OPTIONS": {"WORKERS": 2}}}

# GET /metrics answers a scraper sending this as its bearer token; unset, there are none.
FORGE_METRICS_TOKEN = os.environ.get("FORGE_METRICS_TOKEN", "")

# Notification e-mail (assignees, overdue interrupts): printed to the console unless
# production names a backend (EMAIL_BACKEND, EMAIL_HOST, ... as Django reads them).
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend"
                               if PRODUCTION else "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "forge@localhost")
# Anonymous password reset mails a link, so it is on only where e-mail was configured
# (FORGE_PASSWORD_RESET=1, or EMAIL_HOST set); forgeui.team.accounts throttles it.
FORGE_PASSWORD_RESET = env_bool("FORGE_PASSWORD_RESET", "EMAIL_HOST" in os.environ)

# Webhooks may reach loopback, link-local and private addresses only when this is on
# (a receiver inside the network); otherwise a webhook cannot probe it
# (forgeui.notifications.egress).
FORGE_WEBHOOK_ALLOW_PRIVATE = env_bool("FORGE_WEBHOOK_ALLOW_PRIVATE", False)

# Agents (names of agent tokens; "*" for all) whose approval requests may be approved by
# their deadline (on_deadline "approve"); everyone else's may only default to a rejection.
FORGE_REQUESTS_APPROVE_ON_DEADLINE = env_list("FORGE_REQUESTS_APPROVE_ON_DEADLINE", "")

# Seconds between progress notifications while an MCP tool waits for a person.
FORGE_MCP_PROGRESS_SECONDS = float(os.environ.get("FORGE_MCP_PROGRESS_SECONDS", "10"))

# Slack approvals (forgeui.slack, docs/slack.md): off until the bot token and the signing
# secret are set; messages go to FORGE_SLACK_CHANNEL. FORGE_SLACK_API_URL is the Web API's
# base (a test points it at a stand-in). E-mail matching links no one unless turned on.
FORGE_SLACK_BOT_TOKEN = os.environ.get("FORGE_SLACK_BOT_TOKEN", "")
FORGE_SLACK_SIGNING_SECRET = os.environ.get("FORGE_SLACK_SIGNING_SECRET", "")
FORGE_SLACK_CHANNEL = os.environ.get("FORGE_SLACK_CHANNEL", "")
# Channels by what asks, {"policy:NAME" | "agent:NAME" | "graph:NAME[/node]": channel}
# (forgeui.slack.channels); the system check E040 names what is wrong.
FORGE_SLACK_CHANNELS: Any = env_json("FORGE_SLACK_CHANNELS", "{}")
FORGE_SLACK_API_URL = os.environ.get("FORGE_SLACK_API_URL", "https://slack.com/api/")
FORGE_SLACK_LINK_BY_EMAIL = env_bool("FORGE_SLACK_LINK_BY_EMAIL", False)

# Seconds between deadline sweeps (forgeui.scheduler, manage.py expire_interrupts --loop).
FORGE_SWEEP_SECONDS = float(os.environ.get("FORGE_SWEEP_SECONDS", "10"))

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    # Not a rule for new passwords: told of each change, it revokes the user's API tokens.
    {"NAME": "forgeui.team.passwords.TokensRevokedOnChange"},
]
# -- sign-in throttling and API tokens ---------------------------------------------------
# Login throttling (django-axes), for /accounts/login/, /admin/login/ and wrong old
# passwords on /accounts/password_change/: after FORGE_LOGIN_FAILURE_LIMIT wrong passwords
# for one username from one address, that pair is locked out for
# FORGE_LOGIN_LOCKOUT_MINUTES (so strangers cannot lock a person out from elsewhere), and
# after as many from one address, whatever the usernames, that address is. A success
# forgets only that username's failures from that address (forgeui.team.lockouts).
# Lockouts are rows every web process sees; an admin lifts one by deleting its access
# attempt in /admin/ (audited as login.unlocked).
# The address is the socket's peer, or, behind FORGE_TRUSTED_PROXIES proxies that each
# append to X-Forwarded-For, the entry they vouch for (forgeui.team.addresses). Production
# runs behind one TLS proxy (the README's daphne command), so that is its default; with
# none, every client would share the proxy's one lockout count.
FORGE_TRUSTED_PROXIES = int(os.environ.get("FORGE_TRUSTED_PROXIES", "1" if PRODUCTION else "0"))
if FORGE_TRUSTED_PROXIES < 0:
    raise ImproperlyConfigured("FORGE_TRUSTED_PROXIES is a number of proxies, 0 or more")
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend",
                           "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = int(os.environ.get("FORGE_LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=float(os.environ.get("FORGE_LOGIN_LOCKOUT_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_CLIENT_IP_CALLABLE = "forgeui.team.addresses.client_address"
AXES_RESET_ON_SUCCESS = False  # forgeui.team.lockouts forgets the pair's failures only
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False  # forgeui logs and audits lockouts itself
# API tokens expire FORGE_TOKEN_DAYS after they are made (create_token --days N for other
# terms); changing a password revokes its user's tokens.
FORGE_TOKEN_DAYS = int(os.environ.get("FORGE_TOKEN_DAYS", "90"))

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))

# -- production hardening (DEBUG=0; `manage.py check --deploy --fail-level WARNING`) ------
# Behind a TLS-terminating proxy set FORGE_PROXY_SSL_HEADER=X-Forwarded-Proto, and make
# the proxy set that header itself (overwriting any the client sent): Django then trusts
# it to tell https from http. Without it, every request behind the proxy looks like http
# and the SSL redirect loops.
if proxy_header := os.environ.get("FORGE_PROXY_SSL_HEADER", ""):
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + proxy_header.upper().replace("-", "_"), "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", PRODUCTION)
# Load balancers probe over plain http.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", PRODUCTION)
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", 31_536_000 if PRODUCTION else 0))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", PRODUCTION)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", PRODUCTION)
# Django's defaults, spelled out because production relies on them.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# No inline script or style anywhere (templates/, static/); htmx's indicator <style> is
# off (htmx-config in base.html). 'self' covers same-host ws:/wss: in CSP level 3.
FORGE_CSP = os.environ.get("FORGE_CSP", "; ".join([
    "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:",
    "connect-src 'self'", "object-src 'none'", "base-uri 'none'", "form-action 'self'",
    "frame-ancestors 'none'",
]))
if PRODUCTION:
    # Static files straight from the web processes: run `manage.py collectstatic` first.
    MIDDLEWARE.insert(1, "whitenoise.middleware.WhiteNoiseMiddleware")
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }

# "json": one object per line with the run_id/thread_id/interrupt_id a line is about
# (forgeui.runs.logs), for log shippers; "text" for people.
FORGE_LOG_FORMAT = os.environ.get("FORGE_LOG_FORMAT", "json" if PRODUCTION else "text")
LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "forgeui.runs.logs.JsonFormatter"}},
    "filters": {"run": {"()": "forgeui.runs.logs.RunFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["run"]}},
    "loggers": {
        "forgeui": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
        # One line per task state change (the deadline sweep runs every few seconds) is
        # noise on a console; failures still show.
        "django_tasks": {"level": os.environ.get("TASKS_LOG_LEVEL", "WARNING")},
    },
}
if FORGE_LOG_FORMAT == "json":
    # On the root logger, so everyone's warnings (django.request, rq) are JSON lines too;
    # forgeui's records reach it by propagation.
    LOGGING["handlers"]["console"]["formatter"] = "json"
    LOGGING["loggers"]["forgeui"]["handlers"] = []
    # Django's own console handler (plain text when DEBUG) gives way to the JSON one.
    LOGGING["loggers"]["django"] = {"handlers": [], "level": "WARNING"}
    LOGGING["root"] = {"handlers": ["console"], "level": "WARNING"}

# -- identity: single sign-on, how people signed in, bound decision links ----------------
# OpenID Connect (mozilla-django-oidc; forgeui.team.sso), on when OIDC_RP_CLIENT_ID is set.
# Local accounts keep working beside it. The provider's endpoints are named one by one
# (its discovery document lists them); FORGE_OIDC_ROLES maps each group of the groups
# claim to a forge role or a list of them, e.g. {"payments-approvers": "reviewer"}.
OIDC_RP_CLIENT_ID = os.environ.get("OIDC_RP_CLIENT_ID", "")
FORGE_SSO = bool(OIDC_RP_CLIENT_ID)
OIDC_RP_CLIENT_SECRET = os.environ.get("OIDC_RP_CLIENT_SECRET", "")
FORGE_OIDC_ISSUER = os.environ.get("FORGE_OIDC_ISSUER", "")
OIDC_OP_AUTHORIZATION_ENDPOINT = os.environ.get("OIDC_OP_AUTHORIZATION_ENDPOINT", "")
OIDC_OP_TOKEN_ENDPOINT = os.environ.get("OIDC_OP_TOKEN_ENDPOINT", "")
OIDC_OP_USER_ENDPOINT = os.environ.get("OIDC_OP_USER_ENDPOINT", "")
OIDC_OP_JWKS_ENDPOINT = os.environ.get("OIDC_OP_JWKS_ENDPOINT", "")
OIDC_RP_SIGN_ALGO = os.environ.get("OIDC_RP_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = os.environ.get("OIDC_RP_SCOPES", "openid email profile groups")
OIDC_USE_PKCE = True
OIDC_TIMEOUT = float(os.environ.get("OIDC_TIMEOUT", "10"))
FORGE_OIDC_GROUPS_CLAIM = os.environ.get("FORGE_OIDC_GROUPS_CLAIM", "groups")
FORGE_OIDC_USERNAME_CLAIM = os.environ.get("FORGE_OIDC_USERNAME_CLAIM", "preferred_username")
FORGE_OIDC_ROLES: dict[str, Any] = json.loads(os.environ.get("FORGE_OIDC_ROLES") or "{}")
# Provider groups to team roles, e.g. {"fin-approvers": "finance:reviewer"} (or a list).
FORGE_OIDC_TEAMS: dict[str, Any] = json.loads(os.environ.get("FORGE_OIDC_TEAMS") or "{}")
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/?sso=failed"
if FORGE_SSO:
    AUTHENTICATION_BACKENDS = [*AUTHENTICATION_BACKENDS, "forgeui.team.sso.ForgeOIDCBackend"]
# Notification e-mails link to their decision: signed for one recipient, valid this long.
FORGE_BASE_URL = os.environ.get("FORGE_BASE_URL", "http://127.0.0.1:8000").rstrip("/")
FORGE_DECISION_LINK_MAX_AGE = int(os.environ.get("FORGE_DECISION_LINK_HOURS", "72")) * 3600
