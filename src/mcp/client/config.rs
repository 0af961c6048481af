//! The MCP servers the host uses, read from a JSON file in the shape other
//! agents use: `{"mcpServers": {"NAME": {"command", "args", "env", "cwd"}}}`
//! for a server the host starts, `{"url", "headers"}` for one it reaches
//! over Streamable HTTP. A started server is fenced (decision 82); its
//! entry may name more directories it writes (`add_dirs`) or turn the
//! fence off (`"sandbox": "off"`). `${VAR}` (and `${VAR:-default}`) in any string is
//! replaced from the environment; a variable that is not set is an error
//! for that server, never an empty string passed on in silence.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::host::settings::parse_guard_path;
use crate::tool::Env;

/// How to reach one server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
        /// Run inside the session's sandbox; false for `"sandbox": "off"`.
        fenced: bool,
        /// Directories it may write besides the workspace, `/tmp` and its
        /// caches (`add_dirs`, absolute or under `~/`).
        add_dirs: Vec<PathBuf>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

/// One configured server, or why it cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Result<Transport, String>,
}

/// Reads the configuration file. A file that does not exist configures no
/// server; one that cannot be read or is not the expected shape is an
/// error naming what is wrong. Servers come sorted by name.
pub fn load(path: &Path, env: &Env) -> Result<Vec<ServerConfig>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read: {e}")),
    };
    parse(&text, env)
}

pub fn parse(text: &str, env: &Env) -> Result<Vec<ServerConfig>, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let servers = match value.get("mcpServers") {
        Some(Value::Object(servers)) => servers,
        Some(_) => return Err("\"mcpServers\" must be an object".into()),
        None => return Err("no \"mcpServers\" object".into()),
    };
    let mut configs: Vec<ServerConfig> = servers
        .iter()
        .map(|(name, server)| ServerConfig {
            name: name.clone(),
            transport: transport(server, env),
        })
        .collect();
    configs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(configs)
}

fn transport(server: &Value, env: &Env) -> Result<Transport, String> {
    let Value::Object(fields) = server else {
        return Err("a server's entry must be an object".into());
    };
    let text = |key: &str| -> Result<Option<String>, String> {
        match fields.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => expand(s, env).map(Some),
            Some(_) => Err(format!("\"{key}\" must be a string")),
        }
    };
    let map = |key: &str| -> Result<BTreeMap<String, String>, String> {
        match fields.get(key) {
            None | Some(Value::Null) => Ok(BTreeMap::new()),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), expand(s, env)?)),
                    _ => Err(format!("\"{key}.{k}\" must be a string")),
                })
                .collect(),
            Some(_) => Err(format!("\"{key}\" must be an object of strings")),
        }
    };
    if let Some(url) = text("url")? {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(format!("\"url\" must be an http or https URL, not '{url}'"));
        }
        return Ok(Transport::Http {
            url,
            headers: map("headers")?,
        });
    }
    let Some(command) = text("command")? else {
        return Err("needs a \"command\" (a server to start) or a \"url\"".into());
    };
    let args = match fields.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|a| match a {
                Value::String(s) => expand(s, env),
                _ => Err("\"args\" must be an array of strings".to_string()),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("\"args\" must be an array of strings".into()),
    };
    let fenced = match fields.get("sandbox") {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) if s == "off" => false,
        Some(other) => {
            return Err(format!(
                "\"sandbox\" can only be \"off\" (the server then runs with your rights), \
                 not {other}; without it the server runs in the session's sandbox"
            ))
        }
    };
    let add_dirs = match fields.get("add_dirs") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|a| match a {
                Value::String(s) => parse_guard_path(Path::new(&expand(s, env)?), env)
                    .map_err(|e| format!("\"add_dirs\": {e}")),
                _ => Err("\"add_dirs\" must be an array of strings".to_string()),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("\"add_dirs\" must be an array of strings".into()),
    };
    Ok(Transport::Stdio {
        command,
        args,
        env: map("env")?,
        cwd: text("cwd")?.map(PathBuf::from),
        fenced,
        add_dirs,
    })
}

/// Replaces `${VAR}` and `${VAR:-default}` from the environment.
pub fn expand(text: &str, env: &Env) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("unclosed \"${{\" in '{text}'"));
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match (env.var(name), default) {
            (Some(value), _) => out.push_str(value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(format!("the variable {name} is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        Env::from_pairs([("TOKEN", "t0k"), ("HOME", "/h")])
    }

    #[test]
    fn variables_expand() {
        assert_eq!(expand("a ${TOKEN} b", &env()), Ok("a t0k b".into()));
        assert_eq!(expand("${NOPE:-x}${HOME}", &env()), Ok("x/h".into()));
        assert_eq!(expand("plain $HOME", &env()), Ok("plain $HOME".into()));
        assert!(expand("${NOPE}", &env())
            .unwrap_err()
            .contains("NOPE is not set"));
        assert!(expand("${HOME", &env()).is_err());
    }

    #[test]
    fn both_transports() {
        let text = r#"{"mcpServers": {
            "web": {"url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "fs": {"command": "npx", "args": ["-y", "srv", "${HOME}"], "env": {"K": "${TOKEN}"}, "cwd": "/tmp"},
            "bad": {"args": []},
            "unset": {"command": "${NOPE}"}
        }}"#;
        let configs = parse(text, &env()).unwrap();
        let names: Vec<&str> = configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["bad", "fs", "unset", "web"]);
        assert!(configs[0]
            .transport
            .as_ref()
            .unwrap_err()
            .contains("\"command\""));
        assert_eq!(
            configs[1].transport,
            Ok(Transport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "srv".into(), "/h".into()],
                env: [("K".to_string(), "t0k".to_string())].into(),
                cwd: Some("/tmp".into()),
                fenced: true,
                add_dirs: Vec::new(),
            })
        );
        assert!(configs[2].transport.as_ref().unwrap_err().contains("NOPE"));
        assert_eq!(
            configs[3].transport,
            Ok(Transport::Http {
                url: "https://x.example/mcp".into(),
                headers: [("Authorization".to_string(), "Bearer t0k".to_string())].into(),
            })
        );
    }

    #[test]
    fn wrong_shapes_are_named() {
        assert!(parse("{", &env()).unwrap_err().contains("not valid JSON"));
        assert!(parse("{}", &env()).unwrap_err().contains("mcpServers"));
        let e = parse(
            r#"{"mcpServers": {"a": {"command": "x", "args": "y"}}}"#,
            &env(),
        )
        .unwrap();
        assert!(e[0].transport.as_ref().unwrap_err().contains("args"));
        let e = parse(r#"{"mcpServers": {"a": {"url": "ftp://x"}}}"#, &env()).unwrap();
        assert!(e[0].transport.as_ref().unwrap_err().contains("http"));
        for (entry, named) in [
            (r#""sandbox": "on""#, "\"sandbox\" can only be \"off\""),
            (r#""sandbox": false"#, "\"sandbox\" can only be \"off\""),
            (r#""add_dirs": "x""#, "\"add_dirs\" must be an array"),
            (
                r#""add_dirs": ["rel/dir"]"#,
                "'rel/dir' is not an absolute path",
            ),
        ] {
            let text = format!(r#"{{"mcpServers": {{"a": {{"command": "x", {entry}}}}}}}"#);
            let e = parse(&text, &env()).unwrap();
            let why = e[0].transport.as_ref().unwrap_err();
            assert!(why.contains(named), "{entry}: {why}");
        }
    }

    #[test]
    fn a_server_is_fenced_unless_its_entry_says_off() {
        let text = r#"{"mcpServers": {
            "open": {"command": "x", "sandbox": "off"},
            "kept": {"command": "x", "add_dirs": ["~/.cache/kept", "/opt/${TOKEN}"]}
        }}"#;
        let configs = parse(text, &env()).unwrap();
        let fence = |c: &ServerConfig| match c.transport.clone().unwrap() {
            Transport::Stdio {
                fenced, add_dirs, ..
            } => (fenced, add_dirs),
            Transport::Http { .. } => panic!("a started server"),
        };
        assert_eq!(
            fence(&configs[0]),
            (
                true,
                vec![PathBuf::from("/h/.cache/kept"), PathBuf::from("/opt/t0k")]
            )
        );
        assert_eq!(fence(&configs[1]), (false, Vec::new()));
    }
}
