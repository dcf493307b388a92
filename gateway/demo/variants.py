"""Answer variants: the demo agent answering slightly differently (`--answer-variant`).

Migration mode runs a legacy agent and its successor side by side and compares their
answers (shadow diffs). Two demo agents that answer alike show no difference; a variant
makes the successor differ in one known, small way, so a demo or a test can see the
difference surface — and check that it is the only one.

A variant changes a task's *first artifact*, when it is first written (not the chunks a
stream appends to it later), in the engine, so the changed artifact is what every read of
the task shows: the send's answer, stream events, GetTask, push notifications, on either
protocol. Direct Message replies (`echo: ...`) carry no artifact and never change.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Final

from gateway.demo.wire import JSON

# What `artifact-text` appends to the first text part.
TEXT_SUFFIX: Final = " (v2)"
# The field `data-field` adds to the first data part (or to a data part of its own).
DATA_FIELD: Final = ("variant", "v2")


def _artifact_text(artifact: JSON) -> None:
    for part in artifact["parts"]:
        if part.get("kind") == "text":
            part["text"] += TEXT_SUFFIX
            return


def _data_field(artifact: JSON) -> None:
    key, value = DATA_FIELD
    for part in artifact["parts"]:
        if part.get("kind") == "data":
            part["data"][key] = value
            return
    artifact["parts"].append({"kind": "data", "data": {key: value}})


_VARIANTS: dict[str, Callable[[JSON], None]] = {
    # The first text part's wording: `built X` becomes `built X (v2)`.
    "artifact-text": _artifact_text,
    # The first data part gains `"variant": "v2"` (`{"k": 1}` becomes
    # `{"k": 1, "variant": "v2"}`); an artifact without one gets `{"variant": "v2"}`.
    "data-field": _data_field,
}
VARIANTS: Final = tuple(_VARIANTS)


def check_variant(name: str | None) -> str | None:
    """``name`` when it is a known variant (or None: answer as usual); ValueError else."""
    if name is not None and name not in _VARIANTS:
        raise ValueError(f"unknown answer variant {name!r} (known: {', '.join(VARIANTS)})")
    return name


def vary(variant: str, artifact: JSON) -> JSON:
    """A copy of a task's first artifact as ``variant`` answers it."""
    changed = copy.deepcopy(artifact)
    _VARIANTS[variant](changed)
    return changed
