"""Built-in demo agent: a small A2A v0.3 JSON-RPC agent written directly on aiohttp.

It exists so that `make run` shows the gateway bridging to a real v0.3 peer with
nothing else installed. The public entry points live in `gateway.demo.agent`;
this package only splits the implementation into small modules:

- `wire`: J03 object builders and JSON-RPC error values
- `params`: validation of JSON-RPC params into typed values
- `engine`: in-memory tasks, state changes, event fan-out, background work
- `skills`: what the agent does for each keyword
- `push`: webhook delivery
- `card`: the agent cards
- `server`: the aiohttp application (JSON-RPC dispatch and SSE)
"""
