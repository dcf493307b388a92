"""Environment overrides of the config file (docs/configuration.md).

`A2A_GATEWAY__<PATH>=<value>` sets any option: the path is the YAML path with `__` between
its parts (`A2A_GATEWAY__LIMITS__MAX_BODY_BYTES` is `limits.max_body_bytes`), matched
without regard to case; a number indexes a list (`..._KEYS__0__SHA256`). The value is read
as YAML (`1`, `true`, `null`, `"1.0"`, `[a, b]`); an empty value is ignored, so that an
unset compose variable (`${X:-}`) changes nothing. A few options have a shorter name too
(`A2A_GATEWAY_LOG_LEVEL`). Overrides apply to the YAML mapping before validation, so a
bad value fails like one in the file, with its YAML path and the variable named; they
apply on every load (start, each worker, each reload), so all see the same config.

This module imports nothing of the config model (gateway/config/models.py imports it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

PREFIX = "A2A_GATEWAY__"
CONFIG_PATH_ENV = "A2A_GATEWAY_CONFIG"  # the config file of serve/check-config (gateway/cli.py)
# Shorthands for the options most often set from outside; the generic prefix wins over them.
SHORTHANDS = {"A2A_GATEWAY_LOG_LEVEL": ("log", "level")}


class EnvOverrideError(ValueError):
    """An override that cannot be applied; the message names the variable."""


def _overrides(environ: Mapping[str, str]) -> list[tuple[str, tuple[str, ...], str]]:
    found: list[tuple[str, tuple[str, ...], str]] = [(name, path, environ[name]) for name, path in SHORTHANDS.items()
             if environ.get(name)]
    for name in sorted(environ):
        if not name.startswith(PREFIX) or not environ[name]:
            continue
        parts = tuple(name[len(PREFIX):].split("__"))
        if not all(parts):
            raise EnvOverrideError(f"env {name}: empty part in the path (parts are "
                                   f"separated by exactly two underscores)")
        found.append((name, parts, environ[name]))
    return found


def _child(node: Any, part: str, name: str, where: list[str]) -> tuple[Any, str | int]:
    """The key (or list index) of ``part`` in ``node``; an existing key matches whatever its
    case (tenant names), a new one is lower case like every option name."""
    if isinstance(node, list):
        if not part.isdigit() or int(part) > len(node):
            raise EnvOverrideError(f"env {name}: {'.'.join(where) or '(top level)'} is a list "
                                   f"of {len(node)}: {part!r} is not an index into it")
        return node, int(part)
    if not isinstance(node, dict):
        raise EnvOverrideError(f"env {name}: {'.'.join(where)} is not a mapping "
                               f"(it is {node!r}), so it has no {part.lower()!r}")
    for key in node:
        if isinstance(key, str) and key.lower() == part.lower():
            return node, key
    return node, part.lower()


def apply_env_overrides(data: dict[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
    """Apply the overrides in ``environ`` to ``data`` in place; answer which YAML path
    (dotted) each variable set, to name the variable in a validation error."""
    origins: dict[str, str] = {}
    for name, parts, text in _overrides(environ):
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise EnvOverrideError(f"env {name}: not a YAML value: "
                                   f"{str(exc).splitlines()[0]}") from None
        node: Any = data
        where: list[str] = []
        for i, part in enumerate(parts):
            parent, key = _child(node, part, name, where)
            where.append(str(key))
            if i == len(parts) - 1:
                if isinstance(parent, list) and key == len(parent):
                    parent.append(value)
                else:
                    parent[key] = value
                break
            if isinstance(parent, list) and key == len(parent):
                parent.append({})
            elif isinstance(parent, dict) and parent.get(key) is None:
                parent[key] = {}  # a section absent from the file (or `null`)
            node = parent[key]
        origins[".".join(where)] = name
    return origins


def name_the_variable(path: str, origins: Mapping[str, str]) -> str:
    """' (env X)' when the YAML path of an error is, or is inside, or holds, one that an
    environment variable set; '' otherwise."""
    for where, name in origins.items():
        if path and (path == where or path.startswith(where + ".")
                     or where.startswith(path + ".")):
            return f" (env {name})"
    return ""
