//! The tools array in each model provider's own format (decision 21): one
//! pure module per format, built from the registry's normalised schemas. Each
//! must be accepted by that provider as it documents its API today:
//!
//! - OpenAI Chat Completions and Responses: strict mode when the schema can
//!   be made strict (`strict.rs`), `"strict": false` otherwise;
//! - Anthropic Messages: the JSON Schema as `input_schema`;
//! - Google Gemini: the OpenAPI 3.0 subset it accepts, at every depth.

use std::str::FromStr;

use serde_json::Value;

use super::registry::Registry;

pub mod anthropic;
pub mod google;
pub mod openai_chat;
pub mod openai_responses;
pub mod refs;
pub mod strict;

/// The wire formats the host speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ToolFormat {
    OpenAiChat,
    OpenAiResponses,
    Anthropic,
    Google,
}

impl ToolFormat {
    pub const ALL: [ToolFormat; 4] = [
        ToolFormat::OpenAiChat,
        ToolFormat::OpenAiResponses,
        ToolFormat::Anthropic,
        ToolFormat::Google,
    ];

    /// The name on the command line: `openai`, `openai-responses`,
    /// `anthropic`, `google`.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolFormat::OpenAiChat => "openai",
            ToolFormat::OpenAiResponses => "openai-responses",
            ToolFormat::Anthropic => "anthropic",
            ToolFormat::Google => "google",
        }
    }
}

/// A provider's name as people may write it, in its one spelling: any
/// case, and `gemini` for `google`. Both `--provider` options (the
/// assistant's and `ikigai schema`'s) read names through this.
pub fn canonical_name(name: &str) -> String {
    match name.to_ascii_lowercase().as_str() {
        "gemini" => "google".to_string(),
        other => other.to_string(),
    }
}

impl FromStr for ToolFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let name = canonical_name(s);
        ToolFormat::ALL
            .into_iter()
            .find(|k| k.as_str() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = ToolFormat::ALL.iter().map(|k| k.as_str()).collect();
                format!("unknown provider '{s}' (providers: {})", names.join(", "))
            })
    }
}

/// The value of the request's `tools` field for `kind`, every registered
/// tool in name order. An empty registry gives `[]`: leave `tools` out of
/// the request then.
pub fn tools_array(kind: ToolFormat, registry: &Registry) -> Value {
    let schemas = registry.entries().iter().map(|e| &e.schema);
    match kind {
        ToolFormat::OpenAiChat => Value::Array(schemas.map(openai_chat::tool).collect()),
        ToolFormat::OpenAiResponses => Value::Array(schemas.map(openai_responses::tool).collect()),
        ToolFormat::Anthropic => Value::Array(schemas.map(anthropic::tool).collect()),
        ToolFormat::Google => google::tools(schemas),
    }
}

/// A tools array (any format `tools_array` makes) with only the tools
/// whose name `keep` accepts, in the same order and bytes otherwise: a
/// subagent's narrowed tools.
pub fn keep_only(array: &Value, keep: &dyn Fn(&str) -> bool) -> Value {
    let named = |tool: &Value| {
        let name = tool["name"].as_str().or(tool["function"]["name"].as_str());
        name.is_none_or(keep)
    };
    let Some(items) = array.as_array() else {
        return array.clone();
    };
    let mut out = Vec::new();
    for item in items {
        if let Some(declarations) = item["functionDeclarations"].as_array() {
            let kept: Vec<Value> = declarations.iter().filter(|d| named(d)).cloned().collect();
            if !kept.is_empty() {
                out.push(serde_json::json!({"functionDeclarations": kept}));
            }
        } else if named(item) {
            out.push(item.clone());
        }
    }
    Value::Array(out)
}

/// The tools `kind` has to leave out of its array: Gemini refuses names
/// that do not start with a letter or `_` (listed by name), and schemas it
/// cannot express, such as recursive ones (listed as `name (why)`). The
/// person is told.
pub fn left_out(kind: ToolFormat, registry: &Registry) -> Vec<String> {
    match kind {
        ToolFormat::Google => registry
            .entries()
            .iter()
            .filter_map(|e| {
                let why = google::refusal(&e.schema)?;
                Some(if google::accepts_name(&e.name) {
                    format!("{} ({why})", e.name)
                } else {
                    e.name.clone()
                })
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// What to tell the person about the tools `left_out` lists.
pub fn left_out_notice(names: &[String]) -> String {
    format!(
        "Gemini refuses tool names that do not start with a letter or '_', and schemas it cannot \
         express: not offered to the model: {}",
        names.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_only_narrows_every_format_and_keeps_the_rest_byte_for_byte() {
        let registry = Registry::build(
            ["bash", "grep", "task"]
                .iter()
                .map(|n| {
                    crate::host::registry::tests::entry(
                        n,
                        &format!("/t/{n}"),
                        crate::host::registry::Origin::User,
                        serde_json::json!({"type": "object", "properties": {}}),
                    )
                })
                .collect(),
            vec![],
        );
        for kind in ToolFormat::ALL {
            let all = tools_array(kind, &registry);
            let kept = keep_only(&all, &|n| n != "task");
            let text = kept.to_string();
            assert!(!text.contains("\"task\""), "{kind:?}: {text}");
            assert!(
                text.contains("\"bash\"") && text.contains("\"grep\""),
                "{kind:?}"
            );
            // What stays is what the whole array said of it.
            let one = keep_only(&all, &|n| n == "grep");
            let alone = keep_only(&kept, &|n| n == "grep");
            assert_eq!(one, alone, "{kind:?}");
        }
        assert_eq!(
            keep_only(&serde_json::json!([]), &|_| false),
            serde_json::json!([])
        );
    }

    #[test]
    fn names_round_trip() {
        for kind in ToolFormat::ALL {
            assert_eq!(kind.as_str().parse::<ToolFormat>(), Ok(kind));
        }
        assert_eq!("gemini".parse(), Ok(ToolFormat::Google));
        assert_eq!("OpenAI".parse(), Ok(ToolFormat::OpenAiChat));
        assert_eq!(
            "gpt".parse::<ToolFormat>().unwrap_err(),
            "unknown provider 'gpt' (providers: openai, openai-responses, anthropic, google)"
        );
    }

    #[test]
    fn empty_registry_gives_empty_arrays() {
        for kind in ToolFormat::ALL {
            assert_eq!(
                tools_array(kind, &Registry::default()),
                serde_json::json!([])
            );
        }
    }
}
