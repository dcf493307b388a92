"""The HTTP edges' typed cut-offs: what the ingress reads from a client's request
(:mod:`gateway.http.request`) and every use of aiohttp beyond its public API, in one
module pinned by a test of the same name (:mod:`gateway.http.aiohttp_internals`)."""
