//! The two ways a tool is called, named once for both sides: the tool's
//! runner, which finds out from its command line which one its caller
//! speaks, and the host, which remembers from discovery which one a tool
//! answered. See docs/protocols.md.

/// How a tool takes its arguments (decision 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Answered `--schema`; arguments as JSON on stdin.
    Ikigai,
    /// Answered only `--describe`; arguments as JSON in `$1`, stdin `/dev/null`.
    Shellclaw,
    /// A tool of an MCP server: the host's MCP client carries its calls
    /// (never a tool process of ours).
    Mcp,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Ikigai => "ikigai",
            Protocol::Shellclaw => "shellclaw",
            Protocol::Mcp => "mcp",
        }
    }

    /// The flag that prints this protocol's schema (none for MCP tools,
    /// which their server lists).
    pub fn schema_flag(self) -> &'static str {
        match self {
            Protocol::Ikigai => "--schema",
            Protocol::Shellclaw => "--describe",
            Protocol::Mcp => "",
        }
    }
}
