"""Whether two agents gave the same answer by meaning: migration mode sends a call to the
legacy agent (the primary) and to its successor (the candidate), and reports how their
answers differ.

What is compared, on the views of translators/answer_view.py (which leave out ids,
timestamps and the history): the answer's shape (a task, a message, an error), the
task's last state, the status message, the artifacts (count, names, descriptions, and
per part: kind, media type, content, metadata, filename), the metadata, an error's kind
(never its message), and a stream's sequence of states. Each difference has a path in
the JSON view of the answer ("artifacts[0].parts[1].data.total"); rules can ignore
paths, and say how texts compare. Differences come in document order.

Kinds: texts (parts, artifact descriptions) differ as "text", by the rules; data parts,
metadata, raw bytes, URLs and file names as "data", exactly (a data part is structured:
"Yes" and "yes" may be two values); a whole answer of another shape as "answer", path "".
Answers of other operations (a card, a task list) compare as "data" on their JSON.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Any, Literal

from translators.answer_view import (
    AnswerView,
    ArtifactView,
    MessageView,
    Outcome,
    PartView,
    view_of,
)
from translators.answer_view import render as render

KINDS = ("answer", "state", "artifact_count", "artifact_name", "part_count", "part_kind",
         "media_type", "data", "text", "error", "stream_shape")
TEXT_RULES = ("exact", "normalized", "similarity")
# A Difference shows at most this many characters of each side.
_SHOWN = 200
# SequenceMatcher's time grows with the product of the lengths (0.8 s for two texts of
# 2,000 characters from a small alphabet): texts longer than this (both together) are
# matched word by word, and past the word limit only the words they share count,
# whatever their order. Some 25 ms per text pair at worst, then; natural texts far less.
_CHARACTER_MATCH_LIMIT = 600
_WORD_MATCH_LIMIT = 1000

Path = tuple[str | int, ...]
# A path pattern's segment: ("name", glob), ("key", exact key), ("index", n or None for
# any), ("any", None) for "**", any number of segments.
_Token = tuple[str, str | int | None]


@dataclass(frozen=True, slots=True)
class CompareRules:
    """How to compare. ``ignore``: paths to skip, with what is under them, e.g.
    "metadata", "status.message", "artifacts[*].parts[*].data.generatedAt",
    "**.generatedAt"; a name segment may be a glob ("trace*"), a key that is no plain
    name is written quoted (data["a.b"]). ``text``: "exact"; "normalized" (casefolded,
    runs of whitespace as one space, stripped); "similarity" (normalized texts whose
    difflib ratio is at least ``similarity`` count as the same)."""

    ignore: tuple[str, ...] = ()
    text: Literal["exact", "normalized", "similarity"] = "normalized"
    similarity: float = 0.9

    def __post_init__(self) -> None:
        if self.text not in TEXT_RULES:
            raise ValueError(f"text must be one of {', '.join(TEXT_RULES)}, not {self.text!r}")
        if not 0.0 <= self.similarity <= 1.0:
            raise ValueError(f"similarity must be within 0..1, not {self.similarity}")
        for pattern in self.ignore:
            parse_pattern(pattern)


@dataclass(frozen=True, slots=True)
class Difference:
    kind: str  # one of KINDS
    path: str  # where, in the answer's JSON view ("" for the whole answer)
    primary: str  # short renderings (at most 200 characters)
    candidate: str


# Differences listed for one comparison, at most; past it only the first of each kind
# (what the counts by kind read): a table whose every cell differs made one difference
# per cell, hundreds of thousands for one large answer.
MAX_LISTED = 1_000


def compare(primary: Outcome, candidate: Outcome,
            rules: CompareRules = CompareRules()) -> list[Difference]:
    """The differences in meaning between two outcomes of one call, in document order
    (none: the same answer), at most MAX_LISTED of them (then one more of each kind not
    listed yet). A stream is compared by its states (with another stream's
    only) and by the answer its events build (with a stream's or a unary answer)."""
    a, b = view_of(primary), view_of(candidate)
    out = _Differences(rules)
    if a.shape != b.shape:
        out.add("answer", (), a.label, b.label)
        return out.found
    if a.states is not None and b.states is not None and a.states != b.states:
        out.add("stream_shape", ("events",), _states_text(a.states), _states_text(b.states))
    if a.shape == "error":
        if a.error != b.error:
            out.add("error", ("error", "kind"), a.error, b.error)
    elif a.shape == "task":
        _task(out, a, b)
    elif a.shape == "message":
        _message(out, (), a.message or _NO_MESSAGE, b.message or _NO_MESSAGE)
    elif a.shape != "none":
        _json(out, (), a.other, b.other)
    return out.found


_NO_MESSAGE = MessageView((), {})


class _Absent:
    """A side that has nothing at a path."""

    def __repr__(self) -> str:
        return "(absent)"


ABSENT: Any = _Absent()


class _Differences:
    def __init__(self, rules: CompareRules) -> None:
        self.rules = rules
        self.ignored_paths = tuple(parse_pattern(p) for p in rules.ignore)
        self.found: list[Difference] = []
        self.kinds: set[str] = set()

    def ignored(self, path: Path) -> bool:
        return any(_matches(pattern, path) for pattern in self.ignored_paths)

    def add(self, kind: str, path: Path, primary: Any, candidate: Any) -> None:
        found = self.found
        if len(found) >= MAX_LISTED and kind in self.kinds:
            return
        if not self.ignored(path):
            found.append(Difference(kind, path_text(path), shown(primary), shown(candidate)))
            self.kinds.add(kind)


def _task(out: _Differences, a: AnswerView, b: AnswerView) -> None:
    if a.state != b.state:
        out.add("state", ("status", "state"), a.state, b.state)
    if a.status is not None or b.status is not None:
        _message(out, ("status", "message"), a.status or _NO_MESSAGE, b.status or _NO_MESSAGE)
    _artifacts(out, a.artifacts, b.artifacts)
    _json(out, ("metadata",), a.metadata or {}, b.metadata or {})


def _message(out: _Differences, path: Path, a: MessageView, b: MessageView) -> None:
    if out.ignored(path):
        return
    _parts(out, path, a.parts, b.parts)
    _json(out, (*path, "metadata"), a.metadata, b.metadata)


def _artifacts(out: _Differences, a: Sequence[ArtifactView], b: Sequence[ArtifactView]
               ) -> None:
    if out.ignored(("artifacts",)):
        return
    if len(a) != len(b):
        out.add("artifact_count", ("artifacts",), len(a), len(b))
    # Paired by position: an artifact's id is the run's own, and names may repeat.
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        path: Path = ("artifacts", i)
        if x.name != y.name:
            out.add("artifact_name", (*path, "name"), x.name, y.name)
        _text(out, (*path, "description"), x.description, y.description)
        _parts(out, path, x.parts, y.parts)
        _json(out, (*path, "metadata"), x.metadata, y.metadata)


def _parts(out: _Differences, path: Path, a: Sequence[PartView], b: Sequence[PartView]
           ) -> None:
    parts_path: Path = (*path, "parts")
    if out.ignored(parts_path):
        return
    if len(a) != len(b):
        out.add("part_count", parts_path, len(a), len(b))
    for j, (x, y) in enumerate(zip(a, b, strict=False)):
        _part(out, (*parts_path, j), x, y)


def _part(out: _Differences, path: Path, a: PartView, b: PartView) -> None:
    if out.ignored(path):
        return
    if a.kind != b.kind:
        out.add("part_kind", path, a.kind, b.kind)
        return
    if a.kind == "text":
        _text(out, (*path, "text"), a.value, b.value)
    elif a.kind == "data":
        _json(out, (*path, "data"), a.value, b.value)
    elif a.value != b.value:  # raw (as its digest) or url
        out.add("data", (*path, a.kind), a.value, b.value)
    _json(out, (*path, "metadata"), a.metadata, b.metadata)
    if a.filename != b.filename:
        out.add("data", (*path, "filename"), a.filename, b.filename)
    if a.media_type != b.media_type:
        out.add("media_type", (*path, "mediaType"), a.media_type, b.media_type)


def _text(out: _Differences, path: Path, a: str, b: str) -> None:
    if not same_text(a, b, out.rules):
        out.add("text", path, a, b)


def same_text(a: str, b: str, rules: CompareRules) -> bool:
    if a == b:
        return True
    if rules.text == "exact":
        return False
    a, b = normalized(a), normalized(b)
    if a == b or rules.text == "normalized":
        return a == b
    return similarity(a, b, at_least=rules.similarity) >= rules.similarity


def normalized(text: str) -> str:
    return " ".join(text.casefold().split())


def similarity(a: str, b: str, at_least: float = 0.0) -> float:
    """difflib's ratio, the same both ways round: SequenceMatcher's matching depends on
    which side is which, and each way's matches are real, so the better one counts.
    Below `at_least` it may answer a cheaper upper bound; long texts are matched by
    words (see _CHARACTER_MATCH_LIMIT)."""
    x: Sequence[str] = a
    y: Sequence[str] = b
    if len(a) + len(b) > _CHARACTER_MATCH_LIMIT:
        x, y = a.split(" "), b.split(" ")
    forward = SequenceMatcher(None, x, y, autojunk=False)
    # Both bounds are above the ratio whichever way round; quick_ratio counts the
    # elements the two share, in any order.
    bound = min(forward.real_quick_ratio(), forward.quick_ratio())
    if bound < at_least or len(x) + len(y) > _WORD_MATCH_LIMIT:
        return bound
    return max(forward.ratio(), SequenceMatcher(None, y, x, autojunk=False).ratio())


def _json(out: _Differences, path: Path, a: Any, b: Any) -> None:
    """Each differing leaf of two JSON values, under `path`; object keys in sorted order
    (a Struct's keys have none of their own)."""
    if out.ignored(path):
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys()):
            _json(out, (*path, key), a.get(key, ABSENT), b.get(key, ABSENT))
    elif isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            _json(out, (*path, i), a[i] if i < len(a) else ABSENT,
                  b[i] if i < len(b) else ABSENT)
    elif not _same_leaf(a, b):
        out.add("data", path, a, b)


def _same_leaf(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):  # True is no 1 in JSON
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return type(a) is type(b) and bool(a == b)


def _states_text(states: Sequence[str]) -> str:
    return " > ".join(s.removeprefix("TASK_STATE_") for s in states) or "(no states)"


def shown(value: Any) -> str:
    """A short rendering of one side of a difference: a text as it is, JSON as compact
    text (whole numbers without ".0"), cut at 200 characters with …."""
    if value is ABSENT:
        text = "(absent)"
    elif isinstance(value, str):
        text = value
    else:
        text = json.dumps(_whole_numbers(value), ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= _SHOWN else text[:_SHOWN - 1] + "…"


def _whole_numbers(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: _whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(v) for v in value]
    return value


_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def path_text(path: Path) -> str:
    """A path as the reports and rules write it: names joined by dots, indexes and keys
    that are no plain names in brackets (data["a.b"])."""
    text = ""
    for segment in path:
        if isinstance(segment, int):
            text += f"[{segment}]"
        elif _PLAIN_NAME.fullmatch(segment):
            text += f".{segment}" if text else segment
        else:
            text += f"[{json.dumps(segment, ensure_ascii=False)}]"
    return text


_PATTERN_TOKEN = re.compile(
    r'(?P<any>\*\*)(?=[.\[]|$)|(?P<name>[^.\[\]"]+)|\[(?P<index>\*|\d+)\]'
    r'|\[(?P<key>"(?:[^"\\]|\\.)*")\]')


@lru_cache(maxsize=256)
def parse_pattern(pattern: str) -> tuple[_Token, ...]:
    """An ignore pattern's segments; ValueError when it is not one."""
    tokens: list[_Token] = []
    pos = 0
    while pos < len(pattern):
        if tokens and pattern[pos] == "." and not pattern.startswith(".[", pos):
            pos += 1  # the dot before a name
        match = _PATTERN_TOKEN.match(pattern, pos)
        if match is None:
            raise ValueError(f"not a path pattern: {pattern!r} (at {pos})")
        if match["any"]:
            tokens.append(("any", None))
        elif match["name"] is not None:
            tokens.append(("name", match["name"]))
        elif match["index"] is not None:
            tokens.append(("index", None if match["index"] == "*" else int(match["index"])))
        else:
            tokens.append(("key", json.loads(match["key"])))
        pos = match.end()
    if not tokens:
        raise ValueError("an empty path pattern would ignore everything")
    return tuple(tokens)


def _matches(pattern: Sequence[_Token], path: Path) -> bool:
    """Whether the pattern names the path or a path above it."""
    if not pattern:
        return True
    (kind, want), rest = pattern[0], pattern[1:]
    if kind == "any":
        return any(_matches(rest, path[i:]) for i in range(len(path) + 1))
    if not path:
        return False
    segment = path[0]
    if kind == "index":
        hit = isinstance(segment, int) and want in (None, segment)
    elif kind == "key":
        hit = segment == want
    else:
        hit = isinstance(segment, str) and fnmatchcase(segment, str(want))
    return hit and _matches(rest, path[1:])
