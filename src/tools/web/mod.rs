//! What the three web tools share (web-tools.md; spec README, decisions 5,
//! 8, 10, 12-15): the HTTP client and its limits, credential lookup, domain
//! filters, the search answer and its error messages, content detection and
//! charset decoding, HTML to markdown (a tokenizer, the element rules,
//! a markdown writer), the guard that keeps web_fetch on the public
//! internet, URL resolution, and the stub answers.

pub mod args;
pub mod content;
pub mod credentials;
pub mod domains;
pub mod guard;
pub mod http;
pub mod markdown;
pub mod search;
pub mod stub;
mod tags;
pub mod text;
mod tokenizer;
pub mod url;
mod writer;
