//! The registry as text for a person: the `ikigai tools` table, the `/tool`
//! listing, and one tool's page (where it is, what it takes, its schema).
//! One place, so every view of the tools reads the same.

use serde_json::Value;

use super::registry::{Entry, Protocol, Registry};
use super::settings::Settings;
use super::text::one_line;

/// `/tool`: the tools, sorted, one a line, then the skipped files and why.
pub fn listing(registry: &Registry) -> String {
    let mut text = if registry.is_empty() {
        "No tools available".to_string()
    } else {
        let width = registry
            .entries()
            .iter()
            .map(|e| e.name.len())
            .max()
            .unwrap_or(0);
        let mut text = String::from("Available tools:");
        for e in registry.entries() {
            text += &format!("\n  {:width$}  {}", e.name, one_line(&e.description));
        }
        text
    };
    if !registry.skipped().is_empty() {
        text += "\nSkipped:";
        for s in registry.skipped() {
            text += &format!("\n  {}: {}", s.path.display(), s.reason);
        }
    }
    text
}

/// `/tool NAME`: where the tool is, what it takes, its whole schema.
pub fn inspect(entry: &Entry) -> String {
    let place = match entry.protocol {
        Protocol::Mcp => format!("Server: {} (MCP)", entry.path.display()),
        _ => format!("Path: {}", entry.path.display()),
    };
    let mut text = format!(
        "Tool: {}\n{place}\nDescription: {}\nParameters:",
        entry.name, entry.description
    );
    let params = entry.parameters();
    let required: Vec<&str> = params["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    match params["properties"].as_object() {
        Some(props) if !props.is_empty() => {
            for (name, schema) in props {
                let need = if required.contains(&name.as_str()) {
                    "required"
                } else {
                    "optional"
                };
                text += &format!("\n  {name} ({}, {need})", type_of(schema));
                if let Some(d) = schema["description"].as_str() {
                    text += &format!(": {}", one_line(d));
                }
            }
        }
        _ => text += "\n  (none)",
    }
    let pretty = serde_json::to_string_pretty(&entry.schema).unwrap_or_default();
    text + "\nSchema:\n" + &pretty
}

/// `string`, `integer|null`, `array of string`, `any`.
fn type_of(schema: &Value) -> String {
    let base = match &schema["type"] {
        Value::String(t) => t.clone(),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("|"),
        _ if schema.get("enum").is_some() => "enum".into(),
        _ => "any".into(),
    };
    match schema["items"]["type"].as_str() {
        Some(item) if base == "array" => format!("array of {item}"),
        _ => base,
    }
}

/// `ikigai tools`: one aligned line per tool, the skipped files, and where
/// the host looked.
pub fn table(registry: &Registry, settings: &Settings) -> String {
    let rows: Vec<[String; 4]> = registry
        .entries()
        .iter()
        .map(|e| {
            [
                e.name.clone(),
                e.protocol.as_str().to_string(),
                e.path.display().to_string(),
                one_line(&e.description),
            ]
        })
        .collect();
    let mut text = if rows.is_empty() {
        "No tools available".to_string()
    } else {
        let header = ["NAME", "PROTOCOL", "PATH", "DESCRIPTION"].map(String::from);
        let width = |i: usize| {
            rows.iter()
                .chain([&header])
                .map(|r| r[i].len())
                .max()
                .unwrap_or(0)
        };
        let (w0, w1, w2) = (width(0), width(1), width(2));
        [&header]
            .into_iter()
            .chain(&rows)
            .map(|r| format!("{:w0$}  {:w1$}  {:w2$}  {}", r[0], r[1], r[2], r[3]))
            .collect::<Vec<_>>()
            .join("\n")
    };
    if !registry.skipped().is_empty() {
        text += "\nSkipped:";
        for s in registry.skipped() {
            text += &format!("\n  {}: {}", s.path.display(), s.reason);
        }
    }
    let dirs: Vec<String> = [
        (settings.system_dir.as_ref(), "system"),
        (settings.user_dir.as_ref(), "user"),
    ]
    .into_iter()
    .filter_map(|(d, what)| Some(format!("{} ({what})", d?.display())))
    .collect();
    text + &format!("\nSearched: {}", dirs.join(", "))
}
