"""The type of a JSON document, for code that walks results after ``model_dump(mode="json")``.

Why a real recursive type instead of ``Any``: the walkers (compacting a result for an agent,
digesting it, exporting schemas) branch on what each node is; with this type mypy checks that
every branch handles a node the way JSON can actually hold it.
"""

from __future__ import annotations

from typing import TypeAlias

JsonValue: TypeAlias = "str | int | float | bool | None | list[JsonValue] | dict[str, JsonValue]"
JsonObject: TypeAlias = "dict[str, JsonValue]"
