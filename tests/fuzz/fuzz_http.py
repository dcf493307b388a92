"""What JSON-RPC and REST requests share: headers, A2A-Version values, query strings,
bodies, and the version rule the oracles apply (README "Version negotiation")."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, unquote

from hypothesis import strategies as st

from tests.fuzz.fuzz_documents import V03, V10
from tests.fuzz.fuzz_values import MAX_BODY_BYTES, Raw, encode, json_values, mutate

Headers = tuple[tuple[str, str], ...]

# ---------------------------------------------------------------- A2A-Version

SERVED = (V03, V10)
# Values the gateway serves, in the spellings the README allows.
SUPPORTED_VERSIONS = ["0.3", "1.0", "1.0.1", "0.3.0", " 1.0 ", "01.00", "1.00", "00.3"]
# Values it must refuse with VersionNotSupportedError.
UNSUPPORTED_VERSIONS = ["1", "1.", ".1", "abc", "0.5", "2.0", "1.9", "1.1", "0.2", "1.0a",
                        "v1.0", "1,0", "-1.0", "1.-1", "99999999999999999999.0",
                        "1." + "9" * 5000, "9" * 5000 + ".0", "0." + "0" * 4400 + "3", "x" * 5000]
# Unicode digits: what they mean is not specified; they must not break anything.
ODD_VERSIONS = ["\u0661.\u0660", "².0", "1.²", "1.0.x", "1.0.-1"]
VERSION_VALUES = [*SUPPORTED_VERSIONS, *UNSUPPORTED_VERSIONS, *ODD_VERSIONS, ""]
versions = st.sampled_from(VERSION_VALUES)
_NUMERIC = re.compile(r"(\d+)\.(\d+)(\.\d+)?", re.ASCII)


def version_status(value: str | None) -> str:
    """"0.3", "1.0", "unsupported" or "ambiguous" (the README does not say)."""
    if value is None or not value.strip():
        return V03
    value = value.strip()
    m = _NUMERIC.fullmatch(value)
    if m:
        major, minor = (g.lstrip("0") or "0" for g in m.group(1, 2))
        version = f"{major}.{minor}"
        return version if version in SERVED else "unsupported"
    if not value.isascii() or re.match(r"\d+\.\d+\.", value, re.ASCII):
        return "ambiguous"
    return "unsupported"


def declares_1x(value: str | None) -> bool:
    """A2A-Version says major 1 (`1.0`, `1.9`, `01.00`, `1.`)."""
    return value is not None and re.match(r"0*1\.", value.strip(), re.ASCII) is not None


def declared_version(headers: Headers, target: str) -> tuple[str | None, bool]:
    """The A2A-Version a request declares (header, else query), and whether that is
    clear: an empty header beside a query value is read either way."""
    header = next((v for k, v in headers if k.lower() == "a2a-version"), None)
    query = query_params(target).get("A2A-Version")
    if header:
        return header, True
    if header is not None and query is not None:
        return query, False
    return query, True


def fallback_dialects(headers: Headers, target: str) -> frozenset[str]:
    """The dialects an answer may take before the request has said its version."""
    value, clear = declared_version(headers, target)
    status = version_status(value)
    if clear and status in SERVED:
        return frozenset({status})
    return frozenset(SERVED)


def query_params(target: str) -> dict[str, str]:
    _, _, query = target.partition("?")
    out: dict[str, str] = {}
    for pair in query.split("&"):
        key, _, value = pair.partition("=")
        if key:
            out.setdefault(unquote(key), unquote(value))
    return out


# ---------------------------------------------------------------- headers and queries

CONTENT_TYPES = ["application/json", "application/a2a+json", "application/json; charset=utf-8",
                 "text/plain", "application/x-www-form-urlencoded", "application/vnd.x+json",
                 "multipart/form-data; boundary=x", "", "garbage", "application/json; charset=utf-16"]
EXTENSIONS = ["https://ext.example/a", "a,b,,c", " , ", "x" * 3000, "https://ext.example/a" * 3]
REQUEST_IDS = ["req-1", "", "x" * 200, "a b", "../../etc", "é", "${jndi}"]
ACCEPTS = ["application/json", "text/event-stream", "*/*", "application/a2a+json", ""]
header_values = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20)


@st.composite
def headers(draw: st.DrawFn, content_type: bool = True) -> Headers:
    out: list[tuple[str, str]] = []
    if content_type and draw(st.integers(0, 9)):
        out.append(("Content-Type", draw(st.sampled_from(CONTENT_TYPES) | header_values)))
    if draw(st.booleans()):
        served = st.sampled_from(["1.0", "0.3", ""])
        out.append(("A2A-Version", draw(st.one_of(served, served, versions | header_values))))
    for name, pool in (("X-Request-ID", REQUEST_IDS), ("A2A-Extensions", EXTENSIONS),
                       ("X-A2A-Extensions", EXTENSIONS), ("Accept", ACCEPTS),
                       ("Authorization", ["Bearer x", "", "x" * 3000])):
        if not draw(st.integers(0, 4)):
            out.append((name, draw(st.sampled_from(pool) | header_values)))
    return tuple(out)


QUERY_KEYS = ["historyLength", "history_length", "pageSize", "pageToken", "contextId", "status",
              "statusTimestampAfter", "includeArtifacts", "alt", "A2A-Version", "tenant", ""]
QUERY_VALUES = ["-1", "0", "1", "2147483648", "9223372036854775808", "1" + "0" * 30,
                "1" * 5000, "abc", "", "1.5", "1e3", "0x10", "\u0661", "true", "TRUE", "2", "sse",
                "TASK_STATE_WORKING", "working", "nope", "2026-01-01T00:00:00Z", "yesterday",
                "9999-99-99T99:99:99Z", "1,2,3", "%", "%zz", "\u0000", "\n", "é"]


@st.composite
def queries(draw: st.DrawFn) -> str:
    """`?...` (or ''), percent-encoded; repeated keys and raw oddities included."""
    pairs = draw(st.lists(st.tuples(st.sampled_from(QUERY_KEYS) | st.text(max_size=6),
                                    st.sampled_from(QUERY_VALUES)
                                    | versions
                                    | st.text(max_size=8)), max_size=4))
    if draw(st.integers(0, 9)) == 0:
        return "?" + draw(st.sampled_from(["&&&", "=", "a=%", "a=%zz", "?", "a=1=2", "%00=1"]))
    if not pairs:
        return ""
    return "?" + "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in pairs)


# aiohttp's HTTP parser answers a request line over 8190 bytes itself, before the gateway
# sees it (and a method it does not know): those are the framework's, not fuzzed here.
MAX_TARGET = 8000


def target(path: str, query: str) -> str:
    """path + query, the query dropped if the request line would get too long."""
    return path + query if len(path) + len(query) <= MAX_TARGET else path


# ---------------------------------------------------------------- bodies

SPECIAL_BODIES = [
    b"", b" ", b"\n", b"[" * 100_000, b"[" * 60_000, b"{" * 60_000,
    b"[" * 30_000 + b"]" * 30_000, b'{"a":' * 12_000, b"\xff\xfe\xfd", b"\xef\xbb\xbf{}",
    '{"jsonrpc":"2.0","id":1,"method":"message/send"}'.encode("utf-16"), b"null", b"true",
    b"1e400", b"NaN", b"-Infinity", b"{}", b"[]", b'"str"', b"\x00", b"{}{}", b"{} x",
    b'{"jsonrpc":"2.0","id":1,"method":"SendMessage"', b"{'a': 1}", b'{"a":1,"a":2}',
    b'{"\\ud800":1}', b'"\\ud800"', b"0" * 5000, b"[" + b"1," * 20_000 + b"1]",
]


def over_limit(body: bytes) -> bool:
    return len(body) > MAX_BODY_BYTES


@st.composite
def bodies(draw: st.DrawFn, document: st.SearchStrategy[Any]) -> bytes:
    """A request body: mostly ``document`` near-valid; else random JSON, random bytes,
    special cases, or a valid document pushed over the size limit."""
    kind = draw(st.sampled_from(["doc"] * 8 + ["json", "bytes", "special", "oversize"]))
    if kind == "doc":
        text = encode(draw(document), ascii_only=draw(st.integers(0, 2)) > 0)
    elif kind == "json":
        text = encode(draw(json_values))
    elif kind == "bytes":
        return draw(st.binary(max_size=300))
    elif kind == "special":
        return draw(st.sampled_from(SPECIAL_BODIES))
    else:
        pad = draw(st.sampled_from([1, 10, 30_000]))
        text = " " * (MAX_BODY_BYTES + pad - 2) + encode(draw(document))
    return text.encode("utf-8", "surrogatepass")


def mutated(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Untouched a third of the time, else lightly mutated, sometimes heavily."""
    return valid.flatmap(lambda doc: st.sampled_from([0, 0, 0, 1, 1, 2, 3, 6]).flatmap(
        lambda n: mutate(doc, n)))


valid_ids = st.integers(-(2**63), 2**63) | st.text(max_size=10)
raw_ids = st.one_of(*[valid_ids] * 6, st.integers(-(2**64), 2**64), st.none(),
                    st.floats(allow_nan=False), st.sampled_from(
                        [True, False, {}, [], [1], {"a": 1}, 1.5, 2**53 + 1, -0.0, 1e308,
                         Raw("NaN"), Raw("Infinity"), Raw("1e400"), Raw("1" * 5000),
                         Raw("1.0"), Raw("1E2")]))
