//! The Model Context Protocol, both ways. `server` is `ikigai-tools mcp`:
//! it offers every tool the host discovers to any MCP client (an editor, an
//! agent) over stdio or Streamable HTTP. `client` lets the host use other
//! people's MCP servers as tools. `protocol` holds what both halves say on
//! the wire: JSON-RPC 2.0 messages, the protocol revisions, the error codes.
//!
//! The host's runtime may use `client` and `protocol`; only the front uses
//! `server`, which itself runs tools through the host.

pub mod client;
pub mod protocol;
pub mod server;
