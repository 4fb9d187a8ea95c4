"""Set up the provider's database: the client forge signs in through, and its people."""

from __future__ import annotations

import json
import sys

import django


def main(spec: dict[str, object]) -> None:
    """``spec``: {"client_id", "client_secret", "redirect_uri",
    "users": {name: {"password", "email", "groups"}}}; run again to change groups."""
    django.setup()
    from django.contrib.auth.models import Group, User
    from oauth2_provider.models import Application

    Application.objects.update_or_create(client_id=spec["client_id"], defaults={
        "name": "forge", "client_secret": spec["client_secret"],
        "client_type": Application.CLIENT_CONFIDENTIAL,
        "authorization_grant_type": Application.GRANT_AUTHORIZATION_CODE,
        "redirect_uris": spec["redirect_uri"], "algorithm": Application.RS256_ALGORITHM,
        "skip_authorization": True})
    for name, person in dict(spec["users"]).items():  # type: ignore[call-overload]
        user, _ = User.objects.get_or_create(username=name)
        user.email = person["email"]
        user.set_password(person["password"])
        user.save()
        user.groups.set([Group.objects.get_or_create(name=g)[0] for g in person["groups"]])


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
