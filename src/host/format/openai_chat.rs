//! OpenAI Chat Completions tool declarations: `{"type": "function",
//! "function": {name, description, parameters, strict}}`, strict whenever the
//! schema can be made strict (`strict.rs`). Pure.

use serde_json::{json, Value};

use super::strict;

/// One tool's declaration, from its normalised schema.
pub fn tool(schema: &Value) -> Value {
    let (parameters, is_strict) = strict::declared(&schema["parameters"]);
    json!({
        "type": "function",
        "function": {
            "name": schema["name"],
            "description": schema["description"],
            "parameters": parameters,
            "strict": is_strict,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_when_possible_and_plain_otherwise() {
        let schema = json!({"name": "file_read", "description": "Read", "parameters": {
            "type": "object", "properties": {
                "file_path": {"type": "string"}, "offset": {"type": "integer"}},
            "required": ["file_path"]}});
        assert_eq!(
            tool(&schema),
            json!({"type": "function", "function": {"name": "file_read", "description": "Read",
                "parameters": {"type": "object", "properties": {
                    "file_path": {"type": "string"}, "offset": {"type": ["integer", "null"]}},
                    "required": ["file_path", "offset"], "additionalProperties": false},
                "strict": true}})
        );
        let loose = json!({"name": "kv", "description": "d", "parameters": {
            "type": "object", "properties": {"env": {"type": "object", "additionalProperties": {"type": "string"}}}}});
        let t = tool(&loose);
        assert_eq!(t["function"]["strict"], false);
        assert_eq!(t["function"]["parameters"], loose["parameters"]);
        // A nested object without properties takes any keys: strict would
        // close it to {}.
        let free = json!({"name": "req", "description": "d", "parameters": {
            "type": "object", "properties": {"headers": {"type": "object"}},
            "required": ["headers"]}});
        let t = tool(&free);
        assert_eq!(t["function"]["strict"], false);
        assert_eq!(t["function"]["parameters"], free["parameters"]);
        let none = json!({"name": "now", "description": "d", "parameters": {"type": "object"}});
        assert_eq!(tool(&none)["function"]["strict"], true);
    }
}
