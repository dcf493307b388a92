"""The configuration reference, rendered from the pydantic models of `gateway/config/`:
every key with its type, default, limits and description, one table per section, and a
YAML example of each section made of its defaults."""

from __future__ import annotations

import enum
import json
import types
import typing
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from docsgen import HEADER, link_docs
from gateway.config.models import GatewayConfig

_LIMITS = (("exclusiveMinimum", "> {}"), ("minimum", "≥ {}"), ("exclusiveMaximum", "< {}"),
           ("maximum", "≤ {}"), ("minLength", "length ≥ {}"), ("maxLength", "length ≤ {}"),
           ("minItems", "items ≥ {}"), ("maxItems", "items ≤ {}"), ("pattern", "matches `{}`"))


def _cell(text: str) -> str:
    return link_docs(" ".join(text.split()).replace("|", "\\|"))


def _models_in(annotation: Any) -> list[tuple[str, type[BaseModel]]]:
    """The sections a field opens: (path suffix, model): `x` itself, `x.<name>` for a
    mapping of models, `x[]` for a list of them."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [("", annotation)]
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return [m for a in args for m in _models_in(a)]
    if origin is dict and len(args) == 2:
        return [(".<name>" + s, m) for s, m in _models_in(args[1])]
    if origin is list and args:
        return [("[]" + s, m) for s, m in _models_in(args[0])]
    return []


def _type(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "anyOf" in schema:
        return " \\| ".join(dict.fromkeys(_type(s) for s in schema["anyOf"]))
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_type(schema.get('items', {}))}"
    if kind == "object" and "additionalProperties" in schema:
        extra = schema["additionalProperties"]
        return f"map of {_type(extra) if isinstance(extra, dict) else 'any'}"
    return str(kind)


def _limits(schema: dict[str, Any]) -> str:
    found = [fmt.format(schema[k]) for k, fmt in _LIMITS if k in schema]
    for branch in schema.get("anyOf", []):
        found += [fmt.format(branch[k]) for k, fmt in _LIMITS if k in branch]
    return ", ".join(found)


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _default(field: Any) -> tuple[str, Any]:
    """The default as the table shows it, and as the example's YAML holds it."""
    if field.is_required():
        return "required", None
    value = _plain(field.get_default(call_default_factory=True))
    if value is PydanticUndefined:
        return "required", None
    if isinstance(value, dict) and value and isinstance(field.get_default(
            call_default_factory=True), BaseModel):
        return "(section)", value
    return f"`{json.dumps(value, ensure_ascii=False)}`", value


def _anchor(path: str) -> str:
    """The id MkDocs gives the heading of `path` (its default slug: word characters,
    `-` and `_` kept, the rest dropped, lower case)."""
    return "".join(c for c in path if c.isalnum() or c in "-_").lower()


def _homes(root: type[BaseModel]) -> dict[type[BaseModel], str]:
    """The one section each model is described in: the shortest path that opens it (the
    tenants' `auth` is the top-level `auth`'s model, described there once)."""
    homes: dict[type[BaseModel], str] = {root: ""}
    queue = [("", root)]
    while queue:
        path, model = queue.pop(0)
        for key, field in ((f.alias or n, f) for n, f in model.model_fields.items()):
            for suffix, child in _models_in(field.annotation):
                if child not in homes:
                    homes[child] = f"{path}.{key}{suffix}" if path else f"{key}{suffix}"
                    queue.append((homes[child], child))
    return homes


def _section(path: str, model: type[BaseModel], lines: list[str],
             homes: dict[type[BaseModel], str]) -> None:
    schema = model.model_json_schema()
    props = schema.get("properties", {})
    title = f"`{path}`" if path else "Top level"
    lines += [f"## {title}", ""]
    doc = (model.__doc__ or "").strip()
    if doc and not doc.startswith(("A base class", "Usage docs")):
        lines += [_cell(doc), ""]
    lines += ["| key | type | default | limits | description |", "|---|---|---|---|---|"]
    example: dict[str, Any] = {}
    children: list[tuple[str, type[BaseModel]]] = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        prop = props.get(key, {})
        shown, value = _default(field)
        if not field.is_required() and shown != "(section)":
            example[key] = value  # a section shows its own example
        desc = field.description or ""
        for suffix, child in _models_in(field.annotation):
            child_path = f"{path}.{key}{suffix}" if path else f"{key}{suffix}"
            home = homes[child]
            if home == child_path:
                children.append((child_path, child))
            desc = f"{desc} (see [{home}](#{_anchor(home)}))".strip()
        lines.append(f"| `{key}` | {_type(prop)} | {shown} | {_limits(prop)} | {_cell(desc)} |")
    lines += ["", "Example (the defaults; sections below have their own):" if children
              else "Example (the defaults):", "", "```yaml"]
    holder: dict[str, Any] = example
    for part in reversed([p for p in path.split(".") if p]):
        holder = {part.replace("[]", ""): [holder] if part.endswith("[]") else holder}
    lines += [yaml.safe_dump(holder, sort_keys=False, allow_unicode=True,
                             default_flow_style=False).rstrip("\n"), "```", ""]
    for child_path, child in children:
        _section(child_path, child, lines, homes)


def render() -> str:
    lines = [HEADER.format(source="gateway/config/models.py and its section modules")
             + "# Configuration reference", "",
             "Every key of the YAML file, section by section: its type, its default, the "
             "limits it must stay within and what it does. `a2a-gateway check-config FILE` "
             "checks a file against exactly this schema; `a2a-gateway schema` prints it as "
             "JSON Schema. See [Configuration](../configuration.md) for how the file is "
             "found, overridden from the environment and reloaded.", "",
             "`<name>` stands for a key you choose (a tenant's name); `[]` for an item of a "
             "list. Each example shows the section's defaults; a key whose default is `null` "
             "is off or unset until you give it a value.", ""]
    _section("", GatewayConfig, lines, _homes(GatewayConfig))
    return "\n".join(lines).rstrip("\n") + "\n"
