//! What people add to the assistant from files: the agents a `task` call
//! may name (`agents`), read from the person's folders and, for a trusted
//! project only (decision 87), the project's.

pub mod agents;
