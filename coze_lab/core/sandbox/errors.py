"""Typed sandbox errors and the result of one run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ERROR_TYPES = (
    "timeout",
    "memory_limit",
    "worker_crashed",
    "user_error",
    "invalid_result",
    "invalid_input",
    "output_too_large",
    "not_installed",
    "package_unavailable",
)


class SandboxError(Exception):
    """A failed sandbox run (or a sandbox that cannot run at all).

    ``type`` is one of :data:`ERROR_TYPES`; ``message`` is for humans (for ``user_error``
    it ends with the last lines of the Python traceback).

    Example:
        >>> err = SandboxError("timeout", "execution exceeded 2 s")
        >>> err.to_dict()
        {'type': 'timeout', 'message': 'execution exceeded 2 s'}
    """

    def __init__(self, type: str, message: str) -> None:
        super().__init__(f"{type}: {message}")
        self.type = type
        self.message = message

    def to_dict(self) -> dict[str, str]:
        """JSON-ready form ``{"type", "message"}``."""
        return {"type": self.type, "message": self.message}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SandboxError) and (self.type, self.message) == (
            other.type,
            other.message,
        )

    def __hash__(self) -> int:
        return hash((self.type, self.message))

    def __repr__(self) -> str:
        return f"SandboxError({self.type!r}, {self.message!r})"


@dataclass
class RunResult:
    """Outcome of one code-node run.

    Example:
        >>> r = RunResult(output={"a": 1}, stdout="hi\\n", stderr="", error=None, duration_ms=3.2)
        >>> r.ok, r.to_dict()["output"]
        (True, {'a': 1})
    """

    output: dict[str, Any] | None
    stdout: str = ""
    stderr: str = ""
    error: SandboxError | None = None
    duration_ms: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """True when the run produced an output and no error."""
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        """``{output, stdout, stderr, error: {type, message} | None, duration_ms}``."""
        return {
            "output": self.output,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "error": self.error.to_dict() if self.error else None,
            "duration_ms": round(self.duration_ms, 3),
        }

    @classmethod
    def failure(cls, type: str, message: str, duration_ms: float = 0.0) -> RunResult:
        """A result that carries only an error."""
        return cls(output=None, error=SandboxError(type, message), duration_ms=duration_ms)
