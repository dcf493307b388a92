"""Security: who may call (API keys, JWT, mTLS: `authenticator`), what (`authorize`), how
often (`ratelimit`), what credential reaches the backend (`backend_creds`), the policy
applied to one call (`admission`) and the secrets `a2a-gateway keygen` makes (`keygen`);
`service.GatewayAuth` holds it all per tenant. Pure of aiohttp and grpc request objects:
ingresses pass plain header / metadata mappings and the peer certificate. The `auth:`
config section is gateway/config/auth.py; TLS contexts are gateway/tls/.

Nothing is imported here, so that `a2a-gateway keygen` stays light (no aiohttp, grpc or
PyJWT).
"""
