from __future__ import annotations

import hmac
from datetime import timedelta

import pytest
from sqlalchemy import select

from coze_lab.core import tokens as pat_module
from coze_lab.core.errors import (
    InvalidParameter,
    NotFound,
    PermissionDenied,
    Unauthenticated,
)
from coze_lab.services import Runtime
from coze_lab.store.models import PersonalAccessToken
from tests.support import FakeClock


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
