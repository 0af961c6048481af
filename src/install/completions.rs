//! `ikigai-tools completions bash|zsh|fish`: the completions of both names
//! (`ikigai` and `ikigai-tools`), written from the command tree
//! (`commands`). Each script walks the words typed so far to find which
//! (sub)command is being completed, skipping the value of an option that
//! takes one, then offers that command's options, subcommands and, for
//! its first argument, its operands (tool names after `ikigai call`).

use std::fmt::Write as _;

use super::commands::{self, Command, Opt, ValueKind};

/// The script for `shell` completing both names, or why not.
pub fn script(shell: &str) -> Result<String, String> {
    let trees = [commands::ikigai(), commands::ikigai_tools()];
    let mut out = String::new();
    for tree in &trees {
        out += &for_shell(shell, tree)?;
    }
    Ok(out)
}

/// The script of one name for `shell` (install lays one file per name).
pub fn for_shell(shell: &str, tree: &Command) -> Result<String, String> {
    match shell {
        "bash" => Ok(bash(tree)),
        "zsh" => Ok(zsh(tree)),
        "fish" => Ok(fish(tree)),
        _ => Err(format!(
            "unknown shell '{shell}': choose {}",
            commands::SHELLS.join(", ")
        )),
    }
}

/// The first line of every script: install knows its own files by it.
pub const MARK: &str = "made by `ikigai-tools completions`";

/// Every command of the tree with its path ("" for the root, "sandbox
/// check" below).
fn nodes(tree: &Command) -> Vec<(String, &Command)> {
    fn walk<'a>(path: String, command: &'a Command, out: &mut Vec<(String, &'a Command)>) {
        out.push((path.clone(), command));
        for sub in &command.commands {
            let child = if path.is_empty() {
                sub.name.clone()
            } else {
                format!("{path} {}", sub.name)
            };
            walk(child, sub, out);
        }
    }
    let mut out = Vec::new();
    walk(String::new(), tree, &mut out);
    out
}

/// `tool-name` as part of a shell function's name.
fn ident(name: &str) -> String {
    name.replace('-', "_")
}

/// Single-quoted for any of the three shells' case patterns and words.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn short(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let first = match flat.find(". ") {
        Some(end) => &flat[..end],
        None => flat.trim_end_matches('.'),
    };
    let mut cut: String = first.chars().take(80).collect();
    if first.chars().count() > 80 {
        cut.push_str("...");
    }
    cut
}

fn flags(opt: &Opt) -> Vec<&str> {
    let mut all = vec![opt.long.as_str()];
    all.extend(opt.short.as_deref());
    all
}

/// The case arms that walk the typed words, shared by bash and zsh (their
/// `case` is the same language): an option taking a value sets `want`, a
/// subcommand moves `node` and restarts `args`, another word counts.
fn walk_arms(tree: &Command, zsh: bool) -> String {
    let (open, close) = if zsh { ("(", ")") } else { ("", ")") };
    let mut out = String::new();
    for (path, command) in nodes(tree) {
        let valued: Vec<String> = command
            .options
            .iter()
            .filter(|o| o.value.is_some())
            .flat_map(flags)
            .map(|f| quote(&format!("{path}|{f}")))
            .collect();
        if !valued.is_empty() {
            let _ = writeln!(
                out,
                "            {open}{}{close} want=1 ;;",
                valued.join("|")
            );
        }
        for sub in &command.commands {
            let child = if path.is_empty() {
                sub.name.clone()
            } else {
                format!("{path} {}", sub.name)
            };
            let _ = writeln!(
                out,
                "            {open}{}{close} node={}; args=0 ;;",
                quote(&format!("{path}|{}", sub.name)),
                quote(&child)
            );
        }
    }
    out
}

fn bash(tree: &Command) -> String {
    let f = format!("_{}_complete", ident(&tree.name));
    let mut values = String::new();
    let mut words = String::new();
    for (path, command) in nodes(tree) {
        for opt in command.options.iter().filter(|o| o.value.is_some()) {
            let reply = match opt.value_kind() {
                ValueKind::Choices => format!(
                    "COMPREPLY=($(compgen -W {} -- \"$cur\"))",
                    quote(&opt.choices.join(" "))
                ),
                ValueKind::Dir => "COMPREPLY=($(compgen -d -- \"$cur\"))".into(),
                ValueKind::File => "COMPREPLY=($(compgen -f -- \"$cur\"))".into(),
                _ => "COMPREPLY=()".into(),
            };
            let pats: Vec<String> = flags(opt)
                .into_iter()
                .map(|fl| quote(&format!("{path}|{fl}")))
                .collect();
            let _ = writeln!(values, "            {}) {reply} ;;", pats.join("|"));
        }
        let mut list: Vec<String> = command
            .options
            .iter()
            .flat_map(flags)
            .map(String::from)
            .collect();
        list.extend(command.commands.iter().map(|c| c.name.clone()));
        let mut arm = format!("words={}", quote(&list.join(" ")));
        if !command.operands.is_empty() {
            arm += &format!(
                "; ((args == 0)) && words+=\" \"{}",
                quote(&command.operands.join(" "))
            );
        }
        if command.operand_is_dir {
            arm += "; ((args == 0)) && COMPREPLY=($(compgen -d -- \"$cur\"))";
        }
        let _ = writeln!(words, "        {}) {arm} ;;", quote(&path));
    }
    format!(
        "# bash completion for {name}, {MARK} (run it again after an upgrade)\n\
         {f}() {{\n    \
             local cur=\"${{COMP_WORDS[COMP_CWORD]}}\" prev=\"${{COMP_WORDS[COMP_CWORD-1]}}\"\n    \
             local node='' want='' word words='' i args=0\n    \
             for ((i = 1; i < COMP_CWORD; i++)); do\n        \
                 word=\"${{COMP_WORDS[i]}}\"\n        \
                 if [[ -n $want ]]; then want=''; continue; fi\n        \
                 case \"$node|$word\" in\n{walk}            \
                     *) [[ $word == -* ]] || ((args++)) ;;\n        \
                 esac\n    \
             done\n    \
             COMPREPLY=()\n    \
             if [[ -n $want ]]; then\n        \
                 case \"$node|$prev\" in\n{values}        \
                 esac\n        \
                 return 0\n    \
             fi\n    \
             case \"$node\" in\n{words}    \
             esac\n    \
             COMPREPLY+=($(compgen -W \"$words\" -- \"$cur\"))\n\
         }}\n\
         complete -F {f} {name}\n",
        name = tree.name,
        walk = walk_arms(tree, false),
    )
}

/// `name:description` for zsh's `_describe`, quoted.
fn described(name: &str, about: &str) -> String {
    quote(&format!("{}:{}", name.replace(':', r"\:"), short(about)))
}

fn zsh(tree: &Command) -> String {
    let f = format!("_{}", tree.name);
    let mut values = String::new();
    let mut items = String::new();
    for (path, command) in nodes(tree) {
        for opt in command.options.iter().filter(|o| o.value.is_some()) {
            let action = match opt.value_kind() {
                ValueKind::Choices => format!("compadd -- {}", opt.choices.join(" ")),
                ValueKind::Dir => "_files -/".into(),
                ValueKind::File => "_files".into(),
                _ => "_message -r value".into(),
            };
            let pats: Vec<String> = flags(opt)
                .into_iter()
                .map(|fl| quote(&format!("{path}|{fl}")))
                .collect();
            let _ = writeln!(values, "            ({}) {action} ;;", pats.join("|"));
        }
        let mut list: Vec<String> = Vec::new();
        for opt in &command.options {
            for fl in flags(opt) {
                list.push(described(fl, &opt.help));
            }
        }
        list.extend(
            command
                .commands
                .iter()
                .map(|c| described(&c.name, &c.about)),
        );
        let mut arm = format!("items=({})", list.join(" "));
        if !command.operands.is_empty() {
            arm += &format!(
                "; ((args == 0)) && items+=({})",
                command
                    .operands
                    .iter()
                    .map(|o| quote(&o.replace(':', r"\:")))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
        if command.operand_is_dir {
            arm += "; ((args == 0)) && _files -/";
        }
        let _ = writeln!(items, "        ({}) {arm} ;;", quote(&path));
    }
    format!(
        "#compdef {name}\n\
         # zsh completion for {name}, {MARK} (run it again after an upgrade)\n\
         {f}() {{\n    \
             local node='' want='' word\n    \
             local -i i args=0\n    \
             local -a items\n    \
             for ((i = 2; i < CURRENT; i++)); do\n        \
                 word=${{words[i]}}\n        \
                 if [[ -n $want ]]; then want=''; continue; fi\n        \
                 case \"$node|$word\" in\n{walk}            \
                     (*) [[ $word == -* ]] || ((args++)) ;;\n        \
                 esac\n    \
             done\n    \
             if [[ -n $want ]]; then\n        \
                 case \"$node|${{words[CURRENT-1]}}\" in\n{values}        \
                 esac\n        \
                 return\n    \
             fi\n    \
             case \"$node\" in\n{items}    \
             esac\n    \
             _describe -t words {name} items\n\
         }}\n\
         {f} \"$@\"\n",
        name = tree.name,
        walk = walk_arms(tree, true),
    )
}

fn fish(tree: &Command) -> String {
    let at = format!("__{}_at", ident(&tree.name));
    let name = &tree.name;
    // The walk, in fish's own `switch`.
    let mut walk = String::new();
    for (path, command) in nodes(tree) {
        let valued: Vec<String> = command
            .options
            .iter()
            .filter(|o| o.value.is_some())
            .flat_map(flags)
            .map(|f| quote(&format!("{path}|{f}")))
            .collect();
        if !valued.is_empty() {
            let _ = writeln!(
                walk,
                "            case {}\n                set want 1",
                valued.join(" ")
            );
        }
        for sub in &command.commands {
            let child = if path.is_empty() {
                sub.name.clone()
            } else {
                format!("{path} {}", sub.name)
            };
            let _ = writeln!(
                walk,
                "            case {}\n                set node {}; set args 0",
                quote(&format!("{path}|{}", sub.name)),
                quote(&child)
            );
        }
    }
    let mut lines = String::new();
    for (path, command) in nodes(tree) {
        let here = format!("'{at} {}'", quote(&path).replace('\'', "\\'"));
        for opt in &command.options {
            let mut line = format!("complete -c {name} -n {here}");
            line += &format!(" -l {}", opt.long.trim_start_matches('-'));
            if let Some(s) = &opt.short {
                line += &format!(" -s {}", s.trim_start_matches('-'));
            }
            match opt.value_kind() {
                ValueKind::Switch => {}
                ValueKind::Choices => line += &format!(" -xa {}", quote(&opt.choices.join(" "))),
                ValueKind::Dir => line += " -xa '(__fish_complete_directories)'",
                ValueKind::File => line += " -rF",
                ValueKind::Other => line += " -x",
            }
            line += &format!(" -d {}", quote(&short(&opt.help)));
            lines += &line;
            lines.push('\n');
        }
        for sub in &command.commands {
            let _ = writeln!(
                lines,
                "complete -c {name} -n {here} -a {} -d {}",
                quote(&sub.name),
                quote(&short(&sub.about))
            );
        }
        let first = format!("'{at} {} 0'", quote(&path).replace('\'', "\\'"));
        if !command.operands.is_empty() {
            let _ = writeln!(
                lines,
                "complete -c {name} -n {first} -a {}",
                quote(&command.operands.join(" "))
            );
        }
        if command.operand_is_dir {
            let _ = writeln!(
                lines,
                "complete -c {name} -n {first} -a '(__fish_complete_directories)'"
            );
        }
    }
    format!(
        "# fish completion for {name}, {MARK} (run it again after an upgrade)\n\
         complete -c {name} -f\n\
         # Whether the words typed so far are at (sub)command $argv[1], and, when\n\
         # given, before its argument number $argv[2] + 1.\n\
         function {at}\n    \
             set -l node ''\n    \
             set -l want 0\n    \
             set -l args 0\n    \
             set -l typed (commandline -opc)\n    \
             set -e typed[1]\n    \
             for word in $typed\n        \
                 if test $want = 1\n            \
                     set want 0\n            \
                     continue\n        \
                 end\n        \
                 switch \"$node|$word\"\n{walk}            \
                     case '*'\n                \
                         string match -q -- '-*' $word; or set args (math $args + 1)\n        \
                 end\n    \
             end\n    \
             test \"$node\" = \"$argv[1]\"; or return 1\n    \
             test (count $argv) -lt 2; or test $args = $argv[2]\n\
         end\n\
         {lines}",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shell_has_a_script_and_others_are_named() {
        for shell in commands::SHELLS {
            let text = script(shell).unwrap();
            assert!(text.contains(MARK), "{shell}");
            assert!(
                text.contains("file_read"),
                "{shell}: the tools for ikigai call"
            );
            assert!(text.contains("--timeout"), "{shell}");
        }
        assert!(script("tcsh").unwrap_err().contains("bash, zsh, fish"));
    }

    #[test]
    fn quoting_survives_a_quote() {
        assert_eq!(quote("it's"), r"'it'\''s'");
    }
}
