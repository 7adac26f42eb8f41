"""The mock as an MCP server for agents: every operation of both specs reachable as tools, run in process through
the app. What the porch (cli.py, the admin plane) needs without the SDK is here; the SDK is the `mcp` extra."""

DEFAULT_PRESET, API_PRESET, ALL_PRESET = "default", "api", "all"
PRESETS = (DEFAULT_PRESET, API_PRESET, ALL_PRESET)  # the tool lists: `--tools NAME`, `/__mock/mcp?tools=NAME`
EXTRA = "mcp"
INSTALL_LINE = "pip install 'pix-limits-mock-server[mcp]'"
MISSING_EXTRA = f"MCP needs the {EXTRA} extra (the official MCP SDK), which is not installed: {INSTALL_LINE}"
