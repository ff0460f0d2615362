"""The plugin manifest: names and descriptions for the model and people, auth, common params.

Auth (``manifest["auth"]``), Coze's AuthV2 in a flatter spelling:

- ``{"type": "none"}``
- ``{"type": "service_token", "location": "header" | "query", "key": "Authorization",
  "template": "Bearer {{api_key}}"}`` (or Coze's ``authorization_content`` map); the
  ``{{...}}`` variables are the user's credentials.
- ``{"type": "oauth", "grant_type": "authorization_code" | "client_credentials",
  "authorization_url", "token_url", "client_id", "client_secret", "scope", "pkce": true,
  "token_auth": "client_secret_post" | "client_secret_basic"}``. The client secret is kept
  apart from the manifest, encrypted, and never shown again.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from coze_lab.core.plugins.problems import Problem

AUTH_TYPES = ("none", "service_token", "oauth")
GRANTS = ("authorization_code", "client_credentials")
LOCATIONS = ("header", "query", "path", "cookie", "body")
_MODEL_NAME = re.compile(r"^[A-Za-z0-9_]{1,64}$")
_VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


@dataclass(frozen=True)
class AuthConfig:
    type: str = "none"
    location: str = "header"
    #: header or query parameter name → template (service_token)
    parameters: dict[str, str] = field(default_factory=dict)
    grant_type: str = "authorization_code"
    authorization_url: str = ""
    token_url: str = ""
    client_id: str = ""
    scope: str = ""
    pkce: bool = True
    token_auth: str = "client_secret_post"

    def variables(self) -> list[str]:
        """The credential names a user provides (``api_key`` for ``Bearer {{api_key}}``)."""
        names: list[str] = []
        for template in self.parameters.values():
            names += _VARIABLE.findall(template)
        return list(dict.fromkeys(names))


@dataclass(frozen=True)
class Manifest:
    name_for_model: str
    name_for_human: str
    description_for_model: str
    description_for_human: str
    auth: AuthConfig = field(default_factory=AuthConfig)
    #: location → [{"name", "value"}] added to every request (header, query)
    common_params: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    logo_url: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Manifest:
        return cls(**{**data, "auth": AuthConfig(**data.get("auth", {}))})


def render_template(template: str, values: dict[str, str]) -> str:
    """``Bearer {{api_key}}`` with the user's values.

    Example:
        >>> render_template("Bearer {{ api_key }}", {"api_key": "k"})
        'Bearer k'
    """
    return _VARIABLE.sub(lambda m: str(values.get(m.group(1), "")), template)


def parse_manifest(
    raw: Any, doc: dict[str, Any]
) -> tuple[Manifest | None, dict[str, str], list[Problem]]:
    """The manifest, the secrets taken out of it (``client_secret``) and every problem."""
    problems: list[Problem] = []
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        return None, {}, [Problem("/manifest", "must be an object")]
    info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
    title = str(info.get("title") or "plugin")
    description = str(info.get("description") or title)

    def text(key: str, default: str, limit: int) -> str:
        value = raw.get(key, default)
        if not isinstance(value, str) or not value.strip():
            problems.append(Problem(f"/manifest/{key}", "must be a non-empty string"))
            return default
        if len(value) > limit:
            problems.append(Problem(f"/manifest/{key}", f"longer than {limit} characters"))
        return value.strip()

    model_name = text("name_for_model", re.sub(r"\W+", "_", title).strip("_")[:64] or "plugin", 64)
    if not _MODEL_NAME.fullmatch(model_name):
        problems.append(
            Problem("/manifest/name_for_model", "letters, digits and _ only, at most 64")
        )
    auth, secrets = _auth(raw.get("auth"), problems)
    manifest = Manifest(
        name_for_model=model_name,
        name_for_human=text("name_for_human", title, 255),
        description_for_model=text("description_for_model", description, 2000),
        description_for_human=text("description_for_human", description, 2000),
        auth=auth,
        common_params=_common_params(raw.get("common_params"), problems),
        logo_url=str(raw.get("logo_url") or ""),
    )
    return manifest, secrets, problems


def _auth(raw: Any, problems: list[Problem]) -> tuple[AuthConfig, dict[str, str]]:
    where = "/manifest/auth"
    if raw is None:
        return AuthConfig(), {}
    if not isinstance(raw, dict):
        problems.append(Problem(where, "must be an object"))
        return AuthConfig(), {}
    kind = raw.get("type", "none")
    if kind not in AUTH_TYPES:
        problems.append(Problem(f"{where}/type", f"must be one of {list(AUTH_TYPES)}"))
        return AuthConfig(), {}
    if kind == "none":
        return AuthConfig(), {}
    if kind == "service_token":
        location = raw.get("location", raw.get("credential_location", "header"))
        if location not in ("header", "query"):
            problems.append(Problem(f"{where}/location", "must be header or query"))
        content = raw.get("authorization_content")
        if content is None:
            key = raw.get("key", "Authorization" if location == "header" else "api_key")
            template = raw.get("template", "Bearer {{api_key}}" if location == "header" else "")
            content = {key: template or "{{api_key}}"}
        if (
            not isinstance(content, dict)
            or not content
            or not all(isinstance(k, str) and k and isinstance(v, str) for k, v in content.items())
        ):
            problems.append(Problem(f"{where}/authorization_content", "must map names to text"))
            content = {}
        config = AuthConfig(type=kind, location=str(location), parameters=dict(content))
        if content and not config.variables():
            problems.append(
                Problem(where, "the token template needs a {{variable}} for the credential")
            )
        return config, {}
    grant = raw.get("grant_type", "authorization_code")
    if grant not in GRANTS:
        problems.append(Problem(f"{where}/grant_type", f"must be one of {list(GRANTS)}"))
    needed = ["token_url", "client_id"] + (
        ["authorization_url"] if grant == "authorization_code" else []
    )
    for key in needed:
        value = raw.get(key)
        if not isinstance(value, str) or not value.strip():
            problems.append(Problem(f"{where}/{key}", "is required for OAuth"))
        elif key.endswith("_url") and not re.match(r"^https?://", value):
            problems.append(Problem(f"{where}/{key}", "must be an http(s) URL"))
    token_auth = raw.get("token_auth", "client_secret_post")
    if token_auth not in ("client_secret_post", "client_secret_basic"):
        problems.append(
            Problem(f"{where}/token_auth", "must be client_secret_post or client_secret_basic")
        )
    secret = raw.get("client_secret")
    if secret is not None and not isinstance(secret, str):
        problems.append(Problem(f"{where}/client_secret", "must be a string"))
    config = AuthConfig(
        type="oauth",
        grant_type=str(grant),
        authorization_url=str(raw.get("authorization_url") or ""),
        token_url=str(raw.get("token_url") or ""),
        client_id=str(raw.get("client_id") or ""),
        scope=str(raw.get("scope") or ""),
        pkce=bool(raw.get("pkce", True)),
        token_auth=str(token_auth),
    )
    return config, ({"client_secret": secret} if isinstance(secret, str) and secret else {})


def _common_params(raw: Any, problems: list[Problem]) -> dict[str, list[dict[str, str]]]:
    where = "/manifest/common_params"
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append(Problem(where, "must be an object of location → [{name, value}]"))
        return {}
    out: dict[str, list[dict[str, str]]] = {}
    for location, items in raw.items():
        if location not in ("header", "query"):
            problems.append(Problem(f"{where}/{location}", "only header and query are supported"))
            continue
        if not isinstance(items, list):
            problems.append(Problem(f"{where}/{location}", "must be a list"))
            continue
        out[location] = []
        for i, item in enumerate(items):
            if (
                not isinstance(item, dict)
                or not isinstance(item.get("name"), str)
                or not item["name"]
            ):
                problems.append(Problem(f"{where}/{location}/{i}", "needs a name and a value"))
                continue
            out[location].append({"name": item["name"], "value": str(item.get("value", ""))})
    return out
