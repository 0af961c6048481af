//! Anthropic Messages tool declarations: `{name, description, input_schema}`,
//! where `input_schema` is the tool's JSON Schema as it is (Anthropic takes
//! JSON Schema loosely; its root must be an object, which normalisation
//! guarantees). Pure.

use serde_json::{json, Value};

/// One tool's declaration, from its normalised schema.
pub fn tool(schema: &Value) -> Value {
    json!({
        "name": schema["name"],
        "description": schema["description"],
        "input_schema": schema["parameters"],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_schema_is_the_json_schema() {
        let schema = json!({"name": "grep", "description": "Search", "parameters": {
            "type": "object", "properties": {"pattern": {"type": "string", "minLength": 1}},
            "required": ["pattern"]}});
        assert_eq!(
            tool(&schema),
            json!({"name": "grep", "description": "Search", "input_schema": schema["parameters"]})
        );
    }
}
