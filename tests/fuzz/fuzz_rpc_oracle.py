"""What a JSON-RPC request may be answered with (README "JSON-RPC", "Errors").

The body is read like a reference implementation would: too large → -32600; not JSON →
-32700; not an object, a batch, no `jsonrpc: "2.0"`, no string method, or an id that is
not a string/number/null → -32600; an unknown method → -32601; a known method with an
A2A-Version the gateway does not serve → -32009. Otherwise any answer of the method's
version (a result of its type, or an error of its dialect).

Where the README leaves room, every reasonable reading is accepted: the header may be
checked before the body; numbers no A2A field holds (NaN, 1e400, integers past 64 bits)
may be refused as not JSON, not a request or bad params, or read as null; a fractional
id may be refused; an envelope error may be in the dialect of the header or the method.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

from tests.fuzz.fuzz_checks import HugeInt, json_int, strict_json
from tests.fuzz.fuzz_checks_http import RpcExpect
from tests.fuzz.fuzz_documents import RPC_BY_NAME
from tests.fuzz.fuzz_http import (
    SERVED,
    declared_version,
    fallback_dialects,
    over_limit,
    version_status,
)
from tests.fuzz.fuzz_run import HttpRequest

KNOWN_TENANTS = {"", "t03", "t10", "v1"}
ENVELOPE_CODES: dict[str, frozenset[int] | None] = {
    "bad": frozenset({-32700}), "deep": frozenset({-32700, -32600}), "odd": None}
# Numbers a gateway cannot carry may be refused as not JSON, not a request, or bad params.
NUMBER_CODES = frozenset({-32700, -32600, -32602})


def _lenient(body: bytes) -> Any:
    try:
        return json.loads(body, parse_int=json_int)
    except (ValueError, RecursionError):
        return None


def _odd(value: Any) -> bool:
    """A number no A2A field holds: not finite, or an integer past 64 bits."""
    if type(value) is float:
        return not math.isfinite(value)
    return isinstance(value, HugeInt) or (type(value) is int and not -(2**64) < value < 2**64)


def _odd_numbers(doc: Any) -> bool:
    if isinstance(doc, dict):
        return any(_odd_numbers(v) for v in doc.values())
    if isinstance(doc, list):
        return any(_odd_numbers(v) for v in doc)
    return _odd(doc)


def _nulled(doc: Any) -> Any:
    """The document with those numbers read as null."""
    if isinstance(doc, dict):
        return {k: _nulled(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_nulled(v) for v in doc]
    return None if _odd(doc) else doc


def parse_body(body: bytes) -> tuple[str, Any]:
    """(kind, document): "ok"; "numbers" (NaN/Infinity, 1e400, integers no A2A field
    holds; the document as Python's parser reads it); "deep" (nesting a parser may
    refuse); "odd" (not UTF-8 JSON, but a lenient parser reads it: UTF-16, a BOM);
    "bad" (not JSON)."""
    try:
        doc = strict_json(body.decode("utf-8"))
    except RecursionError:
        return "deep", None
    except UnicodeDecodeError:
        doc = _lenient(body)
        return ("odd", doc) if doc is not None else ("bad", None)
    except ValueError:
        doc = _lenient(body)
        return ("numbers", doc) if doc is not None else ("bad", None)
    try:
        return ("numbers" if _odd_numbers(doc) else "ok"), doc
    except RecursionError:
        return "deep", None


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _valid_id(rid: Any) -> bool:
    return rid is None or type(rid) in (str, int) or (type(rid) is float and math.isfinite(rid))


def rpc_expect(req: HttpRequest) -> RpcExpect:
    declared, clear = declared_version(req.headers, req.target)
    status = version_status(declared) if clear else "ambiguous"
    fallback = fallback_dialects(req.headers, req.target)
    extra = set()
    if status not in SERVED:
        extra.add(-32009)  # the header may be refused before the body is read
    if req.target.partition("?")[0].strip("/") not in KNOWN_TENANTS:
        extra.add(-32602)  # an unknown tenant may be refused first
    if over_limit(req.body):
        return RpcExpect(fallback, None, frozenset({-32600} | extra))
    kind, doc = parse_body(req.body)
    if kind == "numbers":
        # Refused as such, or read as null (and the envelope judged without them).
        expect = _expect_document(_nulled(doc), status, fallback, extra)
        codes = None if expect.codes is None else expect.codes | NUMBER_CODES
        return replace(expect, rid=None if _odd(expect.rid) else expect.rid, codes=codes,
                       null_id_ok=(codes or frozenset()) | expect.null_id_ok | NUMBER_CODES)
    if kind != "ok":
        codes = ENVELOPE_CODES[kind]
        return RpcExpect(fallback, None, None if codes is None else codes | extra)
    return _expect_document(doc, status, fallback, extra)


def _expect_document(doc: Any, status: str, fallback: frozenset[str],
                     extra: set[int]) -> RpcExpect:
    if not isinstance(doc, dict):
        return RpcExpect(fallback, None, frozenset({-32600} | extra))  # a batch, or a scalar
    name, rid = doc.get("method"), doc.get("id")
    method = RPC_BY_NAME.get(name) if isinstance(name, str) else None
    if method is not None:
        fallback |= {method.version}  # the method name also tells the caller's version
    # A fractional id may be refused as not a request (JSON-RPC: SHOULD NOT use them), and
    # so may a string id that is not text (a lone surrogate): which check comes first,
    # the id's or the version's, is left open.
    fractional = type(rid) is float or (isinstance(rid, str) and not _is_text(rid))
    if fractional:
        extra = extra | {-32600}
    if doc.get("jsonrpc") != "2.0" or not isinstance(name, str) or not _valid_id(rid):
        return RpcExpect(fallback, rid if _valid_id(rid) else None, frozenset({-32600} | extra))
    if method is None:
        return RpcExpect(fallback, rid, frozenset({-32601} | extra))
    if status == "unsupported":
        codes = {-32009, -32600} if fractional else {-32009}
        return RpcExpect(frozenset(SERVED), rid, frozenset(codes), method)
    versions = frozenset(SERVED) if status == "ambiguous" else frozenset({method.version})
    return RpcExpect(versions | fallback if fractional else versions, rid, None, method)
