"""Which address a request comes from, for throttling logins and password resets.

Behind ``FORGE_TRUSTED_PROXIES`` proxies, each of which appends the address it was called
from to ``X-Forwarded-For``, the client is the entry that many places from the right;
whatever lies left of it the client wrote itself. With no trusted proxy the header is
ignored. ``daphne --proxy-headers`` puts the header's left-most entry (the client's own
words) in ``REMOTE_ADDR``, so that value is not believed either: such requests share one
count under ``UNKNOWN_ADDRESS``, and rotating the header gains nothing.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest

UNKNOWN_ADDRESS = "0.0.0.0"  # an address nobody connects from: forged or hidden ones
IPV6_PREFIX = 64


def client_address(request: HttpRequest) -> str:
    """The client's IP address as the trusted proxies report it; never one it chose."""
    peer = request.META.get("REMOTE_ADDR", "")
    forwarded = [entry.strip() for entry in
                 request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if entry.strip()]
    hops = settings.FORGE_TRUSTED_PROXIES
    if not forwarded:
        return canonical(peer)
    if hops == 0:
        return UNKNOWN_ADDRESS if peer == forwarded[0] else canonical(peer)
    return canonical(forwarded[-hops]) if len(forwarded) >= hops else UNKNOWN_ADDRESS


def canonical(address: str) -> str:
    """``address`` in one spelling, or ``UNKNOWN_ADDRESS``. An IPv6 client counts as its
    /64: one host is usually handed a whole /64 and may pick any address in it."""
    try:
        found = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return UNKNOWN_ADDRESS
    if isinstance(found, ipaddress.IPv6Address):
        if found.ipv4_mapped is not None:
            return str(found.ipv4_mapped)
        return str(ipaddress.ip_network(f"{found}/{IPV6_PREFIX}", strict=False).network_address)
    return str(found)
