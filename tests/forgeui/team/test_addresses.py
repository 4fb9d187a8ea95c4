"""Which address a request is counted under: the peer, or what the trusted proxies vouch
for in ``X-Forwarded-For``, never what the client wrote itself."""

from __future__ import annotations

import pytest
from django.test import RequestFactory, override_settings

from forgeui.team.addresses import UNKNOWN_ADDRESS, client_address


def address(remote: str, forwarded: str | None = None) -> str:
    extra = {} if forwarded is None else {"HTTP_X_FORWARDED_FOR": forwarded}
    return client_address(RequestFactory().get("/", REMOTE_ADDR=remote, **extra))


def test_with_no_trusted_proxy_the_peer_counts_and_the_header_is_ignored() -> None:
    assert address("10.1.1.1") == "10.1.1.1"
    assert address("10.1.1.1", "198.51.100.7") == "10.1.1.1"


def test_a_peer_taken_from_the_header_is_not_believed() -> None:
    """``daphne --proxy-headers`` copies the header's first entry into REMOTE_ADDR."""
    assert address("198.51.100.7", "198.51.100.7, 10.0.0.1") == UNKNOWN_ADDRESS


@pytest.mark.parametrize(("hops", "forwarded", "expected"), [
    (1, "198.51.100.7, 203.0.113.5", "203.0.113.5"),
    (2, "198.51.100.7, 203.0.113.5, 10.0.0.2", "203.0.113.5"),
    (2, "203.0.113.5", UNKNOWN_ADDRESS),  # fewer hops than proxies: not via them all
    (1, "not-an-address", UNKNOWN_ADDRESS),
    (1, "2001:db8:0:0::1", "2001:db8::"),
    (1, "2001:db8::ffff:1234:5678", "2001:db8::"),  # the same /64: the same client
    (1, "2001:db8:0:1::1", "2001:db8:0:1::"),
    (1, "::ffff:192.0.2.9", "192.0.2.9"),
])
def test_behind_proxies_the_entry_they_vouch_for_counts(hops: int, forwarded: str,
                                                        expected: str) -> None:
    with override_settings(FORGE_TRUSTED_PROXIES=hops):
        assert address("127.0.0.1", forwarded) == expected
        assert address("127.0.0.9") == "127.0.0.9"  # no header: came straight in
