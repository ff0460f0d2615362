"""``HubIdentity`` without a hub: environment detection and replica-safe OAuth state.

The real OAuth round trip and token checks run against a real hub in tests/hub.
"""

from __future__ import annotations

from coze_lab.web.hub import HubIdentity

ENV = {
    "JUPYTERHUB_API_TOKEN": "service-secret",
    "JUPYTERHUB_API_URL": "http://127.0.0.1:8081/hub/api",
    "JUPYTERHUB_SERVICE_PREFIX": "/services/coze-lab/",
    "JUPYTERHUB_SERVICE_NAME": "coze-lab",
    "JUPYTERHUB_CLIENT_ID": "service-coze-lab",
}


def test_only_a_hub_service_environment_turns_hub_identity_on() -> None:
    assert HubIdentity.from_environ({}) is None
    assert HubIdentity.from_environ({"JUPYTERHUB_API_TOKEN": "x"}) is None
    hub = HubIdentity.from_environ(ENV, cache_s=7)
    assert hub is not None
    assert hub.callback_path == "/services/coze-lab/oauth_callback"
    assert hub.auth.access_scopes == {"access:services!service=coze-lab"}
    assert hub.auth.cache_max_age == 7


def test_a_login_started_on_one_replica_finishes_on_another() -> None:
    """The OAuth state (next URL, PKCE verifier) travels encrypted in the state value."""
    a, b = HubIdentity(ENV), HubIdentity(ENV)
    state = a.auth.generate_state("/services/coze-lab/coze_lab/api/me", code_verifier="v" * 43)
    assert b.auth.get_next_url(state) == "/services/coze-lab/coze_lab/api/me"
    assert b.auth.get_code_verifier(state) == "v" * 43
    assert a.cookie_secret == b.cookie_secret
    # another service (another token) can neither read nor forge it
    other = HubIdentity({**ENV, "JUPYTERHUB_API_TOKEN": "another-secret"})
    assert other.auth.get_code_verifier(state) is None
    assert other.auth.get_next_url(state) == "/services/coze-lab/"
    assert other.cookie_secret != a.cookie_secret
