"""Copying v0.3 proto messages into v1.0 ones and back by field name, from tables.

Most P03 and P10 messages kept their field names while their numbers and packages moved
(reference §3, §6.3), so one generic copy walks the set fields of the source by name.
What differs is declared once per pair of messages in a `Rule`: the renamed fields (one
table, read both ways), the fields a small hook restructures, and the fields with no
counterpart that are no loss (`final`, `tenant`). A set field with no home and no rule
is reported to the LossReport, never dropped silently.

Each (source, target) pair of message types is compiled once into a plan (field name →
step), so a copy costs one loop over `ListFields()` and one Python call per nested
message: this runs for every event of a v0.3 gRPC stream.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Generic, TypeVar

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message as ProtoMessage

from translators.errors import invalid_params
from translators.loss import LossReport
from translators.p03.common import BytesMode

# (the source field's value, the target message, the field's path, loss, bytes mode):
# writes what the value becomes into the target message.
Hook = Callable[[Any, Any, str, LossReport, BytesMode], None]
# (source message, target message, its path, loss, bytes mode): fills the target.
Fill = Callable[[Any, Any, str, LossReport, BytesMode], None]


@dataclass(frozen=True)
class Rule:
    """What differs between a v0.3 message and its v1.0 counterpart; everything else is
    copied by name, both ways."""

    p03: type[ProtoMessage]
    p10: type[ProtoMessage]
    renames: Mapping[str, str] = field(default_factory=dict)  # v0.3 name → v1.0 name
    to_p10: Mapping[str, Hook] = field(default_factory=dict)  # by v0.3 field name
    to_p03: Mapping[str, Hook] = field(default_factory=dict)  # by v1.0 field name
    unsaid_p03: frozenset[str] = frozenset()  # v0.3 fields v1.0 says otherwise
    unsaid_p10: frozenset[str] = frozenset()  # v1.0 fields v0.3 has no use for


@dataclass(frozen=True)
class _Side:
    renames: Mapping[str, str]
    hooks: Mapping[str, Hook]
    unsaid: frozenset[str]


S = TypeVar("S", bound=ProtoMessage)
D = TypeVar("D", bound=ProtoMessage)


# Steps of a plan: (kind, target field name, path segment, argument).
_SET, _EXTEND, _SAME, _SUB, _EACH, _MAP, _UPDATE, _HOOK, _DROP, _SKIP = range(10)
Plan = dict[str, tuple[int, str, str, Any]]


class Mirror:
    """One direction of the copy: rules and whole-message fills by source type; types
    with neither are copied by name with ``renames`` at every depth."""

    def __init__(self, sides: Mapping[str, _Side] | None = None,
                 fills: Mapping[str, Fill] | None = None,
                 renames: Mapping[str, str] | None = None) -> None:
        self._sides = dict(sides or {})
        self._fills = dict(fills or {})
        self._default = _Side(renames or {}, {}, frozenset())
        self._plans: dict[tuple[str, str, frozenset[str]], Plan] = {}

    def plan(self, src: Descriptor, dst: Descriptor, skip: frozenset[str] = frozenset(),
             ) -> Plan:
        key = (src.full_name, dst.full_name, skip)
        plan = self._plans.get(key)
        if plan is None:
            # Published before it is compiled, as a type may nest itself; translators run
            # on the event loop (and the objects' plans are compiled at import).
            plan = self._plans[key] = {}
            side = self._sides.get(src.full_name, self._default)
            for f in src.fields:
                plan[f.name] = _SKIP, "", "", None
                if f.name not in skip:
                    plan[f.name] = self._step(f, dst.fields_by_name, side)
        return plan

    def unmapped(self, src: Descriptor, dst: Descriptor) -> list[str]:
        """The fields of ``src`` a copy into ``dst`` reports as lost, whatever their value
        (the rules' hooks may report more)."""
        return [name for name, step in self.plan(src, dst).items() if step[0] == _DROP]

    def _step(self, f: FieldDescriptor, targets: Mapping[str, FieldDescriptor],
              side: _Side) -> tuple[int, str, str, Any]:
        seg = f.json_name
        if f.name in side.hooks:
            return _HOOK, "", seg, side.hooks[f.name]
        target = targets.get(side.renames.get(f.name, f.name))
        if f.name in side.unsaid:
            return _SKIP, "", seg, None
        if target is None or _kind(f) != _kind(target):
            return _DROP, "", seg, None
        name = target.name
        if _is_map(f):
            value = f.message_type.fields_by_name["value"]
            if value.message_type is None:
                return _UPDATE, name, seg, None
            return _MAP, name, seg, self._filler(
                value.message_type, target.message_type.fields_by_name["value"].message_type)
        if f.message_type is None:
            return (_EXTEND if f.is_repeated else _SET), name, seg, None
        if f.message_type.full_name == target.message_type.full_name:  # well-known types
            return (_EXTEND if f.is_repeated else _SAME), name, seg, None
        return (_EACH if f.is_repeated else _SUB), name, seg, self._filler(
            f.message_type, target.message_type)

    def _filler(self, src: Descriptor, dst: Descriptor) -> Fill:
        fill = self._fills.get(src.full_name)
        if fill is not None:
            return fill
        if src.full_name == dst.full_name:  # well-known types
            return _copy_same
        return partial(fill_plan, self.plan(src, dst))


def _copy_same(src: ProtoMessage, dst: ProtoMessage, *_: object) -> None:
    dst.CopyFrom(src)


class Mirrors:
    """Both directions of ``rules``; ``fills`` by source type, either direction's."""

    def __init__(self, rules: list[Rule], fills: Mapping[Any, Fill]) -> None:
        by_name = {cls.DESCRIPTOR.full_name: fill for cls, fill in fills.items()}
        self.to_p10 = Mirror({r.p03.DESCRIPTOR.full_name: _Side(r.renames, r.to_p10, r.unsaid_p03)
                              for r in rules}, by_name)
        self.to_p03 = Mirror({r.p10.DESCRIPTOR.full_name: _Side(
            {v: k for k, v in r.renames.items()}, r.to_p03, r.unsaid_p10) for r in rules}, by_name)

    def pair(self, p03: type[S], p10: type[D], oneof: str = "", empty: str = "",
             ) -> tuple[Convert[S, D], Convert[D, S]]:
        """The two translations of a pair of messages; ``oneof``: one of its fields must
        be set, else `{path} {empty}` is the caller's error."""
        return (Convert(self.to_p10.plan(p03.DESCRIPTOR, p10.DESCRIPTOR), p10, "auto",
                        oneof, empty),
                Convert(self.to_p03.plan(p10.DESCRIPTOR, p03.DESCRIPTOR), p03, "double",
                        oneof, empty))


class Convert(Generic[S, D]):
    """One direction of a pair as a function: (message, path, loss, bytes mode) → message.
    Decoding defaults to bytes mode "auto", encoding to "double" (common.BytesMode)."""

    def __init__(self, plan: Plan, dst: type[D], bytes_mode: BytesMode, oneof: str,
                 empty: str) -> None:
        self.plan = plan
        self._dst: type[D] = dst
        self._mode: BytesMode = bytes_mode
        self._oneof = oneof
        self._empty = empty

    def __call__(self, msg: S, path: str, loss: LossReport, *,
                 bytes_mode: BytesMode | None = None) -> D:
        if self._oneof and msg.WhichOneof(self._oneof) is None:
            raise invalid_params(f"{path or msg.DESCRIPTOR.name} {self._empty}")
        out: D = self._dst()
        fill_plan(self.plan, msg, out, path, loss, bytes_mode or self._mode)
        return out

    def rooted(self, msg: S, loss: LossReport, bytes_mode: BytesMode) -> D:
        """At the root of a request or answer (requests.P03Rules' signature)."""
        return self(msg, "", loss, bytes_mode=bytes_mode)


def _kind(f: FieldDescriptor) -> tuple[bool, bool, int]:
    return (f.is_repeated, _is_map(f),
            FieldDescriptor.CPPTYPE_MESSAGE if f.message_type else f.cpp_type)


def _is_map(f: FieldDescriptor) -> bool:
    return bool(f.message_type and f.message_type.GetOptions().map_entry)


def fill_plan(plan: Plan, src: ProtoMessage, dst: ProtoMessage, path: str, loss: LossReport,
              bytes_mode: BytesMode) -> None:
    """Copy the set fields of ``src`` into ``dst`` as ``plan`` says."""
    for f, value in src.ListFields():
        kind, name, seg, arg = plan[f.name]
        if kind == _SET:
            setattr(dst, name, value)
        elif kind == _SAME:
            getattr(dst, name).CopyFrom(value)
        elif kind == _EXTEND:
            getattr(dst, name).extend(value)
        elif kind == _SUB:
            out = getattr(dst, name)
            out.SetInParent()  # an empty message is still a present one
            arg(value, out, f"{path}.{seg}" if path else seg, loss, bytes_mode)
        elif kind == _EACH:
            out = getattr(dst, name)
            where = f"{path}.{seg}" if path else seg
            for i, item in enumerate(value):
                arg(item, out.add(), f"{where}[{i}]", loss, bytes_mode)
        elif kind == _HOOK:
            arg(value, dst, f"{path}.{seg}" if path else seg, loss, bytes_mode)
        elif kind == _MAP:
            out = getattr(dst, name)
            where = f"{path}.{seg}" if path else seg
            for key, item in value.items():
                arg(item, out[key], f"{where}.{key}", loss, bytes_mode)
        elif kind == _UPDATE:
            getattr(dst, name).update(value)
        elif kind == _DROP:
            loss.drop(f"{path}.{seg}" if path else seg)


# The card's leaves: copied by name with one rename table at every depth.
_BY_NAME: dict[tuple[tuple[str, str], ...], Mirror] = {}


def copy_by_name(src: ProtoMessage, dst: ProtoMessage, path: str, loss: LossReport, *,
                 renames: dict[str, str] | None = None, skip: frozenset[str] = frozenset(),
                 ) -> None:
    """Copy every set field of ``src`` into the field of the same name in ``dst``.

    The card's leaves (security schemes, OAuth flows, skills, extensions, signatures) kept
    their names across versions while their message types moved package, so they are
    copied by name, recursing into messages of different types. A set field that ``dst``
    lacks (e.g. `deviceCode`, `pkceRequired` toward v0.3) is reported, never dropped
    silently. ``renames`` maps src names to dst names at every depth; ``skip`` names
    top-level fields the caller translates itself.
    """
    key = tuple(sorted((renames or {}).items()))
    mirror = _BY_NAME.get(key)
    if mirror is None:
        mirror = _BY_NAME[key] = Mirror(renames=renames)
    fill_plan(mirror.plan(src.DESCRIPTOR, dst.DESCRIPTOR, skip), src, dst, path, loss, "raw")
