"""Structured errors shared by every front end.

A tool raises :class:`AccAgentError` for bad input it can name (file, field, fix). The CLI turns it
into exit code 2 and ``{"error": {...}}`` on stdout; the MCP server into an ``is_error`` result.
Keeping one exception type means every front end reports the same code, message and hint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pydantic is not imported at CLI start-up (see cli_manifest)
    from pydantic import BaseModel, ValidationError
    from pydantic_core import ErrorDetails


class AccAgentError(Exception):
    """Bad input or an unusable artefact, with what to do about it."""

    def __init__(self, code: str, message: str, hint: str = "", path: str | None = None,
                 field: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint
        self.path = path
        self.field = field  # the input argument at fault, when there is one

    def __reduce__(self) -> tuple[type[AccAgentError], tuple[str, str, str, str | None, str | None]]:
        # Why: a worker process or Dask task raising this must arrive whole in the process that
        # reports it; the default pickling passes only ``args`` (the message) back to __init__.
        return (self.__class__, (self.code, self.message, self.hint, self.path, self.field))

    def to_dict(self) -> dict[str, dict[str, str]]:
        body: dict[str, str] = {"code": self.code, "message": self.message, "hint": self.hint}
        if self.path is not None:
            body["path"] = self.path
        if self.field is not None:
            body["field"] = self.field
        return {"error": body}

    def __str__(self) -> str:
        where = f" [{self.path}]" if self.path else ""
        hint = f" Hint: {self.hint}" if self.hint else ""
        return f"{self.code}: {self.message}{where}.{hint}"


def _first_sentence(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    cut = text.find(". ")
    text = text[: cut + 1] if 0 < cut < limit else text
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fix(err: ErrorDetails, tool_name: str, input_model: type[BaseModel] | None) -> str:
    """What to change for one validation error, naming the argument the way the reader passes it."""
    from acc_agent import frontend

    loc = [str(p) for p in err.get("loc", ())]
    if not loc:
        return ""
    field = loc[0]
    arg = frontend.argument(tool_name, field)
    fields = input_model.model_fields if input_model is not None else {}
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        accepted = ", ".join(frontend.argument(tool_name, f).strip("`") for f in fields)
        return f"Remove {arg}: {tool_name} has no such argument" + (f" (it accepts {accepted})." if accepted else ".")
    finfo = fields.get(field)
    about = _first_sentence(finfo.description) if finfo is not None and finfo.description else ""
    if kind == "missing":
        return f"Pass {arg}" + (f": {about}" if about else ".")
    where = ".".join(loc)
    shown = arg if len(loc) == 1 else f"{arg} (at {where})"
    return f"Correct {shown}: {err.get('msg', 'invalid value')}" + (f". It is: {about}" if about else ".")


def from_validation_error(exc: ValidationError, tool_name: str,
                          input_model: type[BaseModel] | None = None) -> AccAgentError:
    """Turn a pydantic ValidationError into one structured error that names the field and the fix.

    The hint says per field what to do (pass it, remove it, correct its value) in the words of
    the front end that shows it (``--top`` on the CLI, ```top``` over MCP), so an agent can retry
    without reading the schema again.
    """
    from acc_agent import frontend

    parts: list[str] = []
    fixes: list[str] = []
    fields: list[str] = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(input)"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
        fixes.append(_fix(err, tool_name, input_model))
        if err.get("loc"):
            fields.append(str(err["loc"][0]))
    hint = " ".join(dict.fromkeys(f for f in fixes if f))
    more = f"Arguments: {frontend.tool_help(tool_name)}."
    return AccAgentError(
        code="invalid_input",
        message="; ".join(parts) or str(exc),
        hint=f"{hint} {more}".strip(),
        field=fields[0] if fields else None,
    )
