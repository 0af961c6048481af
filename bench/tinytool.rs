//! A minimal third-party tool for the discover-200 benchmark: the binary
//! answers `--schema` (and `--describe`) with a schema named after the link it
//! was called through (`t042` -> `t042`), so 200 links to it are 200 distinct
//! tools. ikigai-tools itself cannot be that: its links are named after its own
//! nine tools. Compiled by bench/bench.py with `rustc -O`; not part of the crate.

use std::path::Path;

fn main() {
    let argv0 = std::env::args().next().unwrap_or_default();
    let name = Path::new(&argv0)
        .file_name()
        .map(|n| n.to_string_lossy().replace('-', "_"))
        .unwrap_or_default();
    match std::env::args().nth(1).as_deref() {
        Some("--schema") | Some("--describe") => println!(
            "{{\"name\":\"{name}\",\"description\":\"Benchmark tool {name}: echoes ok\",\
             \"parameters\":{{\"type\":\"object\",\"properties\":{{\"text\":\
             {{\"type\":\"string\",\"description\":\"Ignored\"}}}},\"required\":[]}}}}"
        ),
        _ => print!("{{\"output\":\"ok\"}}"),
    }
}
