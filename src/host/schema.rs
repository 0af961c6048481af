//! What a tool's `--schema` (or `--describe`) answer must be to join the
//! registry, and its one normal form (decision 1): an object with a `name`
//! matching `[A-Za-z0-9_-]{1,64}`, a string `description`, and `parameters`
//! either as JSON Schema
//! (`{"type":"object","properties":...,"required":[...]}`) or in the flat
//! legacy form (`{"x": {"type":..., "required": true}}`), which is turned
//! into JSON Schema. `annotations`, the MCP hints a tool may declare about
//! itself (`readOnlyHint`, `destructiveHint`, `idempotentHint`,
//! `openWorldHint`), is kept as the last key when it is an object whose hints
//! are booleans; other top-level keys (`returns`) are dropped. Pure.

use crate::args::type_name as kind;
use serde_json::{json, Map, Value};

/// The longest tool name every provider accepts.
pub const MAX_NAME: usize = 64;

/// True for names every provider accepts: `[A-Za-z0-9_-]{1,64}`.
pub fn valid_name(name: &str) -> bool {
    (1..=MAX_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Parses a schema answer and returns the normal form
/// `{"name", "description", "parameters"}`, or why it cannot be used.
pub fn normalise(answer: &Value) -> Result<Value, String> {
    let Value::Object(obj) = answer else {
        return Err(format!("schema is {}, not a JSON object", kind(answer)));
    };
    let name = match obj.get("name") {
        Some(Value::String(s)) => s,
        Some(other) => return Err(format!("'name' is {}, not a string", kind(other))),
        None => return Err("schema lacks 'name'".into()),
    };
    if !valid_name(name) {
        return Err(format!(
            "name {} is not 1 to {MAX_NAME} characters of A-Z, a-z, 0-9, '_' and '-'",
            Value::String(name.clone())
        ));
    }
    let description = match obj.get("description") {
        Some(Value::String(s)) => s,
        Some(other) => return Err(format!("'description' is {}, not a string", kind(other))),
        None => return Err("schema lacks 'description'".into()),
    };
    let parameters = match obj.get("parameters") {
        Some(Value::Object(p)) => parameters(p)?,
        Some(other) => return Err(format!("'parameters' is {}, not an object", kind(other))),
        None => return Err("schema lacks 'parameters'".into()),
    };
    let mut normal = json!({"name": name, "description": description, "parameters": parameters});
    if let Some(found) = obj.get("annotations") {
        normal["annotations"] = annotations(found)?;
    }
    Ok(normal)
}

/// The hints MCP defines; each must be a boolean when present.
pub const HINTS: [&str; 4] = [
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];

fn annotations(found: &Value) -> Result<Value, String> {
    let Value::Object(map) = found else {
        return Err(format!("'annotations' is {}, not an object", kind(found)));
    };
    if let Some((hint, bad)) = map
        .iter()
        .find(|(k, v)| HINTS.contains(&k.as_str()) && !v.is_boolean())
    {
        return Err(format!(
            "'annotations.{hint}' is {}, not true or false",
            kind(bad)
        ));
    }
    Ok(found.clone())
}

fn parameters(p: &Map<String, Value>) -> Result<Value, String> {
    match p.get("type") {
        Some(Value::String(t)) if t == "object" => json_schema(p),
        Some(Value::String(t)) => Err(format!(
            "'parameters' has type {}, expected \"object\"",
            Value::String(t.clone())
        )),
        // JSON Schema that left out its top-level type.
        None if looks_like_json_schema(p) => {
            let mut with_type = Map::new();
            with_type.insert("type".into(), json!("object"));
            with_type.extend(p.clone());
            json_schema(&with_type)
        }
        _ => flat(p),
    }
}

fn looks_like_json_schema(p: &Map<String, Value>) -> bool {
    let properties_is_a_map = match p.get("properties") {
        // In the flat form, a parameter called "properties" has a string type.
        Some(Value::Object(props)) => !props.get("type").is_some_and(Value::is_string),
        _ => false,
    };
    properties_is_a_map && p.get("required").is_none_or(Value::is_array)
}

fn json_schema(p: &Map<String, Value>) -> Result<Value, String> {
    let mut out = p.clone();
    match out.get("properties") {
        None => {
            // Providers want the key, even empty; keep it right after "type".
            let mut ordered = Map::new();
            for (k, v) in out {
                let is_type = k == "type";
                ordered.insert(k, v);
                if is_type {
                    ordered.insert("properties".into(), json!({}));
                }
            }
            out = ordered;
        }
        Some(Value::Object(props)) => {
            if let Some((name, bad)) = props.iter().find(|(_, v)| !v.is_object()) {
                return Err(format!(
                    "parameter '{name}' is {}, not a schema object",
                    kind(bad)
                ));
            }
        }
        Some(other) => {
            return Err(format!(
                "'parameters.properties' is {}, not an object",
                kind(other)
            ))
        }
    }
    if let Some(required) = out.get("required") {
        let ok = required
            .as_array()
            .is_some_and(|names| names.iter().all(Value::is_string));
        if !ok {
            return Err("'parameters.required' is not an array of names".into());
        }
    }
    Ok(Value::Object(out))
}

/// `{"x": {"type": "string", "required": true}}` → JSON Schema.
fn flat(p: &Map<String, Value>) -> Result<Value, String> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, spec) in p {
        let Value::Object(spec) = spec else {
            return Err(format!(
                "parameter '{name}' is {}, not a schema object",
                kind(spec)
            ));
        };
        let mut spec = spec.clone();
        match spec.remove("required") {
            Some(Value::Bool(true)) => required.push(json!(name)),
            None | Some(Value::Bool(false)) => {}
            Some(other) => {
                return Err(format!(
                    "parameter '{name}' has 'required' {}, not true or false",
                    kind(&other)
                ))
            }
        }
        properties.insert(name.clone(), Value::Object(spec));
    }
    let mut out = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        out["required"] = Value::Array(required);
    }
    Ok(out)
}

#[cfg(test)]
mod fuzz;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_are_kept_last_and_checked() {
        let params = json!({"type": "object", "properties": {}});
        let s = json!({"annotations": {"readOnlyHint": true, "title": "T"}, "name": "t",
                       "description": "d", "parameters": params, "returns": {}});
        let n = normalise(&s).unwrap();
        assert_eq!(
            serde_json::to_string(&n).unwrap(),
            r#"{"name":"t","description":"d","parameters":{"type":"object","properties":{}},"annotations":{"readOnlyHint":true,"title":"T"}}"#
        );
        let bad = json!({"name": "t", "description": "d", "parameters": params,
                         "annotations": {"readOnlyHint": "yes"}});
        assert_eq!(
            normalise(&bad).unwrap_err(),
            "'annotations.readOnlyHint' is a string, not true or false"
        );
        let bad = json!({"name": "t", "description": "d", "parameters": params, "annotations": []});
        assert_eq!(
            normalise(&bad).unwrap_err(),
            "'annotations' is an array, not an object"
        );
        let none = json!({"name": "t", "description": "d", "parameters": params});
        assert!(normalise(&none).unwrap().get("annotations").is_none());
    }

    #[test]
    fn json_schema_form_is_kept_verbatim_in_order() {
        let s = json!({"name": "bash", "description": "Run", "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "c"}},
            "required": ["command"]}, "returns": {"type": "object"}});
        let n = normalise(&s).unwrap();
        assert_eq!(
            serde_json::to_string(&n).unwrap(),
            r#"{"name":"bash","description":"Run","parameters":{"type":"object","properties":{"command":{"type":"string","description":"c"}},"required":["command"]}}"#
        );
    }

    #[test]
    fn flat_legacy_form_becomes_json_schema() {
        let s = json!({"name": "bash", "description": "Execute a shell command", "parameters": {
            "command": {"type": "string", "description": "Command to execute", "required": true},
            "cwd": {"type": "string", "description": "Where", "required": false},
            "env": {"type": "object"}
        }, "returns": {"type": "object"}});
        assert_eq!(
            normalise(&s).unwrap(),
            json!({"name": "bash", "description": "Execute a shell command", "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "Command to execute"},
                    "cwd": {"type": "string", "description": "Where"},
                    "env": {"type": "object"}
                },
                "required": ["command"]}})
        );
        // A flat parameter that happens to be called "type" or "properties".
        let s = json!({"name": "t", "description": "d", "parameters": {
            "type": {"type": "string", "required": true},
            "properties": {"type": "string"}}});
        let n = normalise(&s).unwrap();
        assert_eq!(n["parameters"]["required"], json!(["type"]));
        assert_eq!(
            n["parameters"]["properties"]["properties"],
            json!({"type": "string"})
        );
    }

    #[test]
    fn empty_parameters_and_missing_properties() {
        let n = normalise(&json!({"name": "t", "description": "d", "parameters": {}})).unwrap();
        assert_eq!(n["parameters"], json!({"type": "object", "properties": {}}));
        let n = normalise(&json!({"name": "t", "description": "d",
            "parameters": {"type": "object", "required": []}}))
        .unwrap();
        assert_eq!(
            serde_json::to_string(&n["parameters"]).unwrap(),
            r#"{"type":"object","properties":{},"required":[]}"#
        );
        let n = normalise(&json!({"name": "t", "description": "d",
            "parameters": {"properties": {"x": {"type": "string"}}, "required": ["x"]}}))
        .unwrap();
        assert_eq!(n["parameters"]["type"], "object");
        assert_eq!(n["parameters"]["required"], json!(["x"]));
    }

    #[test]
    fn unusable_schemas_say_why() {
        let cases = [
            (json!([1]), "schema is an array, not a JSON object"),
            (
                json!({"description": "d", "parameters": {}}),
                "schema lacks 'name'",
            ),
            (
                json!({"name": "t", "parameters": {}}),
                "schema lacks 'description'",
            ),
            (
                json!({"name": "t", "description": "d"}),
                "schema lacks 'parameters'",
            ),
            (
                json!({"name": 5, "description": "d", "parameters": {}}),
                "'name' is a number, not a string",
            ),
            (
                json!({"name": "t", "description": "d", "parameters": []}),
                "'parameters' is an array, not an object",
            ),
            (
                json!({"name": "t", "description": "d", "parameters": {"type": "string"}}),
                "'parameters' has type \"string\", expected \"object\"",
            ),
            (
                json!({"name": "t", "description": "d", "parameters": {"x": 1}}),
                "parameter 'x' is a number, not a schema object",
            ),
            (
                json!({"name": "t", "description": "d", "parameters": {"x": {"required": "yes"}}}),
                "parameter 'x' has 'required' a string, not true or false",
            ),
            (
                json!({"name": "t", "description": "d", "parameters": {"type": "object", "required": [1]}}),
                "'parameters.required' is not an array of names",
            ),
            (
                json!({"name": "t", "description": "d", "parameters": {"type": "object", "properties": {"x": true}}}),
                "parameter 'x' is a boolean, not a schema object",
            ),
        ];
        for (schema, why) in cases {
            assert_eq!(normalise(&schema).unwrap_err(), why, "{schema}");
        }
    }

    #[test]
    fn names() {
        assert!(valid_name("file_read"));
        assert!(valid_name("web-fetch"));
        assert!(valid_name(&"a".repeat(64)));
        for bad in ["", "a b", "a.b", "é", "x/y", &"a".repeat(65)] {
            assert!(!valid_name(bad), "{bad}");
        }
        let e = normalise(&json!({"name": "my tool", "description": "d", "parameters": {}}));
        assert_eq!(
            e.unwrap_err(),
            "name \"my tool\" is not 1 to 64 characters of A-Z, a-z, 0-9, '_' and '-'"
        );
    }
}
