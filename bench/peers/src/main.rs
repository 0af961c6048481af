//! `peers htmd FILE` and `peers html2md FILE` print FILE's HTML converted to
//! markdown by that crate (what the fetch benchmark times against
//! web_fetch); `peers tokens FILE...` prints each file's size in o200k
//! tokens (what the quality table counts).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((mode, files)) = args.split_first() else {
        eprintln!("usage: peers htmd|html2md|tokens FILE...");
        return ExitCode::from(2);
    };
    let read = |path: &str| match std::fs::read(path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => {
            eprintln!("peers: {path}: {e}");
            std::process::exit(1);
        }
    };
    match mode.as_str() {
        "htmd" | "html2md" => {
            for file in files {
                let html = read(file);
                let markdown = if mode == "htmd" {
                    match htmd::convert(&html) {
                        Ok(md) => md,
                        Err(e) => {
                            eprintln!("peers: htmd: {e}");
                            return ExitCode::from(1);
                        }
                    }
                } else {
                    html2md::parse_html(&html)
                };
                println!("{markdown}");
            }
        }
        "tokens" => {
            let bpe = tiktoken_rs::o200k_base().expect("o200k is bundled");
            for file in files {
                let text = read(file);
                println!("{}", bpe.encode_ordinary(&text).len());
            }
        }
        other => {
            eprintln!("peers: unknown mode '{other}'");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
