"""An MCP server written with the official MCP Python SDK (mcp 2.x, the
environment scripts/mcpservers.sh makes for mcp-server-time), serving on
stdio what the tests need to see exactly what a Python server receives:

- echo(x): any JSON value; returns its Python type and repr;
- as_float(x: float): a number, as the schema says; returns the same.
"""

from typing import Any

from mcp.server.mcpserver import MCPServer

server = MCPServer('echo')


@server.tool()
def echo(x: Any) -> str:
    """Returns the type and repr of x as the server received it."""
    return f'{type(x).__name__} {x!r}'


@server.tool()
def as_float(x: float) -> str:
    """Returns the type and repr of x, which the schema says is a number."""
    return f'{type(x).__name__} {x!r}'


if __name__ == '__main__':
    server.run()
