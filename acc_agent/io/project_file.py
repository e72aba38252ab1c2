"""Reading ``mig.yaml`` from disk into a :class:`~acc_agent.models.project.Project`.

Why apart from the model: the model says what a project holds; reading the file (size limits, safe
YAML, errors that name the line of the offending field) is input handling, and it needs the YAML
reader of this layer, which the models layer below must not import.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from acc_agent.errors import AccAgentError
from acc_agent.io.safe_yaml import MAX_YAML_BYTES, load_yaml
from acc_agent.models.project import Project

#: Most values a mig.yaml may expand to (aliases followed); the template has a few hundred.
MAX_PROJECT_NODES = 100_000


def _init_hint() -> str:
    """How the reader creates mig.yaml: the shell command, or the tool an MCP caller calls."""
    from acc_agent import frontend

    return "Call init_project" if frontend.current() == "mcp" else "Run `acc-agent init`"


def _line_map(text: str) -> dict[tuple[str, ...], int]:
    """Map each YAML key path (list indices as strings) to its 1-based line, from yaml's node marks."""
    import yaml

    lines: dict[tuple[str, ...], int] = {}
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return lines

    seen: set[int] = set()

    def walk(node: yaml.Node, path: tuple[str, ...]) -> None:
        lines[path] = node.start_mark.line + 1
        if id(node) in seen:
            return  # an alias (*name) of a node already walked: following it again could repeat it exponentially
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                lines[(*path, str(key.value))] = key.start_mark.line + 1
                walk(value, (*path, str(key.value)))
                lines[(*path, str(key.value))] = key.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, (*path, str(i)))

    if root is not None:
        walk(root, ())
    return lines


def parse_project(text: str, source: str = "mig.yaml", base_dir: Path | None = None) -> Project:
    """Validate project YAML text; every error names the file, line and field."""
    import yaml

    try:
        # bounded: a project file never needs deep nesting or aliases that expand past what is written
        data = load_yaml(text, source, max_nodes=MAX_PROJECT_NODES)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        raise AccAgentError("invalid_project", f"{source}{line}: not valid YAML ({getattr(exc, 'problem', exc)})",
                            hint="Fix the YAML syntax (indentation, colons, quotes).", path=source) from None
    if not isinstance(data, dict):
        raise AccAgentError("invalid_project", f"{source}: expected a mapping with project:, model:, ...",
                            hint=f"{_init_hint()} for a commented starting file.", path=source)
    lines = _line_map(text)
    try:
        project = Project.model_validate(data)
    except ValidationError as exc:
        parts = []
        for err in exc.errors():
            loc = tuple(str(p) for p in err.get("loc", ()))
            lineno: int | None = None
            for cut in range(len(loc), -1, -1):
                if loc[:cut] in lines:
                    lineno = lines[loc[:cut]]
                    break
            field = ".".join(loc) or "(top level)"
            where = str(lineno) if lineno is not None else "?"
            parts.append(f"line {where}, field {field}: {err.get('msg', 'invalid')}")
        raise AccAgentError("invalid_project", f"{source}: " + "; ".join(parts),
                            hint=f"Fix the named fields; {_init_hint()} for a commented example.",
                            path=source) from None
    project.base_dir = base_dir if base_dir is not None else Path(".")
    return project


def load_project(path: Path) -> Project:
    """Read and validate ``mig.yaml``; a missing file is a structured error, not a traceback."""
    if path.is_dir():
        path = path / "mig.yaml"
    if not path.is_file():
        raise AccAgentError("missing_project", f"project file not found: {path}",
                            hint=f"{_init_hint()} in the project folder, or pass the path to mig.yaml.",
                            path=str(path))
    try:
        if path.stat().st_size > MAX_YAML_BYTES:  # checked before reading: the text is held whole
            raise AccAgentError("invalid_project", f"{path} is {path.stat().st_size >> 20} MiB, not a hand-written project file",
                                hint=f"Point at the mig.yaml of the project; {_init_hint()} for a fresh one.",
                                path=str(path))
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AccAgentError("invalid_project", f"cannot read {path}: {exc}", hint="Save it as UTF-8 text.",
                            path=str(path)) from None
    return parse_project(text, source=str(path), base_dir=path.resolve().parent)
