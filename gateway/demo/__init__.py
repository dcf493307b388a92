"""Built-in demo agent: a small A2A JSON-RPC agent written directly on aiohttp.

It exists so that `make run` shows the gateway bridging to a real v0.3 peer with
nothing else installed; `--protocol 1.0` serves the same agent on the v1.0 wire. The
public entry points live in `gateway.demo.agent`; this package only splits the
implementation into small modules:

- `wire`: J03 object builders and JSON-RPC error values
- `params`: validation of JSON-RPC params into typed values
- `engine`: in-memory tasks, state changes, event fan-out, background work
- `skills`: what the agent does for each keyword
- `variants`: answering slightly differently (`--answer-variant`)
- `push`: webhook delivery
- `card`: the agent cards
- `methods`: what each v0.3 method does, on J03 values
- `streams`: SSE
- `server`: the aiohttp application, and the v0.3 JSON-RPC dispatch
- `v10`: the v1.0 JSON-RPC edge (the gateway's own translators around `methods`)
- `listing`: ListTasks, which only v1.0 has
- `options`: the command-line options the CLI shares
"""
