"""The SSRF guard: resolve, check every address, connect only to what was checked.

A request to a private, loopback, link-local, multicast or reserved address is refused
before any packet is sent to it, unless the policy allows that network explicitly. IPv6
addresses that carry an IPv4 address (mapped ``::ffff:a.b.c.d``, compatible ``::a.b.c.d``,
NAT64 ``64:ff9b::/96`` and ``64:ff9b:1::/48``, 6to4 ``2002::/16``, Teredo ``2001::/32``)
are judged by the IPv4 address they carry. The
guard resolves the host itself and connects to the checked IP (keeping the Host header
and TLS server name), so a DNS answer that changes between check and connect cannot slip
through; redirects are followed hop by hop and each hop is checked again.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx

from coze_lab.core.errors import InvalidParameter, PermissionDenied

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
MAX_REDIRECTS = 5
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215: prefixes of /48 to /96
_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")  # RFC 2765 IPv4-translated


class BlockedAddress(PermissionDenied):
    """The destination is a private or otherwise internal address."""


@dataclass(frozen=True)
class OutboundPolicy:
    """Which internal networks outbound calls may reach anyway (default: none).

    Example:
        >>> policy = OutboundPolicy.from_strings(["127.0.0.0/8"])
        >>> policy.allows(ipaddress.ip_address("127.0.0.1"))
        True
    """

    allowed_networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    max_response_bytes: int = 2_000_000
    transport: httpx.AsyncBaseTransport | None = field(default=None, compare=False)

    @classmethod
    def from_strings(cls, networks: Iterable[str], **kwargs: Any) -> OutboundPolicy:
        return cls(tuple(ipaddress.ip_network(n, strict=False) for n in networks), **kwargs)

    def allows(self, address: IPAddress) -> bool:
        """Whether calls may go to ``address``; an IPv6 address that carries an IPv4
        address is judged by that IPv4 address.

        Example:
            >>> OutboundPolicy().allows(ipaddress.ip_address("64:ff9b::127.0.0.1"))
            False
        """
        if any(address in net for net in self.allowed_networks):
            return True
        if isinstance(address, ipaddress.IPv6Address):
            carried = embedded_ipv4(address)
            if carried:
                return all(self.allows(v4) for v4 in carried)
        return address.is_global and not address.is_multicast


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (every candidate when the format is
    ambiguous); ``[]`` for a plain IPv6 address.

    Example:
        >>> [str(a) for a in embedded_ipv4(ipaddress.ip_address("2002:7f00:1::"))]
        ['127.0.0.1']
    """
    value = int(address)

    def v4(bits: int) -> ipaddress.IPv4Address:
        return ipaddress.IPv4Address(bits & 0xFFFFFFFF)

    if address.ipv4_mapped is not None:
        return [address.ipv4_mapped]
    if value >> 32 == 0 or address in _TRANSLATED or address in _NAT64:
        return [v4(value)]  # compatible ::a.b.c.d (and :: and ::1), translated, NAT64
    if address in _NAT64_LOCAL:  # RFC 6052 layouts of /48, /56, /64 and /96 prefixes
        return [
            v4(((value >> 64) & 0xFFFF) << 16 | (value >> 40) & 0xFFFF),
            v4(((value >> 64) & 0xFF) << 24 | (value >> 32) & 0xFFFFFF),
            v4(value >> 24),
            v4(value),
        ]
    if address.sixtofour is not None:
        return [address.sixtofour]
    if address.teredo is not None:
        return list(address.teredo)
    return []


async def resolve(host: str, port: int) -> list[IPAddress]:
    try:
        literal = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        pass
    else:
        return [literal]
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise InvalidParameter(f"cannot resolve host '{host}': {exc.strerror}") from exc
    return list(dict.fromkeys(ipaddress.ip_address(info[4][0]) for info in infos))


async def checked_address(url: httpx.URL, policy: OutboundPolicy) -> IPAddress:
    """The address to connect to; BlockedAddress when any resolved address is internal."""
    if url.scheme not in ("http", "https"):
        raise InvalidParameter(f"only http and https URLs are allowed, not '{url.scheme}'")
    if not url.host:
        raise InvalidParameter("the URL has no host")
    port = url.port or (443 if url.scheme == "https" else 80)
    addresses = await resolve(url.host, port)
    blocked = [a for a in addresses if not policy.allows(a)]
    if blocked or not addresses:
        culprit = blocked[0] if blocked else "?"
        raise BlockedAddress(
            f"refusing to call {url.host}: {culprit} is a private, loopback or link-local address"
        )
    return addresses[0]


async def guarded_request(
    policy: OutboundPolicy,
    method: str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    params: dict[str, Any] | None = None,
    content: bytes | None = None,
    json: Any = None,
    timeout: float = 30.0,
) -> httpx.Response:
    """One HTTP call under ``policy``; the body read is capped at ``max_response_bytes``."""
    target = httpx.URL(url)
    if params:  # added to the URL's own query, which stays
        target = target.copy_merge_params(params)
    client = httpx.AsyncClient(transport=policy.transport, timeout=timeout, follow_redirects=False)
    async with client:
        for _ in range(MAX_REDIRECTS + 1):
            address = await checked_address(target, policy)
            host = target.host
            pinned = target.copy_with(host=str(address))
            request = client.build_request(
                method, pinned, headers=headers, content=content, json=json
            )
            request.headers["Host"] = target.netloc.decode()
            if target.scheme == "https":
                request.extensions["sni_hostname"] = host
            response = await client.send(request, stream=True)
            try:
                if response.is_redirect and "location" in response.headers:
                    target = target.join(response.headers["location"])
                    if response.status_code in (301, 302, 303):
                        method, content, json = "GET", None, None
                    continue
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > policy.max_response_bytes:
                        raise InvalidParameter(
                            f"the response exceeds {policy.max_response_bytes} bytes"
                        )
                return httpx.Response(
                    response.status_code,
                    headers=response.headers,
                    content=bytes(body),
                    request=response.request,
                )
            finally:
                await response.aclose()
    raise InvalidParameter(f"more than {MAX_REDIRECTS} redirects")
