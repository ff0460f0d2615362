"""Domain errors that carry a Coze error code and an HTTP status.

Every failure a client can cause is one of these; the web layer turns them into
``{"code": ..., "msg": ...}`` bodies with the matching 4xx status.
"""

from __future__ import annotations


class CozeLabError(Exception):
    """Base class: ``code`` is the Coze error code, ``status`` the HTTP status.

    Example:
        >>> err = NotFound("file 42 does not exist")
        >>> (err.code, err.status, err.msg)
        (4200, 404, 'file 42 does not exist')
    """

    code: int = 5000
    status: int = 500

    def __init__(self, msg: str) -> None:
        super().__init__(msg)
        self.msg = msg


class InvalidParameter(CozeLabError):
    code, status = 4000, 400


class Unauthenticated(CozeLabError):
    code, status = 4100, 401


class PermissionDenied(CozeLabError):
    code, status = 4101, 403


class NotFound(CozeLabError):
    code, status = 4200, 404


class Conflict(CozeLabError):
    code, status = 4300, 409


class PayloadTooLarge(CozeLabError):
    code, status = 4013, 413


class Unavailable(CozeLabError):
    code, status = 5030, 503
