"""The Coze response envelope and the error-code table."""

from __future__ import annotations

from typing import Any

from coze_lab.core.errors import CozeLabError

#: Coze codes of errors raised by tornado itself (wrong method, body over the connection's cap)
_CODE_BY_STATUS = {400: 4000, 401: 4100, 403: 4101, 404: 4200, 405: 4000, 409: 4090, 413: 4000}


def ok(data: Any = None, **extra: Any) -> dict[str, Any]:
    """A successful body; ``extra`` fields sit beside ``data`` (Coze's execute_id, usage).

    Example:
        >>> ok({"id": "1"})
        {'code': 0, 'msg': '', 'data': {'id': '1'}}
    """
    return {"code": 0, "msg": "", "data": data, **extra}


def error_body(status: int, exc: BaseException | None, reason: str) -> dict[str, Any]:
    """The ``{code, msg}`` body for an error response."""
    if isinstance(exc, CozeLabError):
        detail = getattr(exc, "detail", None)  # e.g. every located problem of an import
        body: dict[str, Any] = {"code": exc.code, "msg": exc.msg}
        return body if detail is None else {**body, "detail": detail}
    if status >= 500:
        return {"code": 5000, "msg": "internal server error"}
    return {"code": _CODE_BY_STATUS.get(status, 4000), "msg": reason}


def status_for(exc: BaseException | None, default: int) -> int:
    return exc.status if isinstance(exc, CozeLabError) else default
