"""JSON value types for data the harness passes through without reading its shape.

Use these where the content is genuinely free-form (tool arguments, user metadata, an
upstream body relayed untouched). They are not `Any`: a reader must narrow a value
(`isinstance`) before using it, so a guessed field name is a type error. Where the shape is
known, declare a TypedDict, dataclass or pydantic model instead.
"""

from __future__ import annotations

from typing import TypeAlias

JSONScalar: TypeAlias = str | int | float | bool | None
JSONValue: TypeAlias = JSONScalar | list["JSONValue"] | dict[str, "JSONValue"]
# A decoded JSON object: keys are strings, values any JSON value.
JSONObject: TypeAlias = dict[str, JSONValue]
