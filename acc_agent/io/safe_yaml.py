"""YAML from people's files, loaded with bounds: no code, no alias bombs, no stack overflow.

Why not plain ``yaml.safe_load``: the safe loader already refuses ``!!python/...`` tags, but it
happily builds a "billion laughs" document (nine aliases of nine aliases of ... a few hundred bytes
that expand to hundreds of millions of nodes the moment anything walks them: pydantic validation,
a flattening pass, the line map of ``mig.yaml``), and its composer recurses once per nesting level,
so ``[[[[...]]]]`` a few thousand deep ends in ``RecursionError``. Those are checked here first on
the parser's event stream, which PyYAML produces without recursion, in one linear pass; only a
document inside the bounds is then constructed.

Every refusal is an :class:`AccAgentError` naming the file, what is wrong and what to do.
"""

from __future__ import annotations

from dataclasses import dataclass

from acc_agent.errors import AccAgentError

#: Largest YAML text read (a project or mapping file is kilobytes; a bigger one is not hand-written).
MAX_YAML_BYTES = 16 << 20
#: Deepest nesting of lists/mappings accepted (real files nest a handful of levels).
MAX_DEPTH = 64
#: Most nodes the document may expand to once every alias is followed (the expanded size is what
#: every later walk pays for, not the size of the text).
MAX_EXPANDED_NODES = 1_000_000


def _refuse(code: str, source: str, message: str, hint: str) -> AccAgentError:
    return AccAgentError(code, f"{source}: {message}", hint=hint, path=source)


@dataclass(slots=True)
class _Open:
    """A collection whose end event has not come yet: its expanded size so far and its anchor."""

    size: int
    anchor: str | None


def check_bounds(text: str, source: str, *, max_nodes: int = MAX_EXPANDED_NODES, max_depth: int = MAX_DEPTH) -> None:
    """Refuse ``text`` if it is too large, too deep, or expands (through aliases) past ``max_nodes``.

    One pass over parser events: each open collection adds up its children, an alias counts as the
    full expanded size of its anchor, so the expansion is computed without being built.
    """
    import yaml

    if len(text) > MAX_YAML_BYTES:
        raise _refuse("yaml_too_large", source, f"{len(text) >> 20} MiB of YAML, above the {MAX_YAML_BYTES >> 20} MiB limit",
                      "Pass the hand-written file itself; a generated file this large is not a project or mapping file.")
    sizes: dict[str, int] = {}  # anchor -> expanded node count
    stack: list[_Open] = []
    total = 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                stack.append(_Open(1, event.anchor))
                if len(stack) > max_depth:
                    line = event.start_mark.line + 1 if event.start_mark is not None else "?"
                    raise _refuse("yaml_too_deep", source, f"nested more than {max_depth} levels deep (line {line})",
                                  "Flatten the file: project and mapping files need only a few levels.")
                continue
            if isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                closed = stack.pop()
                size, anchor = closed.size, closed.anchor
            elif isinstance(event, yaml.ScalarEvent):
                size, anchor = 1, event.anchor
            elif isinstance(event, yaml.AliasEvent):
                size, anchor = sizes.get(event.anchor or "", 1), None
            else:
                continue
            if anchor:
                sizes[anchor] = size
            if stack:
                stack[-1].size += size
            else:
                total += size
            if total + sum(s.size for s in stack) > max_nodes:
                line = event.start_mark.line + 1 if event.start_mark is not None else "?"
                raise _refuse("yaml_alias_bomb", source,
                              f"expands to more than {max_nodes:,} values through aliases (*name) by line {line}",
                              "Write the values out instead of repeating aliases of aliases; a real file needs no such expansion.")
    except yaml.YAMLError:
        return  # a syntax error: the loader reports it with its line, as before
    except RecursionError:  # pragma: no cover - the event parser does not recurse; kept as a last guard
        raise _refuse("yaml_too_deep", source, "nested too deeply to read",
                      "Flatten the file: project and mapping files need only a few levels.") from None


def load_yaml(text: str, source: str, *, max_nodes: int = MAX_EXPANDED_NODES) -> object:
    """``yaml.safe_load(text)`` inside the bounds of :func:`check_bounds`.

    Raises :class:`yaml.YAMLError` for a syntax error (callers word that with the line they know),
    :class:`AccAgentError` for a document outside the bounds.
    """
    import yaml

    check_bounds(text, source, max_nodes=max_nodes)
    try:
        return yaml.safe_load(text)
    except RecursionError:
        raise _refuse("yaml_too_deep", source, "nested too deeply to read",
                      "Flatten the file: project and mapping files need only a few levels.") from None
    except (ValueError, OverflowError) as exc:  # a value the constructor cannot build: a 5,000-digit integer, ...
        raise _refuse("yaml_invalid_value", source, f"holds a value YAML cannot read ({str(exc)[:120]})",
                      "Write numbers with at most a few dozen digits (quote them to keep them as text).") from None
