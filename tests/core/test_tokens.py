from __future__ import annotations

import asyncio
import hmac
import tempfile
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, update

from coze_lab.config import CozeLab
from coze_lab.core import tokens as pat_module
from coze_lab.core.errors import (
    InvalidParameter,
    NotFound,
    PermissionDenied,
    Unauthenticated,
)
from coze_lab.services import Runtime
from coze_lab.store.models import PersonalAccessToken
from tests.support import FakeClock, pg_schema


def test_created_token_authenticates_its_owner(runtime: Runtime) -> None:
    alice = runtime.identity.ensure_user("alice")
    info, secret = runtime.tokens.create(alice.id, "ci", expires_in_days=30)
    assert secret.startswith("pat_") and len(secret) == 47
    assert info.hint == "pat_…" + secret[-4:]
    principal = runtime.tokens.authenticate(secret)
    assert principal.user_id == alice.id and principal.token_id == info.id
    assert principal.scopes is None and principal.connector_id is None


def test_only_the_hash_is_stored(runtime: Runtime) -> None:
    alice = runtime.identity.ensure_user("alice")
    _, secret = runtime.tokens.create(alice.id, "ci")
    with runtime.db.transaction() as session:
        row = session.scalars(select(PersonalAccessToken)).one()
        values = [str(getattr(row, c.key)) for c in PersonalAccessToken.__table__.columns]
    assert row.token_hash == pat_module.hash_token(secret)
    assert not any(secret in v or secret[4:] in v for v in values)
    if runtime.db.dialect == "sqlite":
        raw = b"".join(p.read_bytes() for p in runtime.config.data_path.parent.rglob("*.db*"))
        assert secret[4:].encode() not in raw


def test_secrets_are_random(runtime: Runtime) -> None:
    alice = runtime.identity.ensure_user("alice")
    secrets_seen = {runtime.tokens.create(alice.id, f"t{i}")[1] for i in range(20)}
    assert len(secrets_seen) == 20


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (None, "missing"),
        ("", "missing"),
        ("abc", "malformed"),
        ("pat_short", "malformed"),
        ("pat_" + "A" * 43, "unknown"),
    ],
)
def test_bad_tokens_are_unauthenticated(runtime: Runtime, raw: str | None, message: str) -> None:
    with pytest.raises(Unauthenticated, match=message):
        runtime.tokens.authenticate(raw)


def test_expiry_is_checked_on_every_request(runtime: Runtime, clock: FakeClock) -> None:
    alice = runtime.identity.ensure_user("alice")
    _, secret = runtime.tokens.create(alice.id, "short", expires_in_days=1)
    clock.advance(timedelta(hours=23, minutes=59))
    assert runtime.tokens.authenticate(secret).user_id == alice.id
    clock.advance(timedelta(minutes=1))
    with pytest.raises(Unauthenticated, match="expired"):
        runtime.tokens.authenticate(secret)
    assert runtime.tokens.list(alice.id)[0].status(clock()) == "expired"


def test_custom_expiry_moment(runtime: Runtime, clock: FakeClock) -> None:
    alice = runtime.identity.ensure_user("alice")
    info, secret = runtime.tokens.create(alice.id, "x", expires_at=clock() + timedelta(hours=2))
    assert info.expires_at == clock() + timedelta(hours=2)
    clock.advance(timedelta(hours=3))
    with pytest.raises(Unauthenticated):
        runtime.tokens.authenticate(secret)


def test_revoked_token_is_refused_and_revoke_is_owner_scoped(runtime: Runtime) -> None:
    alice = runtime.identity.ensure_user("alice")
    bob = runtime.identity.ensure_user("bob")
    info, secret = runtime.tokens.create(alice.id, "ci")
    with pytest.raises(NotFound):
        runtime.tokens.revoke(bob.id, info.id)
    assert runtime.tokens.authenticate(secret).user_id == alice.id
    revoked = runtime.tokens.revoke(alice.id, info.id)
    assert revoked.revoked_at is not None
    assert runtime.tokens.revoke(alice.id, info.id).revoked_at == revoked.revoked_at
    with pytest.raises(Unauthenticated, match="revoked"):
        runtime.tokens.authenticate(secret)


def test_list_is_owner_scoped(runtime: Runtime) -> None:
    alice = runtime.identity.ensure_user("alice")
    bob = runtime.identity.ensure_user("bob")
    runtime.tokens.create(alice.id, "a1")
    runtime.tokens.create(alice.id, "a2")
    runtime.tokens.create(bob.id, "b1")
    assert [t.name for t in runtime.tokens.list(alice.id)] == ["a2", "a1"]
    assert [t.name for t in runtime.tokens.list(bob.id)] == ["b1"]


def test_scopes_and_connector_binding(runtime: Runtime) -> None:
    alice = runtime.identity.ensure_user("alice")
    _, secret = runtime.tokens.create(
        alice.id, "chat only", scopes=["chat", "chat"], connector_id="999"
    )
    principal = runtime.tokens.authenticate(secret)
    assert principal.scopes == frozenset({"chat"}) and principal.connector_id == "999"
    principal.require_scope("chat")
    with pytest.raises(PermissionDenied):
        principal.require_scope("files")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"name": ""},
        {"name": "x" * 101},
        {"name": "ok", "expires_in_days": 0},
        {"name": "ok", "expires_in_days": 3651},
        {"name": "ok", "expires_in_days": True},
        {"name": "ok", "scopes": []},
        {"name": "ok", "scopes": ["admin"]},
        {"name": "ok", "scopes": "chat"},
        {"name": "ok", "connector_id": "1"},
    ],
)
def test_invalid_creation_writes_nothing(runtime: Runtime, kwargs: dict) -> None:
    alice = runtime.identity.ensure_user("alice")
    kwargs = dict(kwargs)
    name = kwargs.pop("name")
    with pytest.raises(InvalidParameter):
        runtime.tokens.create(alice.id, name, **kwargs)
    assert runtime.tokens.list(alice.id) == []


def test_last_used_is_recorded_at_a_coarse_resolution(runtime: Runtime, clock: FakeClock) -> None:
    alice = runtime.identity.ensure_user("alice")
    info, secret = runtime.tokens.create(alice.id, "ci")
    assert info.last_used_at is None
    runtime.tokens.authenticate(secret)
    first = runtime.tokens.list(alice.id)[0].last_used_at
    assert first == clock()
    clock.advance(timedelta(seconds=30))
    runtime.tokens.authenticate(secret)
    assert runtime.tokens.list(alice.id)[0].last_used_at == first
    clock.advance(timedelta(seconds=31))
    runtime.tokens.authenticate(secret)
    assert runtime.tokens.list(alice.id)[0].last_used_at == clock()


def test_lookup_compares_in_constant_time(runtime: Runtime, monkeypatch) -> None:
    """The stored hash is compared with hmac.compare_digest, never with ==."""
    alice = runtime.identity.ensure_user("alice")
    _, secret = runtime.tokens.create(alice.id, "ci")
    calls: list[tuple[str, str]] = []
    original = hmac.compare_digest

    def spy(a: str, b: str) -> bool:
        calls.append((a, b))
        return original(a, b)

    monkeypatch.setattr(pat_module.hmac, "compare_digest", spy)
    runtime.tokens.authenticate(secret)
    assert calls == [(pat_module.hash_token(secret), pat_module.hash_token(secret))]


# ---- the per-replica cache (PostgreSQL: revokes reach every replica with a NOTIFY) --------
def _revoke_behind_its_back(runtime: Runtime, token_id: int) -> None:
    """Mark the token revoked with SQL, as nothing in coze_lab does: no NOTIFY is sent."""
    table = PersonalAccessToken.__table__
    with runtime.db.write() as connection:
        connection.execute(
            update(table).where(table.c.id == token_id).values(revoked_at=func.now())
        )


def _on_postgresql(clock: FakeClock, go: Callable[[Runtime], Awaitable[None]]) -> None:
    """``go(runtime)`` in an event loop where the runtime's listener listens."""
    from tests.conftest import PG_URL

    async def listening(runtime: Runtime) -> None:
        runtime.signals.start()
        await runtime.signals.ready()
        try:
            await go(runtime)
        finally:
            await runtime.signals.close()

    with pg_schema(PG_URL, "tok_") as url, tempfile.TemporaryDirectory() as data:
        runtime = Runtime(CozeLab(data_dir=data, database_url=url), clock=clock)
        runtime.start()
        try:
            asyncio.run(listening(runtime))
        finally:
            runtime.db.dispose()


@pytest.mark.postgresql
def test_a_cached_token_is_still_checked_for_expiry_on_every_request(clock: FakeClock) -> None:
    async def go(runtime: Runtime) -> None:
        alice = runtime.identity.ensure_user("alice")
        info, secret = runtime.tokens.create(
            alice.id, "short", expires_at=clock() + timedelta(seconds=30)
        )
        assert runtime.tokens.authenticate(secret).token_id == info.id
        # served from the cache: a change made behind its back (no NOTIFY) is not read
        _revoke_behind_its_back(runtime, info.id)
        assert len(runtime.tokens.cache) == 1
        principal = await runtime.tokens.authenticate_async(secret, runtime.offload)
        assert principal.token_id == info.id
        clock.advance(timedelta(seconds=29))
        assert runtime.tokens.authenticate(secret).token_id == info.id
        clock.advance(timedelta(seconds=1))  # the cached row says it expires now
        with pytest.raises(Unauthenticated, match="expired"):
            await runtime.tokens.authenticate_async(secret, runtime.offload)
        with pytest.raises(Unauthenticated, match="expired"):
            runtime.tokens.authenticate(secret)

    _on_postgresql(clock, go)


@pytest.mark.postgresql
def test_a_token_in_use_is_read_again_when_its_last_use_is_written(clock: FakeClock) -> None:
    """What bounds a lost NOTIFY: a cached token is checked against its row again within
    LAST_USED_RESOLUTION of use."""

    async def go(runtime: Runtime) -> None:
        alice = runtime.identity.ensure_user("alice")
        info, secret = runtime.tokens.create(alice.id, "ci")
        runtime.tokens.authenticate(secret)
        _revoke_behind_its_back(runtime, info.id)
        clock.advance(pat_module.LAST_USED_RESOLUTION - timedelta(seconds=1))
        assert runtime.tokens.authenticate(secret).token_id == info.id
        clock.advance(timedelta(seconds=1))
        with pytest.raises(Unauthenticated, match="revoked"):
            await runtime.tokens.authenticate_async(secret, runtime.offload)

    _on_postgresql(clock, go)


@pytest.mark.postgresql
def test_a_revoke_sent_by_another_replica_empties_the_cache(clock: FakeClock) -> None:
    """The revoke of another process (here the CLI's runtime, without a listener) reaches
    this one's listener with the commit."""

    async def go(runtime: Runtime) -> None:
        alice = runtime.identity.ensure_user("alice")
        info, secret = runtime.tokens.create(alice.id, "ci")
        runtime.tokens.authenticate(secret)
        other = Runtime(runtime.config, clock=clock)  # another replica: its own connections
        try:
            with runtime.signals.waiting(f"token:{info.id}") as arrived:
                await asyncio.to_thread(other.tokens.revoke, alice.id, info.id)
                await asyncio.wait_for(arrived.wait(), 10)
        finally:
            other.db.dispose()
        assert len(runtime.tokens.cache) == 0
        with pytest.raises(Unauthenticated, match="revoked"):
            await runtime.tokens.authenticate_async(secret, runtime.offload)

    _on_postgresql(clock, go)


@pytest.mark.postgresql
def test_a_listener_that_reconnects_empties_the_cache_and_skips_it_meanwhile(
    clock: FakeClock,
) -> None:
    """NOTIFYs sent while the listener was down are lost: nothing cached before is trusted."""

    async def go(runtime: Runtime) -> None:
        alice = runtime.identity.ensure_user("alice")
        info, secret = runtime.tokens.create(alice.id, "ci")
        runtime.tokens.authenticate(secret)
        assert len(runtime.tokens.cache) == 1
        signals, pid = runtime.signals, runtime.signals.listener_pid
        with runtime.db.write() as connection:
            connection.execute(select(func.pg_terminate_backend(pid)))
        while signals.listening:
            await asyncio.sleep(0.01)
        # down: a revoke sent now would be lost, so the cache is not used
        _revoke_behind_its_back(runtime, info.id)
        with pytest.raises(Unauthenticated, match="revoked"):
            runtime.tokens.authenticate(secret)
        await signals.ready()
        assert signals.listener_pid != pid
        assert len(runtime.tokens.cache) == 0

    _on_postgresql(clock, go)


def test_nothing_is_cached_without_a_channel_between_processes(runtime: Runtime) -> None:
    """SQLite (which a Jupyter server and ``coze-lab serve`` may share) and MariaDB have no
    NOTIFY: a revoke in another process must count at once, so every check reads the row.
    On PostgreSQL the cache waits for a listener, which a runtime that serves nothing has
    not."""
    alice = runtime.identity.ensure_user("alice")
    info, secret = runtime.tokens.create(alice.id, "ci")
    runtime.tokens.authenticate(secret)
    assert len(runtime.tokens.cache) == 0
    _revoke_behind_its_back(runtime, info.id)
    with pytest.raises(Unauthenticated, match="revoked"):
        runtime.tokens.authenticate(secret)


def _checked(token_id: int) -> Any:
    principal = pat_module.Principal(user_id=1, token_id=token_id, scopes=None, connector_id=None)
    return pat_module._Checked(principal, None, FakeClock()())


def test_the_cache_is_bounded_and_drops_the_least_recently_used() -> None:
    cache = pat_module.TokenCache(lambda: True, size=2)
    for n in (1, 2):
        cache.put(f"h{n}", _checked(n), cache.generation)
    assert cache.get("h1") is not None  # h2 is now the least recently used
    cache.put("h3", _checked(3), cache.generation)
    assert len(cache) == 2 and cache.get("h2") is None
    assert cache.get("h1") is not None and cache.get("h3") is not None


def test_a_row_read_before_a_revoke_is_not_cached_after_it() -> None:
    """A check that read the row, then a revoke (dropped from the cache), then the check
    storing what it read: the stale row must not come back."""
    cache = pat_module.TokenCache(lambda: True)
    generation = cache.generation  # the check begins its read
    cache.drop(7)  # the revoke arrives meanwhile
    cache.put("h7", _checked(7), generation)
    assert cache.get("h7") is None and len(cache) == 0
    cache.put("h7", _checked(7), cache.generation)
    cache.clear()
    assert cache.get("h7") is None


def test_an_inactive_cache_is_neither_read_nor_filled() -> None:
    active = [True]
    cache = pat_module.TokenCache(lambda: active[0])
    cache.put("h1", _checked(1), cache.generation)
    active[0] = False
    assert cache.get("h1") is None
    cache.put("h2", _checked(2), cache.generation)
    active[0] = True
    assert cache.get("h2") is None and cache.get("h1") is not None


def test_on_an_sqlite_file_the_check_reads_on_its_own_connection_and_sees_other_processes(
    tmp_path: Any, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check's read runs on the token service's own connection (no pooled read), and a
    revoke committed through another database handle on the same file (another process, as
    the Jupyter extension beside ``coze-lab serve``) counts at the next check."""
    from coze_lab.store import Database, sqlite_url

    url = sqlite_url(tmp_path / "shared.db")
    runtime = Runtime(CozeLab(data_dir=str(tmp_path / "data"), database_url=url), clock=clock)
    runtime.start()
    other = Database(url)
    try:
        alice = runtime.identity.ensure_user("alice")
        info, secret = runtime.tokens.create(alice.id, "ci", expires_in_days=1)

        def no_pooled_read() -> Any:
            raise AssertionError("a pooled read")

        runtime.tokens.authenticate(secret)  # writes last_used_at: a pooled write
        monkeypatch.setattr(runtime.db, "read", no_pooled_read)
        assert runtime.tokens.authenticate(secret).token_id == info.id
        table = PersonalAccessToken.__table__
        with other.write() as connection:
            connection.execute(
                update(table).where(table.c.id == info.id).values(revoked_at=clock())
            )
        with pytest.raises(Unauthenticated, match="revoked"):
            runtime.tokens.authenticate(secret)
    finally:
        other.dispose()
        runtime.tokens.close()
        runtime.db.dispose()


def test_a_failing_sqlite_reader_is_answered_by_a_pooled_read(
    tmp_path: Any, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coze_lab.store import sqlite_url

    url = sqlite_url(tmp_path / "db.sqlite")
    runtime = Runtime(CozeLab(data_dir=str(tmp_path / "data"), database_url=url), clock=clock)
    runtime.start()
    try:
        reader = runtime.tokens._reader
        assert reader is not None
        alice = runtime.identity.ensure_user("alice")
        info, secret = runtime.tokens.create(alice.id, "ci")

        def broken(*_: Any) -> Any:
            raise OSError("disk I/O error")

        monkeypatch.setattr(reader, "_open", broken)
        assert runtime.tokens.authenticate(secret).token_id == info.id
    finally:
        runtime.tokens.close()
        runtime.db.dispose()
