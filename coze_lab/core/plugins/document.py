"""OpenAPI 3.0/3.1 documents → tools: parse, validate, resolve ``$ref``, one tool per operation.

A tool's arguments are the operation's parameters (path, query, header, cookie) and the
properties of its JSON or form body, side by side in one JSON schema the model sees;
``bindings`` remembers where each argument goes in the HTTP request.
"""

from __future__ import annotations

import copy
import json
import os
import re
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urljoin

import yaml

from coze_lab.core.plugins.problems import PluginSpecError, Problem, pointer

METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
JSON_TYPES = ("application/json",)
FORM_TYPE = "application/x-www-form-urlencoded"
_NAME = re.compile(r"[^A-Za-z0-9_-]+")
#: OpenAPI keywords that are not JSON Schema (or mean nothing to a model)
_DROP = ("example", "xml", "externalDocs", "discriminator", "deprecated", "nullable", "examples")


@dataclass(frozen=True)
class ToolSpec:
    """One operation as a tool: the model's schema plus how to build the request."""

    name: str
    description: str
    method: str
    path: str
    parameters: dict[str, Any]
    #: argument → {"in": path|query|header|cookie|body, "name": wire name}
    bindings: dict[str, dict[str, str]]
    #: {"content_type": ..., "whole": bool} when the operation has a body
    body: dict[str, Any] | None = None
    #: status ("200", "2XX", "default") → JSON schema of the JSON response
    responses: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolSpec:
        return cls(**data)


def load_document(source: str | bytes | dict[str, Any]) -> dict[str, Any]:
    """A document from JSON or YAML text (or a dict); PluginSpecError when it is neither.

    Example:
        >>> load_document("openapi: 3.1.0")["openapi"]
        '3.1.0'
    """
    if isinstance(source, dict):
        return copy.deepcopy(source)
    text = source.decode("utf-8", "replace") if isinstance(source, bytes) else source
    try:
        doc = json.loads(text) if text.lstrip().startswith("{") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise PluginSpecError([Problem("", f"not valid JSON or YAML: {exc}")]) from exc
    if not isinstance(doc, dict):
        raise PluginSpecError([Problem("", "the document must be an object")])
    return doc


def validate_document(doc: dict[str, Any]) -> list[Problem]:
    """Every problem ``openapi-spec-validator`` finds, located by JSON pointer."""
    # one validator whatever else is installed: with jsonschema-rs present (schemathesis
    # brings it) openapi-spec-validator would switch to it, and word its problems otherwise
    os.environ.setdefault("OPENAPI_SPEC_VALIDATOR_SCHEMA_VALIDATOR_BACKEND", "jsonschema")
    from openapi_spec_validator import OpenAPIV30SpecValidator, OpenAPIV31SpecValidator

    version = doc.get("openapi")
    if not isinstance(version, str) or not re.match(r"^3\.[01]\.\d+", version):
        return [Problem("/openapi", f"must be an OpenAPI 3.0 or 3.1 version, not {version!r}")]
    validator = (OpenAPIV30SpecValidator if version.startswith("3.0") else OpenAPIV31SpecValidator)(
        doc
    )
    problems: list[Problem] = []
    try:
        for error in validator.iter_errors():
            problems.append(Problem(_error_pointer(error), _error_message(error)))
    except Exception as exc:  # the validator gives up on some broken documents
        problems.append(Problem("", f"{type(exc).__name__}: {exc}"))
    return list(dict.fromkeys(problems))


def _error_pointer(error: Any) -> str:
    path = getattr(error, "absolute_path", None)
    if path:
        return pointer(*path)
    match = re.search(r"for '(\w+)'(?: operation)? in '([^']+)'", str(error))
    return pointer("paths", match.group(2), match.group(1)) if match else ""


def _error_message(error: Any) -> str:
    message = getattr(error, "message", None) or str(error)
    return message if len(message) <= 300 else message[:297] + "..."


def server_url(doc: dict[str, Any], base_url: str | None = None) -> str | None:
    """The first server's URL with its variables' defaults, resolved against ``base_url``."""
    servers = doc.get("servers") or []
    if not servers or not isinstance(servers[0], dict) or not servers[0].get("url"):
        return base_url
    url = str(servers[0]["url"])
    for name, variable in (servers[0].get("variables") or {}).items():
        url = url.replace("{" + name + "}", str(variable.get("default", "")))
    return urljoin(base_url, url) if base_url else url


def tool_name(operation: dict[str, Any], method: str, path: str) -> str:
    """``operationId`` sanitised for function calling (``[A-Za-z0-9_-]{1,64}``).

    Example:
        >>> tool_name({}, "get", "/pets/{id}")
        'get_pets_id'
    """
    raw = operation.get("operationId") or f"{method}_{path}"
    name = _NAME.sub("_", str(raw)).strip("_") or method
    return re.sub("_{2,}", "_", name)[:64]


#: the deepest schema a tool may have once every ``$ref`` is expanded
MAX_SCHEMA_DEPTH = 64


class ExpansionLimit(Exception):
    """Expanding the references went past a limit (a ``$ref`` fan-out grows exponentially)."""


class _Resolver:
    """Local ``$ref`` resolution; cycles become an empty schema, the rest a Problem.

    Every value produced counts against ``max_nodes`` and the nesting against
    ``MAX_SCHEMA_DEPTH``: a small document whose references fan out cannot expand into
    gigabytes; ExpansionLimit stops it at the first value past a limit.
    """

    def __init__(
        self, doc: dict[str, Any], problems: list[Problem], max_nodes: int | None = None
    ) -> None:
        self.doc = doc
        self.problems = problems
        self.max_nodes = max_nodes
        self.left = max_nodes if max_nodes is not None else -1

    def target(self, ref: str, where: Where) -> Any:
        if not ref.startswith("#/"):
            self.problems.append(
                Problem(_pointer(where), f"only local references are allowed: {ref}")
            )
            return None
        node: Any = self.doc
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                self.problems.append(Problem(_pointer(where), f"unresolvable reference {ref}"))
                return None
        return node

    def resolve(self, value: Any, where: Where, seen: tuple[str, ...] = (), depth: int = 0) -> Any:
        """``value`` with every ``$ref`` replaced by its target; ``where`` is the
        location as a linked list of keys, turned into a pointer only for a problem."""
        if self.left == 0:
            raise ExpansionLimit(
                f"expanding $ref makes more than {self.max_nodes} schema values "
                "(setting: plugin_max_schema_nodes)"
            )
        self.left -= 1
        if isinstance(value, list):
            return [self.resolve(v, (where, i), seen, depth + 1) for i, v in enumerate(value)]
        if not isinstance(value, dict):
            return value
        if depth > MAX_SCHEMA_DEPTH:
            raise ExpansionLimit(f"expanding $ref nests deeper than {MAX_SCHEMA_DEPTH} levels")
        if isinstance(value.get("$ref"), str):
            ref = value["$ref"]
            if ref in seen:
                return {"description": f"(recursive: {ref.rsplit('/', 1)[-1]})"}
            target = self.target(ref, (where, "$ref"))
            if target is None:
                return {}
            resolved = self.resolve(target, where, (*seen, ref), depth)
            siblings = {k: v for k, v in value.items() if k != "$ref"}
            if siblings and isinstance(resolved, dict):
                return {**resolved, **self.resolve(siblings, where, seen, depth)}
            return resolved
        return {k: self.resolve(v, (where, k), seen, depth + 1) for k, v in value.items()}


#: a location: the pointer of the operation, then (parent, key) pairs below it
Where = str | tuple[Any, Any]


def _pointer(where: Where) -> str:
    keys: list[Any] = []
    while isinstance(where, tuple):
        where, key = where
        keys.append(key)
    return str(where) + pointer(*reversed(keys))


def pointer_join(base: str, key: object) -> str:
    return base + pointer(key)


def json_schema(schema: Any, *, request: bool = True) -> Any:
    """An OpenAPI schema as JSON Schema: ``nullable``, boolean exclusive bounds, readOnly
    properties of requests; non-JSON-Schema keywords dropped."""
    if isinstance(schema, list):
        return [json_schema(s, request=request) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if k not in _DROP}
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(out.get(bound), bool):
            if out[bound] and limit in out:
                out[bound] = out.pop(limit)
            else:
                del out[bound]
    if isinstance(out.get("properties"), dict):
        props = {
            name: json_schema(sub, request=request)
            for name, sub in out["properties"].items()
            if not (request and isinstance(sub, dict) and sub.get("readOnly"))
        }
        out["properties"] = props
        if isinstance(out.get("required"), list):
            out["required"] = [r for r in out["required"] if r in props]
    for key in ("items", "additionalProperties", "not"):
        if isinstance(out.get(key), dict):
            out[key] = json_schema(out[key], request=request)
    for key in ("allOf", "anyOf", "oneOf"):
        if isinstance(out.get(key), list):
            out[key] = json_schema(out[key], request=request)
    if schema.get("nullable") is True:
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    return out


def operation_count(doc: dict[str, Any]) -> int:
    """How many operations (a method of a path) the document has.

    Example:
        >>> operation_count({"paths": {"/a": {"get": {}, "post": {}}, "/b": {"get": {}}}})
        3
    """
    paths = doc.get("paths")
    if not isinstance(paths, dict):
        return 0
    return sum(
        isinstance(item.get(method), dict)
        for item in paths.values()
        if isinstance(item, dict)
        for method in METHODS
    )


def tools_from_document(
    doc: dict[str, Any], *, max_nodes: int | None = None
) -> tuple[list[ToolSpec], list[Problem]]:
    """One tool per operation, and warnings for operations left out (unsupported bodies).

    PluginSpecError lists every problem: unresolvable references, duplicate tool names,
    arguments that collide, an expansion past ``max_nodes`` values in all or past
    ``MAX_SCHEMA_DEPTH`` levels.
    """
    problems: list[Problem] = []
    warnings: list[Problem] = []
    tools = _tools(doc, _Resolver(doc, problems, max_nodes), problems, warnings)
    if problems:
        raise PluginSpecError(problems)
    return tools, warnings


def _tools(
    doc: dict[str, Any], resolver: _Resolver, problems: list[Problem], warnings: list[Problem]
) -> list[ToolSpec]:
    tools: list[ToolSpec] = []
    names: dict[str, str] = {}
    for path, item in (doc.get("paths") or {}).items():
        if not isinstance(item, dict):
            continue
        where_path = pointer("paths", path)
        try:
            shared = resolver.resolve(item.get("parameters") or [], where_path + "/parameters")
        except ExpansionLimit as exc:
            raise PluginSpecError([Problem(where_path + "/parameters", str(exc))]) from None
        for method in METHODS:
            operation = item.get(method)
            if not isinstance(operation, dict):
                continue
            where = pointer_join(where_path, method)
            try:
                op = resolver.resolve(operation, where)
            except ExpansionLimit as exc:  # reported on the operation, not deep inside it
                raise PluginSpecError([Problem(where, str(exc))]) from None
            name = tool_name(op, method, path)
            if name in names:
                problems.append(
                    Problem(where, f"tool name '{name}' is used by {names[name]} already")
                )
                continue
            tool = _tool(name, method, path, op, shared, where, problems, warnings)
            if tool is not None:
                names[name] = where
                tools.append(tool)
    return tools


def _tool(
    name: str,
    method: str,
    path: str,
    op: dict[str, Any],
    shared: list[Any],
    where: str,
    problems: list[Problem],
    warnings: list[Problem],
) -> ToolSpec | None:
    params: dict[tuple[str, str], dict[str, Any]] = {}
    for param in [*shared, *(op.get("parameters") or [])]:
        if isinstance(param, dict) and "name" in param and "in" in param:
            params[(param["in"], param["name"])] = param
    properties: dict[str, Any] = {}
    required: list[str] = []
    bindings: dict[str, dict[str, str]] = {}
    for (location, wire), param in params.items():
        schema = param.get("schema")
        if schema is None and isinstance(param.get("content"), dict) and param["content"]:
            schema = next(iter(param["content"].values())).get("schema")
        prop = json_schema(schema or {"type": "string"})
        if param.get("description"):
            prop = {**prop, "description": param["description"]}
        if wire in bindings:
            problems.append(
                Problem(f"{where}/parameters", f"parameter '{wire}' appears in two places")
            )
            continue
        properties[wire] = prop
        bindings[wire] = {"in": location, "name": wire}
        if location == "path" or param.get("required"):
            required.append(wire)
    body: dict[str, Any] | None = None
    request_body = op.get("requestBody")
    if isinstance(request_body, dict):
        content = request_body.get("content") or {}
        ctype = next(
            (c for c in content if c in JSON_TYPES or c.endswith("+json")),
            FORM_TYPE if FORM_TYPE in content else None,
        )
        if ctype is None:
            warnings.append(
                Problem(
                    f"{where}/requestBody",
                    f"left out: request bodies of type {sorted(content)} are not supported",
                )
            )
            return None
        schema = json_schema((content[ctype] or {}).get("schema") or {})
        body_required = bool(request_body.get("required"))
        props = schema.get("properties") if schema.get("type", "object") == "object" else None
        if isinstance(props, dict) and props and not schema.get("additionalProperties"):
            body = {"content_type": ctype, "whole": False}
            for prop_name, prop in props.items():
                if prop_name in bindings:
                    problems.append(
                        Problem(
                            f"{where}/requestBody",
                            f"body property '{prop_name}' has the name of a parameter",
                        )
                    )
                    continue
                properties[prop_name] = prop
                bindings[prop_name] = {"in": "body", "name": prop_name}
            if body_required:
                required += [r for r in schema.get("required") or [] if r in props]
        else:
            body = {"content_type": ctype, "whole": True}
            if "body" in bindings:
                problems.append(Problem(f"{where}/requestBody", "a parameter is named 'body'"))
            properties["body"] = schema or {}
            bindings["body"] = {"in": "body", "name": "body"}
            if body_required:
                required.append("body")
    responses = {}
    for status, response in (op.get("responses") or {}).items():
        content = (response or {}).get("content") or {}
        ctype = next((c for c in content if c in JSON_TYPES or c.endswith("+json")), None)
        if ctype and isinstance(content[ctype], dict) and content[ctype].get("schema"):
            responses[str(status)] = json_schema(content[ctype]["schema"], request=False)
    text = " ".join(str(op[k]).strip() for k in ("summary", "description") if op.get(k))
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = list(dict.fromkeys(required))
    return ToolSpec(
        name=name,
        description=(text or f"{method.upper()} {path}")[:1024],
        method=method.upper(),
        path=path,
        parameters=parameters,
        bindings=bindings,
        body=body,
        responses=responses,
    )
