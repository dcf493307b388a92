"""observe.finish is a call's one exit: a second finish of the same call (a path that
ended the call, then failed writing its answer) counts, logs and traces nothing more."""

from __future__ import annotations

from gateway.call import CallContext, ClientFacts
from gateway.observability import metrics
from gateway.observability.observe import finish
from translators.errors import a2a_error


def _calls(tenant: str) -> float:
    metrics.flush()
    value = metrics.CALLS.labels(tenant, "GetTask", "1.0", "JSONRPC", "none", "none",
                                 "ok")._value.get()
    return float(value)


def test_a_call_is_finished_once() -> None:
    ctx = CallContext(ClientFacts("JSONRPC"), "1.0")
    ctx.outcome.tenant = "finish-once"
    before = _calls("finish-once")
    finish(ctx, "GetTask", None)
    assert ctx.finished and ctx.operation == "GetTask" and ctx.error is None
    finish(ctx, "GetTask", a2a_error("InternalError"))  # too late: changes nothing
    assert _calls("finish-once") == before + 1
    assert ctx.error is None  # the access line still says how the call ended
