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
        LOOPBACK_ONLY,
        "POST",
        f"{echo.url}/echo",
        params={"q": "tea", "n": 2},
        headers={"X-Token": "abc"},
        json={"a": [1, 2]},
    )
    seen = response.json()
    assert response.status_code == 200
    assert seen["method"] == "POST" and seen["query"] == {"q": "tea", "n": "2"}
    assert seen["headers"]["x-token"] == "abc"
    assert seen["headers"]["host"] == f"127.0.0.1:{echo.port}"
    assert seen["body"] == '{"a":[1,2]}' or seen["body"] == '{"a": [1, 2]}'


@pytest.mark.asyncio
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]", "127.1"])
async def test_internal_addresses_are_refused_without_a_packet(echo: EchoServer, host: str) -> None:
    with pytest.raises(BlockedAddress, match="refusing"):
        await guarded_request(OutboundPolicy(), "GET", f"http://{host}:{echo.port}/echo")
    assert echo.connections == 0


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "address",
    [
        "10.1.2.3",
        "192.168.0.10",
        "172.16.5.4",
        "169.254.169.254",
        "0.0.0.0",
        "[fd00::1]",
        "224.0.0.1",
    ],
)
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
        await guarded_request(LOOPBACK_ONLY, "GET", f"{echo.url}/redirect", params={"to": target})
    assert echo.connections == 1  # the first hop only


@pytest.mark.asyncio
async def test_an_allowed_redirect_is_followed(echo: EchoServer) -> None:
    response = await guarded_request(
        LOOPBACK_ONLY, "GET", f"{echo.url}/redirect", params={"to": "/echo?after=redirect"}
    )
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
