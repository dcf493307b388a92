"""The metrics reference, rendered from the Prometheus registry: every module of `gateway/`
is imported (each defines its metrics at import), then every `a2a_gateway_*` collector of
the default registry is described: name, type, labels, help text, histogram buckets."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from prometheus_client import REGISTRY

import gateway
from docsgen import HEADER

PREFIX = "a2a_gateway_"


def _import_gateway() -> None:
    for module in pkgutil.walk_packages(gateway.__path__, "gateway."):
        if module.name.endswith("__main__"):
            continue  # running the program is not defining it
        importlib.import_module(module.name)


def _collectors() -> list[Any]:
    # prometheus-client keeps no public list of a registry's collectors with their label
    # names; its mapping is stable across the versions pyproject admits.
    found = {c for c in REGISTRY._collector_to_names if getattr(c, "_name", "").startswith(
        PREFIX)}
    return sorted(found, key=lambda c: c._name)


def _suffix(collector: Any) -> str:
    return "_total" if collector._type == "counter" else ""


def render() -> str:
    _import_gateway()
    lines = [HEADER.format(source="the Prometheus registry of every gateway module")
             + "# Metrics reference", "",
             "Every metric the gateway exports at `GET /metrics` (Prometheus text format), "
             "read from its registry. See [Observability](../observability.md#metrics) for "
             "how they are counted, and with workers how they are combined. The standard "
             "`process_*` and `python_*` metrics come with a single process.", "",
             "| metric | type | labels | meaning |", "|---|---|---|---|"]
    buckets: dict[str, str] = {}
    for c in _collectors():
        name = c._name + _suffix(c)
        labels = ", ".join(f"`{label}`" for label in c._labelnames) or "none"
        help_text = " ".join(c._documentation.split()).replace("|", "\\|")
        mode = getattr(c, "_multiprocess_mode", "")
        if c._type == "gauge" and mode:
            help_text += f" (with workers: `{mode}`)"
        lines.append(f"| `{name}` | {c._type} | {labels} | {help_text} |")
        if c._type == "histogram":
            buckets[name] = ", ".join(f"{b:g}" for b in c._upper_bounds)
    if buckets:
        lines += ["", "Histogram buckets (seconds, upper bounds):", ""]
        lines += [f"- `{name}`: {bounds}" for name, bounds in buckets.items()]
    return "\n".join(lines) + "\n"
