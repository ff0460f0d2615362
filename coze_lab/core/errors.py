"""Domain errors that carry a Coze error code and an HTTP status.

Every failure a client can cause is one of these; the web layer turns them into
``{"code": ..., "msg": ...}`` bodies with the matching 4xx status.

Where Coze's error-code table defines a number, the number has Coze's meaning (4000
request parameter error, 4012 invalid model, 4015 bot not published to the API, 4100
authentication, 4101 permission, 4104 chat cannot be canceled, 4200 resource not found,
4302 file too large, 5000 internal error); the official SDKs pick their exception by it
(the JavaScript SDK: 4000 BadRequestError, 4100 AuthenticationError, 4101
PermissionDeniedError, 4200 NotFoundError, 4013 RateLimitError). Our own codes use numbers
that Coze's table leaves free: 4051, 409x, 5020, 5030, 510x.
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

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for it in a notebook: the message, not the library's frames
        (the frames stay on ``__traceback__`` for a debugger)."""
        return [f"{type(self).__name__}: {self}"]


class InvalidParameter(CozeLabError):
    code, status = 4000, 400


class Unauthenticated(CozeLabError):
    code, status = 4100, 401


class PermissionDenied(CozeLabError):
    code, status = 4101, 403


class NotFound(CozeLabError):
    code, status = 4200, 404


class NotPublished(NotFound):
    """The bot is not published to the connector asked for (Coze's 4015)."""

    code = 4015


class Conflict(CozeLabError):
    """The object is not in a state that allows this (answered, finished, exists already)."""

    code, status = 4090, 409


class MemberExists(Conflict):
    """The user is a member of the space already (Coze's 4201: member exists)."""

    code = 4201


class PayloadTooLarge(CozeLabError):
    """A request body over the limit: a bad request in Coze's terms (4000), HTTP 413."""

    code, status = 4000, 413


class FileTooLarge(PayloadTooLarge):
    """An upload over the file size limit (Coze's 4302)."""

    code = 4302


#: codes in a workflow run's ``error`` and its ``Error`` stream event (not HTTP answers)
RUN_CANCELED = 4091
QUESTION_EXPIRED = 4092


class Unavailable(CozeLabError):
    code, status = 5030, 503
