"""The SSRF guard against a real HTTP server on loopback."""

from __future__ import annotations

import httpx
import pytest

from coze_lab.core.errors import InvalidParameter
from coze_lab.core.net import BlockedAddress, OutboundPolicy, guarded_request
from tests.support import EchoServer

LOOPBACK_ONLY = OutboundPolicy.from_strings(["127.0.0.1/32"])


@pytest.fixture
def echo():
    with EchoServer() as server:
        yield server


@pytest.mark.asyncio
async def test_allowed_call_carries_query_headers_and_json(echo: EchoServer) -> None:
    response = await guarded_request(
        LOOPBACK_ONLY, "POST", f"{echo.url}/echo", params={"q": "tea", "n": 2},
        headers={"X-Token": "abc"}, json={"a": [1, 2]})
    seen = response.json()
    assert response.status_code == 200
    assert seen["method"] == "POST" and seen["query"] == {"q": "tea", "n": "2"}
    assert seen["headers"]["x-token"] == "abc"
    assert seen["headers"]["host"] == f"127.0.0.1:{echo.port}"
    assert seen["body"] == '{"a":[1,2]}' or seen["body"] == '{"a": [1, 2]}'


@pytest.mark.asyncio
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]", "127.1"])
async def test_internal_addresses_are_refused_without_a_packet(echo: EchoServer, host: str
                                                               ) -> None:
    with pytest.raises(BlockedAddress, match="refusing"):
        await guarded_request(OutboundPolicy(), "GET", f"http://{host}:{echo.port}/echo")
    assert echo.connections == 0


@pytest.mark.asyncio
@pytest.mark.parametrize("address", ["10.1.2.3", "192.168.0.10", "172.16.5.4",
                                     "169.254.169.254", "0.0.0.0", "[fd00::1]", "224.0.0.1"])
async def test_private_ranges_are_refused_before_connecting(address: str) -> None:
    # a transport that records instead of connecting: even a broken guard sends nothing
    attempts: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        attempts.append(request)
        return httpx.Response(599)

    policy = OutboundPolicy(transport=httpx.MockTransport(record))
    with pytest.raises(BlockedAddress):
        await guarded_request(policy, "GET", f"http://{address}/", timeout=1)
    assert attempts == []


@pytest.mark.asyncio
async def test_a_redirect_to_a_refused_address_is_not_followed(echo: EchoServer) -> None:
    target = f"http://127.0.0.2:{echo.port}/echo"
    with pytest.raises(BlockedAddress):
        await guarded_request(LOOPBACK_ONLY, "GET", f"{echo.url}/redirect",
                              params={"to": target})
    assert echo.connections == 1  # the first hop only


@pytest.mark.asyncio
async def test_an_allowed_redirect_is_followed(echo: EchoServer) -> None:
    response = await guarded_request(LOOPBACK_ONLY, "GET", f"{echo.url}/redirect",
                                     params={"to": "/echo?after=redirect"})
    assert response.json()["query"] == {"after": "redirect"}


@pytest.mark.asyncio
async def test_responses_are_capped(echo: EchoServer) -> None:
    small = OutboundPolicy.from_strings(["127.0.0.1/32"], max_response_bytes=1000)
    assert len((await guarded_request(small, "GET", f"{echo.url}/big?n=1000")).content) == 1000
    with pytest.raises(InvalidParameter, match="exceeds"):
        await guarded_request(small, "GET", f"{echo.url}/big?n=1001")


@pytest.mark.asyncio
@pytest.mark.parametrize("url", ["ftp://example.com/x", "file:///etc/passwd", "http:///nohost"])
async def test_other_schemes_and_broken_urls_are_refused(url: str) -> None:
    with pytest.raises(InvalidParameter):
        await guarded_request(OutboundPolicy(), "GET", url)


#: IPv6 spellings that carry an internal IPv4 address (review finding: they were called)
EMBEDDED_INTERNAL = [
    "[::127.0.0.1]",  # IPv4-compatible
    "[::ffff:127.0.0.1]",  # IPv4-mapped
    "[::ffff:0:127.0.0.1]",  # IPv4-translated (RFC 2765)
    "[64:ff9b::127.0.0.1]",  # NAT64 well-known prefix
    "[64:ff9b::10.0.0.1]",
    "[64:ff9b:1::7f00:1]",  # NAT64 local-use prefix (/96 layout)
    "[64:ff9b:1:7f00:0:100::]",  # NAT64 local-use prefix (/48 layout)
    "[2002:7f00:1::]",  # 6to4 of 127.0.0.1
    "[2002:a9fe:a9fe::1]",  # 6to4 of 169.254.169.254
    "[2001:0:4136:e378:8000:63bf:80ff:fffe]",  # Teredo, client 127.0.0.1
]


@pytest.mark.asyncio
@pytest.mark.parametrize("host", EMBEDDED_INTERNAL)
async def test_ipv6_forms_embedding_an_internal_ipv4_are_refused(host: str) -> None:
    attempts: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        attempts.append(request)
        return httpx.Response(599)

    policy = OutboundPolicy(transport=httpx.MockTransport(record))
    with pytest.raises(BlockedAddress):
        await guarded_request(policy, "GET", f"http://{host}:8080/", timeout=1)
    assert attempts == []


@pytest.mark.parametrize(
    ("address", "allowed"),
    [
        ("::ffff:8.8.8.8", True),
        ("64:ff9b::8.8.8.8", True),
        ("2002:808:808::1", True),
        ("2606:4700::1111", True),
        ("::ffff:127.0.0.1", False),
        ("::1", False),
    ],
)
def test_embedded_ipv4_is_what_the_policy_judges(address: str, allowed: bool) -> None:
    import ipaddress

    assert OutboundPolicy().allows(ipaddress.ip_address(address)) is allowed


def test_an_allowed_ipv4_network_covers_its_ipv6_spellings() -> None:
    import ipaddress

    loopback = OutboundPolicy.from_strings(["127.0.0.0/8"])
    assert loopback.allows(ipaddress.ip_address("::ffff:127.0.0.1"))
    assert loopback.allows(ipaddress.ip_address("64:ff9b::127.0.0.1"))
