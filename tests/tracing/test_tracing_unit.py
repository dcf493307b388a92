"""gateway/observability/tracing.py without a gateway: the config section and the log's trace id."""

from __future__ import annotations

import pytest

from gateway.call import CallContext, ClientFacts
from gateway.config.models import ConfigError, parse_config
from gateway.observability import tracing

TENANTS = {"t": {"backend": {"url": "http://127.0.0.1:1/", "version": "0.3"}}}


def test_config_section() -> None:
    assert parse_config({"tenants": TENANTS}).tracing.exporter == "none"
    config = parse_config({"tenants": TENANTS, "tracing": {
        "exporter": "otlp-grpc", "endpoint": "collector:4317", "sample_ratio": 0.25,
        "headers": {"x-api-key": "k"}}}).tracing
    assert (config.exporter, config.service_name, config.sample_ratio) == (
        "otlp-grpc", "a2a-gateway", 0.25)
    for bad in ({"exporter": "jaeger"}, {"sample_ratio": 2}, {"nope": 1}):
        with pytest.raises(ConfigError):
            parse_config({"tenants": TENANTS, "tracing": bad})


def test_off_takes_only_the_client_headers() -> None:
    assert not tracing.enabled
    ctx = CallContext(ClientFacts("JSONRPC"), "1.0")
    tracing.take(ctx, {})
    assert ctx.trace is None and tracing.trace_id(ctx) is None
    assert tracing.outgoing(ctx) == {}
    tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    tracing.take(ctx, {"traceparent": tp, "tracestate": "a=b", "other": "x"})
    assert tracing.outgoing(ctx) == {"traceparent": tp, "tracestate": "a=b"}
    assert tracing.trace_id(ctx) == "0af7651916cd43dd8448eb211c80319c"
    tracing.take_metadata(ctx, {"traceparent": ["junk"], "tracestate": ["x" * 600]})
    assert tracing.outgoing(ctx) == {"traceparent": "junk"}  # passed on, never logged
    assert tracing.trace_id(ctx) is None
