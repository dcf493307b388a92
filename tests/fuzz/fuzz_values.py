"""Hostile values, a JSON encoder that can write what Python's cannot, and a mutator
that turns a valid document into a near-valid one. Shared by every ingress.

`Raw` is JSON text written verbatim (NaN, Infinity, 1e400, 5000-digit integers, nesting
deeper than any recursive parser). Big values are built from a size, never drawn
character by character, so that hypothesis stays fast.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

JSON = dict[str, Any]
Path = tuple[str | int, ...]

MAX_BODY_BYTES = 65536  # the gateway under test is configured with this limit


@dataclass(frozen=True)
class Raw:
    """JSON text written as is by `encode`."""

    text: str

    def __repr__(self) -> str:
        return f"Raw({_abbreviate(self.text)})"


_RUN = re.compile(r"(.{1,8}?)\1{9,}", re.S)


def _abbreviate(text: str, limit: int = 800) -> str:
    """A repr of a long string that a human can read: runs become `'[' * n`."""
    parts, last = [], 0
    for m in _RUN.finditer(text):
        if m.start() > last:
            parts.append(repr(text[last:m.start()]))
        parts.append(f"{m.group(1)!r} * {len(m.group(0)) // len(m.group(1))}")
        last = m.end()
    if last < len(text) or not parts:
        parts.append(repr(text[last:]))
    out = " + ".join(parts)
    return out if len(out) <= limit else out[:limit] + f" ... ({len(text)} chars)"


@dataclass(frozen=True)
class Big:
    """A long string, printed compactly in hypothesis' reports."""

    unit: str
    count: int

    @property
    def value(self) -> str:
        return self.unit * self.count

    def __repr__(self) -> str:
        return f"{self.unit!r} * {self.count}"


def encode(value: Any, ascii_only: bool = False) -> str:
    """JSON text of a value that may hold `Raw` and `Big` leaves (and NaN floats)."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, Big):
        return json.dumps(value.value, ensure_ascii=ascii_only)
    if isinstance(value, dict):
        items = (f"{json.dumps(str(k), ensure_ascii=ascii_only)}:{encode(v, ascii_only)}"
                 for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(encode(v, ascii_only) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only)


def plain(value: Any) -> Any:
    """The value with `Big` leaves expanded (for comparisons with what comes back)."""
    if isinstance(value, Big):
        return value.value
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


# ---------------------------------------------------------------- leaves

RAW_NUMBERS = [Raw("NaN"), Raw("Infinity"), Raw("-Infinity"), Raw("1e400"), Raw("-1e400"),
               Raw("1" + "0" * 5000), Raw("-0"), Raw("1e-400"), Raw("0.1e999999"),
               Raw("123456789012345678901234567890")]
# Deep enough for any recursive parser, small enough to pass the body limit.
RAW_NESTING = [Raw("[" * 30_000 + "]" * 30_000), Raw('{"a":' * 8_000 + "1" + "}" * 8_000),
               Raw("[" * 2_000 + "]" * 2_000), Raw("[" * 20_000)]
TRICKY_TEXT = ["", " ", "\u0000", "\ud800", "\udfff", "\u2028\u2029", "\ufeff", "é", "\U0001d518\U0001d52b\U0001d526",
               "\u202eevil", "a\nb", "a\r\nb", "%00", "%0a", "../..", "tasks/x", "a:b",
               "null", "true", "0", "-1", "<script>", "'; DROP", "\\", '"', "🙂" * 3]
numbers = st.one_of(st.integers(-(2**70), 2**70), st.sampled_from([0, -1, 2**31, 2**63, 2**64]),
                    st.floats(allow_nan=True, allow_infinity=False), st.sampled_from(RAW_NUMBERS))
short_text = st.text(max_size=12) | st.sampled_from(TRICKY_TEXT)
big_text = st.builds(Big, st.sampled_from(["x", "é", "🙂", "\u0000", "[", "\\"]),
                     st.sampled_from([100, 1000, 5000, 70_000]))
scalars = st.one_of(st.none(), st.booleans(), numbers, short_text)
json_values: st.SearchStrategy[Any] = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(short_text, inner, max_size=3), max_leaves=6)
# Strings a parser may choke on wherever they appear (as a value of any type, or a key).
NASTY_STRINGS = ["\ud800", "\udfff", "\u0000", "", "\ufffe", "a\udc00b"]
hostile = st.one_of(
    st.sampled_from([[], {}, "", 0, -1, 1.5, True, False, None, [[]], [{}], {"": None}]),
    numbers, short_text, st.sampled_from(NASTY_STRINGS), big_text, st.sampled_from(RAW_NESTING),
    json_values)

# Pools are two parts plausible to one part hostile, so that most near-valid requests get
# past validation and exercise the translation and the answer's way back.
CLEAN_IDS = ["task-1", "t", "ctx-1", "cfg-1"]
clean_ids = st.sampled_from(CLEAN_IDS) | st.text(
    alphabet=string.ascii_letters + string.digits + "-_.", min_size=1, max_size=8)
ID_POOL = ["", " ", "a/b", "a:b", "..", ".", "%2F", "\n", "\u0000", "é", "tasks/task-1",
           "x" * 300]
ids = st.one_of(clean_ids, clean_ids, st.sampled_from(ID_POOL) | short_text)
TENANTS = ["", "t03", "t10", "v1", "nope", "T03", "t03/x", "t03:x"]
tenants = st.one_of(st.sampled_from(TENANTS[:4]), st.sampled_from(TENANTS[:4]),
                    st.sampled_from(TENANTS[4:]) | short_text)
# Only IP literals and names that never leave the host: the SSRF guard resolves names.
WEBHOOKS = ["https://93.184.215.14/hook", "http://127.0.0.1:9/hook", "http://10.0.0.1/",
            "http://169.254.169.254/latest", "http://[::1]/", "http://[::ffff:10.0.0.1]/",
            "ftp://93.184.215.14/", "http://", "not a url", "http://0.0.0.0/",
            "https://93.184.215.14:99999/", "http://[fe80::1%25eth0]/", "http://localhost/"]
urls = st.one_of(st.just(WEBHOOKS[0]), st.just(WEBHOOKS[0]), st.sampled_from(WEBHOOKS))
MEDIA_TYPES = ["text/plain", "application/json", "image/png", "", "x", "*/*"]
media_types = st.sampled_from(MEDIA_TYPES)

# ---------------------------------------------------------------- mutations


def _paths(doc: Any, prefix: Path = ()) -> list[Path]:
    out: list[Path] = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            out += _paths(value, (*prefix, index))
    return out


def _get(doc: Any, path: Path) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def _set(doc: Any, path: Path, value: Any) -> Any:
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


def _delete(doc: Any, path: Path) -> Any:
    if not path:
        return doc
    del _get(doc, path[:-1])[path[-1]]
    return doc


Mutation = Callable[[st.DrawFn, Any, Path], Any]


def _copy(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {k: _copy(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_copy(v) for v in doc]
    return doc



def _replace(draw: st.DrawFn, doc: Any, path: Path) -> Any:
    return _set(doc, path, _copy(draw(hostile)))


def _remove(draw: st.DrawFn, doc: Any, path: Path) -> Any:
    return _delete(doc, path)


def _add_key(draw: st.DrawFn, doc: Any, path: Path) -> Any:
    node = _get(doc, path)
    if isinstance(node, dict):
        keys = st.sampled_from(["kind", "@type", "tenant", "__proto__", *NASTY_STRINGS])
        node[draw(short_text | keys)] = _copy(draw(hostile))
    elif isinstance(node, list):
        node.append(_copy(draw(hostile)))
    return doc


def _wrap(draw: st.DrawFn, doc: Any, path: Path) -> Any:
    node = _get(doc, path)
    return _set(doc, path, draw(st.sampled_from([[node], {"value": node}, json.dumps(node)])))


MUTATIONS: list[Mutation] = [_replace, _replace, _remove, _add_key, _wrap]


@st.composite
def mutate(draw: st.DrawFn, doc: Any, max_mutations: int = 3) -> Any:
    """The document with 0..max_mutations random edits (replace a node by a hostile
    value, delete it, add a key, wrap it)."""
    doc = _copy(doc)
    for _ in range(draw(st.integers(0, max_mutations))):
        path = draw(st.sampled_from(_paths(doc)))
        try:
            doc = draw(st.sampled_from(MUTATIONS))(draw, doc, path)
        except (TypeError, KeyError, IndexError):  # e.g. Raw leaves: nothing to edit there
            continue
    return doc


def near_valid(valid: st.SearchStrategy[Any], max_mutations: int = 3) -> st.SearchStrategy[Any]:
    return valid.flatmap(lambda doc: mutate(doc, max_mutations))
