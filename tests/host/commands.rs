//! The command line and the slash commands (decision 20): `ikigai tools`,
//! `ikigai tools NAME`, and `/tool`, `/tool NAME`, `/refresh`, `/help`,
//! `/quit` on lines from a non-terminal stdin, with their exact texts.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

use serde_json::json;

use super::Dirs;
use crate::common::{link, run};

fn two_tools() -> Dirs {
    let d = Dirs::new();
    d.sys_tool("tool.sh", "echo");
    d.user_tool("shellclaw.sh", "claw");
    d.user_tool("broken.sh", "junk");
    d
}

#[test]
fn slash_commands_on_stdin() {
    let d = two_tools();
    let input = "/tool\n\n/tool claw\n/tool nope\nhello there\n/help\n/bogus\n/quit\n/tool\n";
    let out = d.ikigai().stdin(input).output();
    // With no model configured, the message is answered on stderr with how
    // to set a key, and the exit code says a message went unanswered.
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("No model is configured"),
        "{}",
        out.stderr
    );
    let junk = d.user.join("junk");
    let claw = d.user.join("claw");
    let expected = format!(
        "Available tools:\n  claw  Shellclaw fixture claw\n  echo  Fixture tool echo\n\
         Skipped:\n  {junk}: --schema and --describe: printed no JSON (expected value at line 1 column 1): usage: junk [options]\n\
         Tool: claw\nPath: {claw}\nDescription: Shellclaw fixture claw\nParameters:\n  location (string, required): City\n\
         Schema:\n{schema}\n\
         Unknown tool: 'nope'. Use /tool to see available tools.\n\
         {help}\n\
         Unknown command: '/bogus'. Use /help to see the commands.\n",
        junk = junk.display(),
        claw = claw.display(),
        help = d.ikigai().stdin("/help").output().stdout.trim_end(),
        schema = serde_json::to_string_pretty(&json!({"name": "claw", "description": "Shellclaw fixture claw",
            "parameters": {"type": "object", "properties": {"location": {"type": "string", "description": "City"}},
            "required": ["location"]}})).unwrap(),
    );
    assert_eq!(out.stdout, expected);
    for listed in [
        "/tool [NAME]   List tools",
        "/clear ",
        "/compact ",
        "/model [NAME] ",
        "/cost ",
    ] {
        assert!(out.stdout.contains(listed), "{listed}: {}", out.stdout);
    }
}

#[test]
fn an_empty_registry_and_the_end_of_input() {
    let d = Dirs::new();
    let out = d.ikigai().stdin("/tool").output();
    assert_eq!((out.code, out.stdout.as_str()), (0, "No tools available\n"));
    let out = d.ikigai().output();
    assert_eq!((out.code, out.stdout.as_str()), (0, ""));
}

#[test]
fn refresh_finds_a_tool_added_meanwhile() {
    let d = two_tools();
    let mut child = Command::new(link("ikigai"))
        .arg("--libexec-dir")
        .arg(&d.sys)
        .arg("--tools-dir")
        .arg(&d.user)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdin.write_all(b"/refresh\n").unwrap();
    let mut line = String::new();
    for expected in [
        "Refreshing tools...\n",
        "Tools refreshed. 2 tools available.\n",
    ] {
        line.clear();
        stdout.read_line(&mut line).unwrap();
        assert_eq!(line, expected);
    }
    d.sys_tool("tool.sh", "echo_new");
    stdin
        .write_all(b"/refresh\n/tool echo_new\n/quit\n")
        .unwrap();
    drop(stdin);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(child.wait().unwrap().success());
    assert!(
        rest.starts_with(&format!(
            "Refreshing tools...\nTools refreshed. 3 tools available.\nTool: echo_new\nPath: {}\n",
            d.sys.join("echo_new").display()
        )),
        "{rest}"
    );
}

#[test]
fn tools_lists_name_protocol_path_and_description() {
    let d = two_tools();
    let out = d.ikigai().arg("tools").output();
    assert_eq!(out.code, 0);
    let claw = d.user.join("claw").display().to_string();
    let echo = d.sys.join("echo").display().to_string();
    let w = claw.len().max(echo.len());
    let expected = format!(
        "NAME  PROTOCOL   {:w$}  DESCRIPTION\n\
         claw  shellclaw  {claw:w$}  Shellclaw fixture claw\n\
         echo  ikigai     {echo:w$}  Fixture tool echo\n\
         Skipped:\n  {}: --schema and --describe: printed no JSON (expected value at line 1 column 1): usage: junk [options]\n\
         Searched: {} (system), {} (user)\n",
        "PATH",
        d.user.join("junk").display(),
        d.sys.display(),
        d.user.display(),
    );
    assert_eq!(out.stdout, expected);
}

#[test]
fn tools_name_is_the_tool_command() {
    let d = two_tools();
    let cli = d.ikigai().args(["tools", "claw"]).output();
    let slash = d.ikigai().stdin("/tool claw\n").output();
    assert_eq!(cli.code, 0);
    assert_eq!(cli.stdout, slash.stdout);
    let out = d.ikigai().args(["tools", "nope"]).output();
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        "Unknown tool: 'nope'. Use ikigai tools to see available tools.\n"
    );
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    let out = run("ikigai").arg("--bogus").output();
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("Unrecognized argument: --bogus"),
        "{}",
        out.stderr
    );
    let out = run("ikigai").args(["schema", "--provider", "gpt"]).output();
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains(
            "unknown provider 'gpt' (providers: openai, openai-responses, anthropic, google)"
        ),
        "{}",
        out.stderr
    );
    for bad in [["--timeout", "0"], ["--max-output", "lots"]] {
        let out = run("ikigai").args(bad).arg("tools").output();
        assert_eq!(out.code, 2, "{bad:?}");
        assert!(out.stderr.contains("invalid"), "{}", out.stderr);
    }
    let out = run("ikigai").arg("--help").output();
    assert_eq!(out.code, 0);
    for word in [
        "--libexec-dir",
        "--tools-dir",
        "--timeout",
        "--max-output",
        "tools",
        "schema",
        "call",
    ] {
        assert!(out.stdout.contains(word), "{word} missing from help");
    }
    // As ikigai-tools' first argument, too.
    let out = crate::common::run_main()
        .args(["ikigai", "--help"])
        .output();
    assert_eq!(out.code, 0);
    assert!(out.stdout.contains("--libexec-dir"));
}

#[test]
fn the_default_system_directory_is_shown_normalised() {
    // No --libexec-dir nor IKIGAI_LIBEXEC_DIR: PREFIX/libexec/ikigai, next
    // to the bin directory of the running program.
    let home = tempfile::tempdir().unwrap();
    let out = crate::common::run("ikigai")
        .env_remove("IKIGAI_LIBEXEC_DIR")
        .env("HOME", home.path())
        .env("IKIGAI_TOOLS_DIR", home.path())
        .arg("tools")
        .output();
    assert_eq!(out.code, 0, "{out:?}");
    let searched = out
        .stdout
        .lines()
        .find(|l| l.starts_with("Searched: "))
        .expect("a Searched line");
    assert!(searched.contains("/libexec/ikigai (system)"), "{searched}");
    assert!(!searched.contains("/../"), "{searched}");
}
