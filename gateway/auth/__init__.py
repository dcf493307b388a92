"""Security: who may call (API keys, JWT, mTLS: `authenticator`), what (`authorize`), how
often (`ratelimit`), what credential reaches the backend (`backend_creds`), and TLS
(`tls`); `service.GatewayAuth` holds it all per tenant. Pure of aiohttp and grpc request
objects: ingresses pass plain header / metadata mappings and the peer certificate.

Nothing is imported here: `gateway.config` imports `gateway.config.auth`, which must stay
light (no aiohttp, grpc or PyJWT at config-check time).
"""
