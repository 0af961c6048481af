//! What the three web tools share: typed arguments, the HTTP client and its
//! limits, the guard that keeps web_fetch on the public internet, credential
//! lookup, domain filters, the search answer and its error messages, content
//! detection and charset decoding, HTML to markdown (a tokenizer, the
//! element rules, a markdown writer), plain text from HTML, URL resolution,
//! and the stub answers.

pub mod content;
pub mod credentials;
pub mod domains;
mod entities;
pub mod guard;
pub mod http;
pub mod markdown;
mod names;
mod readable;
pub mod search;
pub mod stub;
mod survey;
mod tags;
pub mod text;
mod tokenizer;
pub mod url;
mod writer;
