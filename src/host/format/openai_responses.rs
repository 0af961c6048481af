//! OpenAI Responses API tool declarations: flat `{"type": "function", name,
//! description, parameters, strict}`. `strict` defaults to true there, so it
//! is always sent explicitly: true with the strict form of the schema, false
//! when it cannot be made strict. Pure.

use serde_json::{json, Value};

use super::strict;

/// One tool's declaration, from its normalised schema.
pub fn tool(schema: &Value) -> Value {
    let (parameters, is_strict) = strict::declared(&schema["parameters"]);
    json!({
        "type": "function",
        "name": schema["name"],
        "description": schema["description"],
        "parameters": parameters,
        "strict": is_strict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_declaration_with_explicit_strict() {
        let schema = json!({"name": "bash", "description": "Run", "parameters": {
            "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}});
        assert_eq!(
            tool(&schema),
            json!({"type": "function", "name": "bash", "description": "Run",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                    "required": ["command"], "additionalProperties": false},
                "strict": true})
        );
        let any = json!({"name": "x", "description": "d", "parameters": {
            "type": "object", "properties": {"v": {}}}});
        assert_eq!(tool(&any)["strict"], false);
    }
}
