"""The mock as an MCP server for agents: a tool per operation of both specs, run in process through the app."""
