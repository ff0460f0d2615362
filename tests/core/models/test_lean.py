"""The lean HTTP/1.1 transport against a raw loopback server that answers canned bytes:
body framings, kept-alive connections, servers that close, timeouts. (Every model client
test runs it against the local model server too: it is the client's default transport.)"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from coze_lab.core.models.lean import LeanTransport

#: (request number, request) -> the answer; None: close unanswered; CLOSE + answer: close after
Answer = Callable[[int, bytes], bytes | None]
CLOSE = b"<close>"


@asynccontextmanager
async def raw_server(
    answer: Answer, tls: ssl.SSLContext | None = None
) -> AsyncIterator[tuple[str, list[int]]]:
    """A server that reads each request (head and Content-Length body) and writes
    ``answer(n, request)``, closing the connection on ``None``; yields its URL and the
    number of requests each connection carried."""
    served: list[int] = []
    count = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal count
        served.append(0)
        index = len(served) - 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = await reader.readexactly(length)
                served[index] += 1
                count += 1
                reply = answer(count, head + body)
                if reply is None:
                    break
                writer.write(reply.removeprefix(CLOSE))
                await writer.drain()
                if reply.startswith(CLOSE):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}", served
    finally:
        server.close()


def plain(body: bytes, *extra: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n" % len(body)
    return head + b"".join(h + b"\r\n" for h in extra) + b"\r\n" + body


CHUNKED = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n"
    b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Trailer: 1\r\n\r\n"
)


async def test_framings_and_a_kept_alive_connection() -> None:
    replies = [plain(b'{"a": 1}'), CHUNKED, plain(b"")]
    async with (
        raw_server(lambda n, _: replies[(n - 1) % 3]) as (url, served),
        httpx.AsyncClient(transport=LeanTransport()) as http,
    ):
        first = await http.post(url, json={"q": 1})
        assert first.status_code == 200 and first.json() == {"a": 1}
        async with http.stream("POST", url, content=b"x") as second:
            assert [p async for p in second.aiter_raw()] == [b"hello", b", world"]
        third = await http.get(f"{url}/path?x=1")
        assert third.status_code == 200 and third.content == b""
    assert served == [3]  # one connection carried all three


async def test_the_request_goes_out_as_httpx_built_it() -> None:
    seen: list[bytes] = []

    def answer(_: int, request: bytes) -> bytes:
        seen.append(request)
        return plain(b"ok")

    async with raw_server(answer) as (url, _), httpx.AsyncClient(transport=LeanTransport()) as http:
        await http.post(f"{url}/v1/chat?x=1", content=b"body!", headers={"X-Key": "v"})
    head, _, body = seen[0].partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /v1/chat?x=1 HTTP/1.1"
    assert b"x-key: v" in [line.lower() for line in lines]
    assert b"content-length: 5" in [line.lower() for line in lines]
    assert body == b"body!"


async def test_a_body_until_the_connection_closes_is_read_and_the_connection_not_kept() -> None:
    replies = {1: b"HTTP/1.1 200 OK\r\n\r\nto the end"}
    async with (
        raw_server(lambda n, _: replies.get(n, plain(b"next"))) as (url, served),
        httpx.AsyncClient(transport=LeanTransport()) as http,
    ):
        # the server keeps the connection open after a body without length; closing it
        # is ours (the first connection then ends: no second request on it)
        async with http.stream("GET", url) as response:
            first = b""
            async for piece in response.aiter_raw():
                first += piece
                if first == b"to the end":
                    break
        assert first == b"to the end"
        assert (await http.get(url)).content == b"next"
    assert served == [1, 1]


async def test_a_connection_closed_while_idle_or_as_the_request_arrives_is_replaced() -> None:
    # request 2 arrives on the kept-alive connection and is dropped unanswered; it is sent
    # again on a new connection, which answers it
    async with (
        raw_server(lambda n, _: None if n == 2 else plain(b"%d" % n)) as (url, served),
        httpx.AsyncClient(transport=LeanTransport()) as http,
    ):
        assert (await http.get(url)).content == b"1"
        assert (await http.get(url)).content == b"3"
    assert served == [2, 1]


async def test_a_new_connection_closed_unanswered_is_a_protocol_error() -> None:
    async with (
        raw_server(lambda n, _: None) as (url, _),
        httpx.AsyncClient(transport=LeanTransport()) as http,
    ):
        with pytest.raises(httpx.RemoteProtocolError):
            await http.get(url)


async def test_a_body_cut_short_is_a_protocol_error() -> None:
    cut = CLOSE + b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this"
    async with (
        raw_server(lambda n, _: cut) as (url, _),
        httpx.AsyncClient(transport=LeanTransport()) as http,
    ):
        with pytest.raises(httpx.RemoteProtocolError):
            await http.get(url)
        chunked_cut = CLOSE + CHUNKED[: CHUNKED.index(b"0\r\n")]
        async with raw_server(lambda n, _: chunked_cut) as (other, _):
            with pytest.raises(httpx.RemoteProtocolError):
                await http.get(other)


async def test_timeouts_and_refusals_are_httpx_errors() -> None:
    async with (
        raw_server(lambda n, _: b"HTTP/1.1 200 OK\r\n") as (url, _),
        httpx.AsyncClient(transport=LeanTransport(), timeout=0.2) as http,
    ):  # head never ends
        with pytest.raises(httpx.ReadTimeout):
            await http.get(url)
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    async with httpx.AsyncClient(transport=LeanTransport()) as http:
        with pytest.raises(httpx.ConnectError):
            await http.get(f"http://127.0.0.1:{port}")


async def test_an_http_1_0_answer_is_not_kept_unless_asked() -> None:
    replies = {
        1: b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
        2: b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok",
    }
    async with (
        raw_server(lambda n, _: replies.get(n, plain(b"ok"))) as (url, served),
        httpx.AsyncClient(transport=LeanTransport()) as http,
    ):
        for _ in range(3):
            assert (await http.get(url)).content == b"ok"
    assert served == [1, 2]


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by its own key: (certificate, key) files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


async def test_tls_checks_the_certificate_as_httpx_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert_file, key_file = self_signed(tmp_path)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert_file, key_file)
    async with raw_server(lambda n, _: plain(b"secret"), tls) as (url, served):
        async with httpx.AsyncClient(transport=LeanTransport()) as http:
            with pytest.raises(httpx.ConnectError):  # not trusted: not in the CA bundle
                await http.get(url)
        monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))  # trusted, as httpx reads it
        async with httpx.AsyncClient(transport=LeanTransport()) as http:
            assert (await http.get(url)).content == b"secret"
            assert (await http.get(url)).content == b"secret"
    assert served[-1] == 2
