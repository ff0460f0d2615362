"""The SSRF guard for the MCP SDK's HTTP client (``httpx2``): every request, the first
and each one after a redirect, goes to an address the guard checked, and no response body
grows beyond the policy's cap."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import httpx2

from coze_lab.core.errors import InvalidParameter
from coze_lab.core.net import OutboundPolicy
from coze_lab.core.net.guard import checked_address


class GuardedTransport(httpx2.AsyncBaseTransport):
    """An ``httpx2`` transport that resolves each request's host itself, refuses internal
    addresses (unless ``policy`` allows them) and connects to the checked address, keeping
    the Host header and the TLS server name.

    Example:
        >>> client = httpx2.AsyncClient(transport=GuardedTransport(OutboundPolicy()))
    """

    def __init__(self, policy: OutboundPolicy) -> None:
        self._policy = policy
        self._inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        target = request.url
        address = await checked_address(httpx.URL(str(target)), self._policy)
        if target.scheme == "https":
            request.extensions = {**request.extensions, "sni_hostname": target.host}
        request.url = target.copy_with(host=str(address))
        try:
            response = await self._inner.handle_async_request(request)
        finally:
            request.url = target  # redirects are judged against the host asked for
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=_Capped(response, self._policy.max_response_bytes),
            request=request,
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Capped(httpx2.AsyncByteStream):
    def __init__(self, response: httpx2.Response, limit: int) -> None:
        self._response = response
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        read = 0
        async for chunk in self._response.aiter_raw():
            read += len(chunk)
            if read > self._limit:
                raise InvalidParameter(f"the MCP server's response exceeds {self._limit} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._response.aclose()
