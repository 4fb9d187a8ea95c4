"""The demo accounts and the deploy check that refuses them in production.

Their passwords are printed by ``make run`` and written in README.md, so anyone can log
in with them: ``manage.py check --deploy`` fails while one still has its known password.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core import checks
from django.db import DatabaseError

# Documented in README.md and printed by `make run`: local demo accounts only.
ACCOUNTS = {
    "reviewer": "forge-reviewer",
    "supervisor": "forge-supervisor",
    "auditor": "forge-auditor",
}
ADMIN_ACCOUNT = ("admin", "forge-admin")
KNOWN_PASSWORDS = {**ACCOUNTS, ADMIN_ACCOUNT[0]: ADMIN_ACCOUNT[1]}


def accounts_with_known_passwords() -> list[str]:
    """Demo usernames whose password is still the published one."""
    users = get_user_model().objects.filter(username__in=KNOWN_PASSWORDS, is_active=True)
    return sorted(user.get_username() for user in users
                  if user.check_password(KNOWN_PASSWORDS[user.get_username()]))


@checks.register(checks.Tags.security, deploy=True)
def check_demo_passwords(**kwargs: Any) -> list[checks.CheckMessage]:
    try:
        found = accounts_with_known_passwords()
    except DatabaseError:  # not migrated yet: nothing to log in with either
        return []
    return [checks.Error(
        f"demo account {username!r} still has its published password",
        hint=f"change it (manage.py changepassword {username}) or delete the account",
        id="forgeui.E020") for username in found]
