"""memcli's MCP server: the active channel of SPEC.md section 9.

``tools`` holds the operations the server offers, as plain functions over the service
layer (no MCP SDK import, so they can be read and tested alone); ``server`` registers
them with the official MCP Python SDK and runs it over stdio; ``install`` registers the
server in each agent's configuration file. Nothing here is imported by the CLI's other
commands: the SDK (and the pydantic it pulls in) loads only for ``memcli mcp``.
"""
