"""Outgoing HTTP to addresses people typed in (webhooks), without reaching inside.

A webhook URL is chosen by an admin, but whatever it names is fetched from inside the
network: loopback, link-local (cloud metadata) and private addresses are refused unless
``FORGE_WEBHOOK_ALLOW_PRIVATE`` is on. The host is resolved once, every address checked,
and the connection made to the checked address itself, so a DNS answer that changes
between the check and the connection (rebinding) cannot slip past. Redirects are never
followed: a 3xx is the receiver's answer, like any other.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
from urllib.parse import urlsplit


class RefusedDestination(ValueError):
    """The URL is not one forge will connect to."""


# Not private to the ipaddress module, but inside all the same: carrier-grade NAT (where
# some clouds serve metadata), and IPv6 prefixes that carry an IPv4 address inside
# (6to4, Teredo, NAT64) or that are site-local.
INSIDE_NETWORKS = tuple(ipaddress.ip_network(n) for n in (
    "100.64.0.0/10", "2002::/16", "2001::/32", "64:ff9b::/96", "64:ff9b:1::/48",
    "fec0::/10"))


def blocked(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_multicast
            or ip.is_reserved or ip.is_unspecified
            or any(ip in network for network in INSIDE_NETWORKS))


def resolve(host: str, port: int, allow_private: bool) -> str:
    """One address to connect to; ``RefusedDestination`` if any address is off limits."""
    try:
        found = {info[4][0] for info in socket.getaddrinfo(host, port,
                                                           type=socket.SOCK_STREAM)}
    except socket.gaierror as exc:
        raise RefusedDestination(f"{host!r} does not resolve: {exc}") from None
    if not allow_private:
        inside = sorted(a for a in found if blocked(str(a)))
        if inside:
            raise RefusedDestination(f"{host!r} resolves to a private, loopback or "
                                     f"link-local address ({inside[0]}); set "
                                     f"FORGE_WEBHOOK_ALLOW_PRIVATE=1 to allow it")
    return str(sorted(found)[0])


class _PinnedHTTP(http.client.HTTPConnection):
    """Connects to ``address`` while naming ``host`` in the request."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self.address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """As ``_PinnedHTTP``, with TLS verified against ``host`` (SNI and certificate)."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self.address = address

    def connect(self) -> None:
        raw = socket.create_connection((self.address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(raw, server_hostname=self.host)  # type: ignore[attr-defined]


def post(url: str, body: bytes, headers: dict[str, str], timeout: float,
         allow_private: bool) -> int:
    """POST ``body`` to ``url``; the response's status code. Raises ``RefusedDestination``
    for a URL forge will not reach, ``OSError`` when the connection fails."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RefusedDestination(f"only http and https URLs with a host, not {url!r}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    address = resolve(parts.hostname, port, allow_private)
    kind = _PinnedHTTPS if parts.scheme == "https" else _PinnedHTTP
    connection = kind(parts.hostname, port, address, timeout)
    try:
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection.request("POST", target, body=body, headers=headers)
        return connection.getresponse().status
    finally:
        connection.close()
