"""``coze-lab hub-config``: lines that JupyterHub's config loader accepts, with what the
service and the single-user servers need."""

from __future__ import annotations

import sys

import httpx
from traitlets.config import Config

from coze_lab.server import base_url_from
from tests.support import ServerProcess, run_cli


def load(text: str) -> Config:
    """Execute the lines as jupyterhub_config.py would be (``c`` is a traitlets Config)."""
    config = Config()
    exec(compile(text, "jupyterhub_config.py", "exec"), {"c": config})
    return config


def test_hub_config_prints_the_service_roles_and_spawner_environment(tmp_path) -> None:
    url = "postgresql+psycopg://coze:secret@db.example:5432/coze"
    env = {"COZE_LAB_SECRET_KEY": "shared-key", "OPENAI_BASE_URL": "http://models:8000/v1"}
    result = run_cli(
        "--database-url",
        url,
        "--data-dir",
        str(tmp_path / "shared"),
        "hub-config",
        "--hub-url",
        "http://hub.example:8000",
        "--service-port",
        "9001",
        env=env,
    )
    assert result.returncode == 0, result.stderr
    c = load(result.stdout)
    (service,) = c.JupyterHub.services.get_value([])
    assert service["name"] == "coze-lab" and service["url"] == "http://127.0.0.1:9001"
    assert service["command"][:4] == [sys.executable, "-m", "coze_lab.cli", "serve"]
    assert service["environment"]["COZE_LAB_DATABASE_URL"] == url
    assert service["environment"]["COZE_LAB_SECRET_KEY"] == "shared-key"
    assert service["environment"]["OPENAI_BASE_URL"] == "http://models:8000/v1"
    assert service["oauth_no_confirm"] is True
    scope = "access:services!service=coze-lab"
    assert c.JupyterHub.extra_user_scopes.get_value(set()) == {scope}
    (role,) = c.JupyterHub.load_roles.get_value([])
    assert role["name"] == "server" and scope in role["scopes"]
    spawner = c.Spawner.environment.get_value({})
    assert spawner["COZE_LAB_SERVICE_URL"] == "http://hub.example:8000/services/coze-lab/"
    assert spawner["COZE_LAB_DATABASE_URL"] == url
    assert spawner["COZE_LAB_DATA_DIR"] == str(tmp_path / "shared")
    assert spawner["COZE_LAB_SECRET_KEY"] == "shared-key"


def test_hub_config_generates_a_key_and_warns_about_sqlite(tmp_path) -> None:
    result = run_cli("--data-dir", str(tmp_path), "hub-config", env={"COZE_LAB_SECRET_KEY": ""})
    assert result.returncode == 0 and "SQLite" in result.stderr
    c = load(result.stdout)
    key = c.Spawner.environment.get_value({})["COZE_LAB_SECRET_KEY"]
    assert len(key) == 44 and "keep it" in result.stdout
    assert c.JupyterHub.services.get_value([])[0]["environment"]["COZE_LAB_SECRET_KEY"] == key


def test_base_url_comes_from_the_flag_or_the_hub_prefix() -> None:
    assert base_url_from({}) == "/"
    assert base_url_from({"JUPYTERHUB_SERVICE_PREFIX": "/services/coze-lab/"}) == (
        "/services/coze-lab/"
    )
    assert base_url_from({"JUPYTERHUB_SERVICE_PREFIX": "/x/"}, "/y") == "/y/"


def test_serve_mounts_every_route_under_the_service_prefix(tmp_path) -> None:
    """Without a hub token the prefix alone changes nothing but the paths."""
    server = ServerProcess(
        tmp_path / "data",
        f"sqlite:///{tmp_path / 'db.sqlite'}",
        env={"JUPYTERHUB_SERVICE_PREFIX": "/services/coze-lab/"},
    ).start()
    try:
        assert server.url.endswith("/services/coze-lab")
        root = server.url.rsplit("/services/", 1)[0]
        assert httpx.get(server.url + "/healthz").json() == {"ok": True}
        assert httpx.get(server.url + "/coze_lab/sdk/chat").status_code == 200
        assert httpx.get(server.url + "/openapi.json").json()["openapi"].startswith("3.")
        denied = httpx.get(server.url + "/v1/workspaces")
        assert denied.status_code == 401 and denied.json()["code"] == 4100
        assert httpx.get(root + "/healthz").status_code == 404  # nothing outside the prefix
    finally:
        server.stop()
