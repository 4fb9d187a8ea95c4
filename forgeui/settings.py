"""Settings, read from environment variables with embedded defaults.

With nothing set, forge runs embedded: a SQLite file next to ``manage.py``, an in-memory
channel layer and graph tasks on a thread pool inside the web process. Setting
``DATABASE_URL`` and ``REDIS_URL`` switches to PostgreSQL, the Redis channel layer and
``rqworker`` processes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    """``1/true/yes/on`` (any case) is true; unset means ``default``."""
    value = os.environ.get(name)
    return default if value is None else value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def database(url: str) -> dict[str, Any]:
    """One DATABASES entry; SQLite gets WAL, a busy timeout and write-locking transactions."""
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
    return config


DEFAULT_GRAPHS = {
    "transfer": "runtime.examples:transfer",
    "supervisor": "runtime.examples:supervisor",
    "parallel_approvals": "runtime.examples:parallel_approvals",
    "deploy": "runtime.examples:deploy",
    "nested": "runtime.examples:nested",
}

SECRET_KEY = os.environ.get("SECRET_KEY", "forge-dev-only-insecure-secret-key-change-me")
DEBUG = env_bool("DEBUG", True)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
REDIS_URL = os.environ.get("REDIS_URL", "")
FORGE_GRAPHS: dict[str, str] = json.loads(os.environ.get("FORGE_GRAPHS") or "null") or (
    DEFAULT_GRAPHS
)
# Sync nodes run in a worker thread, where Django's ORM may be used ("auto": inline).
FORGE_SYNC_NODES = os.environ.get("FORGE_SYNC_NODES", "thread")
# Extra exact websocket origins, e.g. "https://forge.example.com" behind a TLS proxy.
FORGE_WS_ORIGINS = env_list("FORGE_WS_ORIGINS", "")

INSTALLED_APPS = [
    "daphne",  # first, so `runserver` is the ASGI server
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_tasks",
    "template_partials",
    "forgeui",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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

if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
    TASKS = {"default": {"BACKEND": "django_tasks_rq.RQBackend", "QUEUES": ["default"]}}
    # Workers: `manage.py rqworker --job-class django_tasks_rq.Job default`
    INSTALLED_APPS += ["django_rq", "django_tasks_rq"]
    RQ_QUEUES = {"default": {"URL": REDIS_URL, "DEFAULT_TIMEOUT": 86_400}}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    # The web process answers 202 at once; graphs run on its own thread pool.
    TASKS = {"default": {"BACKEND": "forgeui.backends.ThreadPoolBackend"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"forgeui": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")}},
}
