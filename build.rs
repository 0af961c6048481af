//! Links the executable at a fixed address (not position-independent).
//!
//! Every tool call is a process start, and a position-independent
//! executable of this size carries tens of thousands of relative
//! relocations that the loader applies at each start, writing every page of
//! `.data.rel.ro`. Linked at a fixed address the linker resolves them once,
//! and a start costs little more than `cat`'s (bench/RESULTS.md, `call`).
//! Only the executables get the flag: build scripts and proc-macros keep
//! the defaults.

fn main() {
    println!("cargo:rustc-link-arg-bins=-no-pie");
    println!("cargo:rerun-if-changed=build.rs");
}
