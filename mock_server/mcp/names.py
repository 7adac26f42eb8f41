"""What the porch (cli.py, the admin plane) needs of MCP without the SDK: the tool lists' names, the extra's
install line. The SDK is the `mcp` extra, imported only when MCP is used."""

DEFAULT_PRESET, API_PRESET, ALL_PRESET = "default", "api", "all"
PRESETS = (DEFAULT_PRESET, API_PRESET, ALL_PRESET)  # the tool lists: `--tools NAME`, `/__mock/mcp?tools=NAME`
EXTRA = "mcp"
INSTALL_LINE = "pip install 'pix-limits-mock-server[mcp]'"
MISSING_EXTRA = f"MCP needs the {EXTRA} extra (the official MCP SDK), which is not installed: {INSTALL_LINE}"
