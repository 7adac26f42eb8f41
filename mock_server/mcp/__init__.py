"""The mock as an MCP server for agents: every operation of both specs reachable, run in process by the app."""
