//! The MCP client (in progress).
