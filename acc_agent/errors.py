"""Structured errors shared by every front end.

A tool raises :class:`AccAgentError` for bad input it can name (file, field, fix). The CLI turns it
into exit code 2 and ``{"error": {...}}`` on stdout; the MCP server into an ``is_error`` result.
Keeping one exception type means every front end reports the same code, message and hint.
"""

from __future__ import annotations

from typing import Any


class AccAgentError(Exception):
    """Bad input or an unusable artefact, with what to do about it."""

    def __init__(self, code: str, message: str, hint: str = "", path: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint
        self.path = path

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message, "hint": self.hint}
        if self.path is not None:
            body["path"] = self.path
        return {"error": body}

    def __str__(self) -> str:
        where = f" [{self.path}]" if self.path else ""
        hint = f" Hint: {self.hint}" if self.hint else ""
        return f"{self.code}: {self.message}{where}.{hint}"


def from_validation_error(exc: Any, tool_name: str) -> AccAgentError:
    """Turn a pydantic ValidationError into one readable structured error."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(input)"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    return AccAgentError(
        code="invalid_input",
        message="; ".join(parts) or str(exc),
        hint=f"See `acc-agent {tool_name.replace('_', '-')} --help` for the accepted arguments.",
    )
