//! Tests by tool: each module drives one tool through its own name.

mod apply_patch;
mod bash;
mod file_edit;
mod file_read;
mod file_support;
mod file_write;
mod glob;
mod grep;
mod pressure;
mod protocol;
mod web_fetch;
mod web_search_brave;
mod web_search_google;
mod web_support;
