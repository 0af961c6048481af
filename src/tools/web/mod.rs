//! What the three web tools share (web-tools.md; spec README, decisions 5,
//! 8, 10, 12-15): the HTTP client and its limits, credential lookup, domain
//! filters, the search answer and its error messages, content detection and
//! charset decoding, HTML to markdown, and the stub answers.

pub mod content;
pub mod credentials;
pub mod domains;
pub mod guard;
mod handlers;
pub mod http;
pub mod markdown;
pub mod search;
pub mod stub;
pub mod url;
