"""The agent tools: one definition each, one dispatcher for the MCP server and the HTTP twin."""
