"""Reading the fast lane's requests (gateway/ingress/fast_lane.py) from a connection's
bytes: which heads are plain, strictly formed JSON-RPC calls the lane serves itself, and
why any other request is aiohttp's. The rule of the lane: whatever aiohttp's parser would
refuse is aiohttp's to answer, so the same bytes get the same answer either way."""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from multidict import CIMultiDict, CIMultiDictProxy

from gateway.http.aiohttp_internals import SINGLETON_HEADERS
from translators import operations as ops

# What aiohttp's parser takes (web_protocol.RequestHandler's defaults): a head within
# these bounds is one aiohttp would read too.
MAX_HEAD = 8190
MAX_FIELDS = 128
# Digits of a Content-Length the lane reads itself: any longer one (leading zeros, or past
# any body limit) is aiohttp's to judge (int() refuses more than 4300 digits).
MAX_LENGTH_DIGITS = 18

# `POST /` or `POST /{tenant}[/]` over HTTP/1.1, the tenant in unreserved characters
# (nothing to percent-decode); token field names, no obs-fold, no control characters.
_REQUEST_LINE = re.compile(rb"POST (/(?:[A-Za-z0-9._~-]+/?)?) HTTP/1\.1")
_FIELDS = re.compile(rb"(?:[!#$%&'*+.^_`|~0-9A-Za-z-]+:[\t\x20-\x7e\x80-\xff]*\r\n)+")
_NOT_HERE = frozenset({"transfer-encoding", "expect", "upgrade"})
# Every field name parse_head looks at twice.
_SPECIAL = frozenset(SINGLETON_HEADERS) | _NOT_HERE | {"content-length", "connection", "host"}
# In a head not complete yet: a line ending other than CRLF (aiohttp refuses it at once).
_ODD_LINE_END = re.compile(rb"(?<!\r)\n|\r(?=[^\n])")
_METHOD = b"POST /"
# A streaming method's name, in either version, is in its body (the decoded method is
# checked again: JSON escapes can spell it otherwise).
_STREAMING_NAMES = [name.encode() for op in ops.OPERATIONS if op.streaming
                    for name in (op.name, op.jsonrpc_v03) if name]
_STREAMING = re.compile(b"|".join(map(re.escape, _STREAMING_NAMES)))
# Every streaming name holds one of these: a body with neither (nearly every unary call)
# names none, and two substring searches cost a third of the pattern's search, which
# tries each name at each byte.
_STREAMING_HINTS = (b"tream", b"ubscribe")
if not all(any(hint in name for hint in _STREAMING_HINTS) for name in _STREAMING_NAMES):
    raise RuntimeError("a streaming method name holds none of _STREAMING_HINTS")


# A keep-alive client sends the same head call after call (the same fields; the same
# Content-Length for a body of the same size), and parse_head's answer is a function of
# those bytes alone: it keeps its answers for the last MAX_KNOWN_HEADS distinct heads
# (each at most MAX_HEAD bytes: 2 MiB at most), the headers a read-only proxy shared by
# the requests of one head. A head with a field that changes on every request (a trace
# or request id) is parsed every time, as before.
MAX_KNOWN_HEADS = 256


@functools.lru_cache(maxsize=MAX_KNOWN_HEADS)
def parse_head(head: bytes) -> tuple[str, CIMultiDictProxy[str], int] | None:
    """(path, headers, content length) of a head (request line and fields, each ending
    in CRLF) the lane serves; None for anything else. Whatever aiohttp's parser would
    refuse (a repeated field it takes once, SINGLETON_HEADERS) is None too: aiohttp
    answers it, so both give the same answer."""
    line_end = head.find(b"\r\n")
    line = _REQUEST_LINE.fullmatch(head, 0, line_end)
    if line is None or _FIELDS.fullmatch(head, line_end + 2) is None:
        return None
    # One decode for every field: names are ASCII (the pattern above), values as aiohttp
    # reads them (UTF-8, undecodable bytes kept as surrogates).
    raw_fields = head[line_end + 2:-2].decode("utf-8", "surrogateescape").split("\r\n")
    if len(raw_fields) > MAX_FIELDS:
        return None
    fields: list[tuple[str, str]] = []
    seen: set[str] = set()
    length: int | None = None
    for raw in raw_fields:
        name, _, value = raw.partition(":")
        value = value.strip(" \t")
        lower = name.lower()
        if lower in _SPECIAL:  # most fields are none of these: one look-up for them
            if lower in SINGLETON_HEADERS:
                if lower in seen:
                    return None
                seen.add(lower)
            if lower == "content-length":
                if not (value.isdigit() and value.isascii()
                        and len(value) <= MAX_LENGTH_DIGITS):
                    return None
                length = int(value)
            elif lower in _NOT_HERE or (lower == "connection" and "upgrade" in value.lower()):
                return None
        fields.append((name, value))
    if length is None or "host" not in seen:  # aiohttp refuses HTTP/1.1 without Host
        return None
    return line.group(1).decode("ascii"), CIMultiDictProxy(CIMultiDict(fields)), length


def may_become_plain(partial: bytes) -> bool:
    """Whether a head whose end has not come yet may still be one the lane serves; when
    not, aiohttp takes it now (its parser answers a broken head at once: waiting for the
    head's end would answer it only at the header deadline)."""
    if not partial.startswith(_METHOD[:len(partial)]) or _ODD_LINE_END.search(partial):
        return False
    line_end = partial.find(b"\r\n")
    if line_end < 0:
        return True
    last = partial.rfind(b"\r\n")
    return (_REQUEST_LINE.fullmatch(partial, 0, line_end) is not None
            and (last == line_end or _FIELDS.fullmatch(partial, line_end + 2, last + 2)
                 is not None))


class LaneCall(NamedTuple):
    """A plain request, read whole from the connection's buffer."""
    head: bytes
    path: str
    headers: CIMultiDictProxy[str]
    body: bytes
    end: int  # where the next request begins in the buffer


def read_request(buffer: bytearray, pos: int, max_body: int) -> LaneCall | str | None:
    """The request at ``pos`` of ``buffer`` if the lane serves it; None while its head
    is still coming; else why aiohttp serves it (a handover reason)."""
    end = buffer.find(b"\r\n\r\n", pos, pos + MAX_HEAD + 4)
    if end < 0:
        if len(buffer) - pos > MAX_HEAD:
            return "long_head"
        return None if may_become_plain(bytes(buffer[pos:pos + MAX_HEAD])) else "not_plain"
    head = bytes(buffer[pos:end + 2])
    parsed = parse_head(head)
    if parsed is None:
        return "not_plain"
    path, headers, length = parsed
    start = end + 4
    if length > max_body:
        return "large_body"  # aiohttp's route refuses it
    if len(buffer) < start + length:
        return "body_pending"  # aiohttp waits for it, bounded
    body = bytes(buffer[start:start + length])
    if _names_stream(body):
        return "stream"
    if len(buffer) > start + length and asks_to_close(headers):
        # Bytes after a request that closes the connection: aiohttp's parser refuses them.
        return "not_plain"
    return LaneCall(head, path, headers, body, start + length)


def _names_stream(body: bytes) -> bool:
    hint, other = _STREAMING_HINTS  # find, not `in`: `in` takes a buffer view first
    return ((body.find(hint) >= 0 or body.find(other) >= 0)
            and _STREAMING.search(body) is not None)


def asks_to_close(headers: CIMultiDictProxy[str]) -> bool:
    """Whether any `Connection` field names `close` (aiohttp reads every one)."""
    values = headers.getall("Connection", ())
    return bool(values) and "close" in (  # most requests have none: no generator for them
        token.strip() for value in values for token in value.lower().split(","))


def checked_until(buffer: bytearray, pos: int) -> int | None:
    """Pipelined requests from ``pos`` on, checked the way aiohttp's parser reads them:
    None if one of them is refused (aiohttp then answers the whole read with one 400),
    else where the checked requests end (a request still coming is not checked)."""
    while pos < len(buffer):
        end = buffer.find(b"\r\n\r\n", pos, pos + MAX_HEAD + 4)
        if end < 0:
            partial = len(buffer) - pos <= MAX_HEAD and may_become_plain(
                bytes(buffer[pos:pos + MAX_HEAD]))
            return pos if partial else None
        parsed = parse_head(bytes(buffer[pos:end + 2]))
        if parsed is None:
            return None
        after = end + 4 + parsed[2]
        if after > len(buffer):
            return pos
        if after < len(buffer) and asks_to_close(parsed[1]):
            return None
        pos = after
    return pos
