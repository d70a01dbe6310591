"""The MCP server for the agent tools: Streamable HTTP at /mcp, stateless, JSON responses, an OAuth resource server."""
