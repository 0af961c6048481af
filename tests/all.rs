//! One integration-test binary: every test runs the real `ikigai-tools`
//! executable as users and hosts do.

mod acp;
mod assistant;
mod common;
mod examples;
mod front;
mod host;
mod install;
mod mcp;
mod sandbox;
mod tools;
