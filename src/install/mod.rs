//! Installing the binary where people look for programs, from the binary
//! itself (decision 89), so `cargo install` and a release archive end the
//! way `symlinks.sh` does:
//!
//! - `ikigai-tools install [PREFIX] [--uninstall]` (`lay`): the binary in
//!   `PREFIX/bin`, `bin/ikigai` and a link per tool, the completions and
//!   man pages under `PREFIX/share`, and a manifest of all of it;
//! - `ikigai-tools completions bash|zsh|fish` (`completions`);
//! - `ikigai-tools manpage [ikigai|ikigai-tools]` (`manpage`).
//!
//! The completions and pages come from one tree of both command lines
//! (`commands`), read from the same tables `--help` prints.

pub mod commands;
pub mod completions;
mod lay;
pub mod manpage;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use argh::FromArgs;

use crate::exit;

#[derive(FromArgs, Debug)]
/// ikigai-tools install: copy this binary into PREFIX/bin, link bin/ikigai
/// and PREFIX/libexec/ikigai/TOOL to it, and lay the completions and man
/// pages under PREFIX/share, with a manifest of what was laid. Nothing that
/// is not ikigai's is replaced.
pub struct InstallOptions {
    /// remove what the last install laid (its manifest), leaving any path
    /// changed since
    #[argh(switch)]
    pub uninstall: bool,

    /// where to install (default ~/.local)
    #[argh(positional, arg_name = "PREFIX")]
    pub prefix: Option<PathBuf>,
}

/// The help argh prints for `install`, for the command tree.
pub fn install_help() -> String {
    match InstallOptions::from_args(&["ikigai-tools install"], &["--help"]) {
        Err(exit) => exit.output,
        Ok(_) => String::new(),
    }
}

/// `ikigai-tools install ...`.
pub fn install(args: &[OsString]) -> ExitCode {
    let Some(words) = utf8(args, "install") else {
        return ExitCode::from(exit::USAGE);
    };
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let options = match InstallOptions::from_args(&["ikigai-tools install"], &words) {
        Ok(options) => options,
        Err(early) => {
            return if early.status.is_ok() {
                crate::out::print_out(early.output.as_bytes(), true);
                ExitCode::SUCCESS
            } else {
                eprintln!("{}", early.output.trim_end());
                ExitCode::from(exit::USAGE)
            };
        }
    };
    let prefix = match lay::prefix(options.prefix.as_deref()) {
        Ok(prefix) => prefix,
        Err(e) => {
            eprintln!("ikigai-tools install: {e}");
            return ExitCode::from(exit::USAGE);
        }
    };
    let done = if options.uninstall {
        lay::uninstall(&prefix)
    } else {
        lay::install(&prefix)
    };
    match done {
        Ok(said) => {
            crate::out::print_out(said.as_bytes(), false);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ikigai-tools install: {e}");
            ExitCode::from(exit::FAILURE)
        }
    }
}

/// `ikigai-tools completions SHELL`.
pub fn completions(args: &[OsString]) -> ExitCode {
    let Some(words) = utf8(args, "completions") else {
        return ExitCode::from(exit::USAGE);
    };
    let [shell] = words.as_slice() else {
        eprintln!(
            "usage: ikigai-tools completions {}",
            commands::SHELLS.join("|")
        );
        return ExitCode::from(exit::USAGE);
    };
    answer(completions::script(shell), "completions")
}

/// `ikigai-tools manpage [NAME]`.
pub fn manpage(args: &[OsString]) -> ExitCode {
    let Some(words) = utf8(args, "manpage") else {
        return ExitCode::from(exit::USAGE);
    };
    let name = match words.as_slice() {
        [] => "ikigai-tools",
        [name] => name.as_str(),
        _ => {
            eprintln!("usage: ikigai-tools manpage [ikigai|ikigai-tools]");
            return ExitCode::from(exit::USAGE);
        }
    };
    answer(manpage::page(name), "manpage")
}

fn answer(text: Result<String, String>, what: &str) -> ExitCode {
    match text {
        Ok(text) => {
            crate::out::print_out(text.as_bytes(), false);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ikigai-tools {what}: {e}");
            ExitCode::from(exit::USAGE)
        }
    }
}

fn utf8(args: &[OsString], what: &str) -> Option<Vec<String>> {
    args.iter()
        .map(|a| {
            a.clone().into_string().map_err(|bad| {
                eprintln!(
                    "ikigai-tools {what}: argument is not UTF-8: {}",
                    bad.to_string_lossy()
                )
            })
        })
        .collect::<Result<_, _>>()
        .ok()
}
