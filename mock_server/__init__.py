"""A stateful mock of the Extraordinary Amortization Query and PIX Limits Interface, for contract testing.

Code map. A request goes: uvicorn (cli.py; connection.py bounds each connection's time and head size) -> the
route table (app.py: one Route per spec path) ->
pipeline.OperationRunner, whose named steps authorize, open the session, answer an injected fault, read the
body (body.py), validate it against the spec (spec.py), call the operation's handler (routes.py for the
public API, admin.py for /__mock) and respond (encoding.py renders, journal.py records).

Who owns what:
- openapi.yaml, admin/openapi.yaml: the contract; spec.py compiles their schemas into request checks.
- sessions.py: the one owner of state (a Session has a Store, Journal, Faults, Clock and ids).
- faults.py: which armed fault a call gets, by kind; fault_replies.py: how a `reset` (no answer, via connection.py)
  or a `slow_body` goes on the wire.
- store.py: one session's records over its scenario's read-only seed (copy on write); conciliation_index.py:
  which seed event uses an event_conciliation_key, indexed once per seed off the event loop.
- scenarios.py: scenario files -> seeds, every problem located as FILE:LINE:COLUMN (scenario_text.py reads a
  text safely; a valid big file goes the lean way: scenario_stream.py cuts it into batches of events,
  yaml_blocks.py for block YAML, batch_packing.py checks and packs them, by worker processes when it pays;
  seed.py packs the read-only events).
- bounds.py: what a session may hold and how long a connection may take (the --max-*, --journal and
  --*-timeout options); auth.py: the admin token rule; export.py: the state export, off the event loop.
- Pure rules, free of HTTP, state and YAML (tests/unit/test_architecture.py keeps them so): models.py (records
  and status words), limits.py (windows), events.py (the event state machine and its checks), documents.py
  (CPF/CNPJ), clock.py (instants), shapes.py (records <-> JSON shapes), errors.py (one exception per code).
"""
