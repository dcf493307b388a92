"""A small JSON Schema check for the subset report.schema.json uses (type, const, enum,
properties, required, additionalProperties, items, anyOf, $ref to #/$defs): jsonschema is
not a dependency of the project."""

from __future__ import annotations

from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,),
    "integer": (int,), "number": (int, float), "null": (type(None),)}


def errors(value: Any, schema: dict[str, Any], root: dict[str, Any] | None = None,
           path: str = "$") -> list[str]:
    root = root or schema
    if "$ref" in schema:
        name = schema["$ref"].removeprefix("#/$defs/")
        return errors(value, root["$defs"][name], root, path)
    if "anyOf" in schema:
        if any(not errors(value, s, root, path) for s in schema["anyOf"]):
            return []
        return [f"{path}: matches none of anyOf"]
    out: list[str] = []
    if "const" in schema and value != schema["const"]:
        out.append(f"{path}: {value!r} is not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{path}: {value!r} not in {schema['enum']}")
    kind = schema.get("type")
    if kind is not None:
        ok = isinstance(value, _TYPES[kind]) and not (
            kind in ("integer", "number") and isinstance(value, bool))
        if not ok:
            return [*out, f"{path}: expected {kind}, got {type(value).__name__}"]
    if isinstance(value, dict):
        props = schema.get("properties", {})
        out += [f"{path}: missing {key}" for key in schema.get("required", [])
                if key not in value]
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in props:
                out += errors(item, props[key], root, f"{path}.{key}")
            elif extra is False:
                out.append(f"{path}: unexpected property {key}")
            elif isinstance(extra, dict):
                out += errors(item, extra, root, f"{path}.{key}")
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            out += errors(item, schema["items"], root, f"{path}[{index}]")
    return out
