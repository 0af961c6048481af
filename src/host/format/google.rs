//! Google Gemini function declarations (decision 21):
//! `[{"functionDeclarations": [{name, description, parameters}]}]`, where
//! `parameters` is the OpenAPI 3.0 subset Gemini accepts. Gemini answers HTTP
//! 400 to a key it does not know at any depth (`additionalProperties`,
//! `$schema`, `default`, `const`, `exclusiveMinimum`,...) and to a type
//! array, so each schema node is rebuilt from the allowed keys only: type
//! arrays become one type plus `nullable`, or `anyOf`; `const` becomes a
//! one-value `enum`; `enum` stays only on strings (other values are named in
//! the description); `format` stays only where Gemini supports it; `required`
//! names only existing properties; an array always has `items`; an object
//! with no properties says nothing of them (and a tool without parameters
//! declares none). Gemini has no `$ref`: references are written out where
//! they are used (`refs.rs`), and a tool whose schema cannot be written out
//! (a recursive one) is left out, as is a tool whose name Gemini refuses (it
//! wants a letter or `_` first). `refusal` says why. Pure.

use serde_json::{json, Map, Value};

use super::refs;

/// Keys copied as they are, when present.
const PLAIN: &[&str] = &[
    "title",
    "description",
    "nullable",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "example",
];

/// The tools array: one `functionDeclarations` list, or `[]` when empty.
pub fn tools<'a>(schemas: impl Iterator<Item = &'a Value>) -> Value {
    let declarations: Vec<Value> = schemas.filter_map(|s| declaration(s).ok()).collect();
    if declarations.is_empty() {
        json!([])
    } else {
        json!([{"functionDeclarations": declarations}])
    }
}

/// Gemini's rule: a letter or `_` first, then letters, digits, `_ . : -`;
/// at most 64.
pub fn accepts_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    let first_ok = bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
    first_ok && name.len() <= 64 && bytes.all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b))
}

/// Why Gemini cannot be offered the tool of `schema`, or None when it can.
pub fn refusal(schema: &Value) -> Option<String> {
    declaration(schema).err()
}

/// One function declaration, from a normalised schema; Err says why
/// Gemini cannot take it.
pub fn declaration(schema: &Value) -> Result<Value, String> {
    if !accepts_name(schema["name"].as_str().unwrap_or("")) {
        return Err("Gemini wants a name that starts with a letter or '_'".into());
    }
    let params = &schema["parameters"];
    let flat;
    let params = if refs::has_refs(params) {
        flat = refs::inline(params)?;
        &flat
    } else {
        params
    };
    let mut out = json!({"name": schema["name"], "description": schema["description"]});
    let parameters = node(params);
    if parameters.get("properties").is_some() {
        out["parameters"] = parameters;
    }
    Ok(out)
}

/// Rebuilds one schema node from Gemini's allowed keys.
fn node(schema: &Value) -> Value {
    let Value::Object(s) = schema else {
        return json!({"type": "string"});
    };
    let mut out = Map::new();
    let (ty, null) = gemini_type(s);
    match &ty {
        Some(Types::One(t)) => {
            out.insert("type".into(), json!(t));
        }
        Some(Types::Many(ts)) => {
            let alternatives: Vec<Value> = ts.iter().map(|t| node(&retyped(s, t))).collect();
            out.insert("anyOf".into(), Value::Array(alternatives));
        }
        None => {}
    }
    for key in PLAIN {
        if let Some(v) = s.get(*key) {
            out.insert((*key).into(), v.clone());
        }
    }
    if null {
        out.insert("nullable".into(), json!(true));
    }
    if let Some(Types::One(t)) = &ty {
        if let Some(Value::String(f)) = s.get("format") {
            let supported: &[&str] = match t.as_str() {
                "string" => &["enum", "date-time"],
                "number" => &["float", "double"],
                "integer" => &["int32", "int64"],
                _ => &[],
            };
            if supported.contains(&f.as_str()) {
                out.insert("format".into(), json!(f));
            }
        }
        match t.as_str() {
            "object" => object(s, &mut out),
            "array" => {
                let items = s
                    .get("items")
                    .map(node)
                    .unwrap_or(json!({"type": "string"}));
                out.insert("items".into(), items);
            }
            _ => {}
        }
    }
    let values = match (s.get("enum"), s.get("const")) {
        (Some(Value::Array(values)), _) => Some(values.clone()),
        (None, Some(c)) => Some(vec![c.clone()]),
        _ => None,
    };
    if let Some(values) = values {
        let values: Vec<Value> = values.into_iter().filter(|v| !v.is_null()).collect();
        if values.iter().all(Value::is_string)
            && matches!(&ty, Some(Types::One(t)) if t == "string")
        {
            out.insert("enum".into(), Value::Array(values));
        } else {
            let list: Vec<String> = values.iter().map(Value::to_string).collect();
            let note = format!("(one of: {})", list.join(", "));
            let description = match out.get("description").and_then(Value::as_str) {
                Some(d) => format!("{d} {note}"),
                None => note,
            };
            out.insert("description".into(), json!(description));
        }
    }
    if let Some(Value::Array(alternatives)) = s.get("anyOf").or_else(|| s.get("oneOf")) {
        out.insert(
            "anyOf".into(),
            Value::Array(alternatives.iter().map(node).collect()),
        );
    }
    Value::Object(out)
}

fn object(s: &Map<String, Value>, out: &mut Map<String, Value>) {
    let Some(Value::Object(properties)) = s.get("properties") else {
        return;
    };
    if properties.is_empty() {
        return;
    }
    let converted: Map<String, Value> = properties
        .iter()
        .map(|(name, schema)| (name.clone(), node(schema)))
        .collect();
    out.insert("properties".into(), Value::Object(converted));
    let required: Vec<Value> = s
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter(|n| n.as_str().is_some_and(|n| properties.contains_key(n)))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    if !required.is_empty() {
        out.insert("required".into(), Value::Array(required));
    }
}

enum Types {
    One(String),
    Many(Vec<String>),
}

/// The node's type as Gemini can say it, and whether `null` is allowed.
fn gemini_type(s: &Map<String, Value>) -> (Option<Types>, bool) {
    let declared: Vec<String> = match s.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        _ => vec![],
    };
    let null = declared.iter().any(|t| t == "null");
    let mut real: Vec<String> = declared.into_iter().filter(|t| t != "null").collect();
    if real.is_empty() && !s.contains_key("anyOf") && !s.contains_key("oneOf") {
        // Gemini needs a type; guess it from the other keywords.
        let guess = if s.contains_key("properties") {
            "object"
        } else if s.contains_key("items") {
            "array"
        } else {
            let values = s.get("enum").and_then(Value::as_array);
            match values
                .and_then(|v| v.iter().find(|v| !v.is_null()))
                .or(s.get("const"))
            {
                Some(Value::Bool(_)) => "boolean",
                Some(Value::Number(n)) if n.is_f64() => "number",
                Some(Value::Number(_)) => "integer",
                _ => "string",
            }
        };
        real.push(guess.to_string());
    }
    let types = match real.len() {
        0 => None,
        1 => Some(Types::One(real.remove(0))),
        _ => Some(Types::Many(real)),
    };
    (types, null)
}

/// The node with one type of its union, for `anyOf`.
fn retyped(s: &Map<String, Value>, t: &str) -> Value {
    let mut copy = s.clone();
    copy.insert("type".into(), json!(t));
    copy.remove("description");
    Value::Object(copy)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key Gemini's Schema object accepts.
    const ALLOWED: &[&str] = &[
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "items",
        "minItems",
        "maxItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "anyOf",
        "example",
    ];

    /// The first key or value Gemini would reject, at any depth.
    pub fn breach(schema: &Value, path: &str) -> Option<String> {
        let Value::Object(s) = schema else {
            return Some(format!("{path}: not an object"));
        };
        for (key, value) in s {
            if !ALLOWED.contains(&key.as_str()) {
                return Some(format!("{path}: key '{key}'"));
            }
            if key == "type" && !value.is_string() {
                return Some(format!("{path}: type {value}"));
            }
        }
        if s.get("type") == Some(&json!("array")) && !s.contains_key("items") {
            return Some(format!("{path}: array without items"));
        }
        if let Some(Value::Array(values)) = s.get("enum") {
            if s.get("type") != Some(&json!("string")) || !values.iter().all(Value::is_string) {
                return Some(format!("{path}: enum on a non-string"));
            }
        }
        if let Some(Value::Object(props)) = s.get("properties") {
            if props.is_empty() {
                return Some(format!("{path}: empty properties"));
            }
            for (k, v) in props {
                if let Some(b) = breach(v, &format!("{path}.{k}")) {
                    return Some(b);
                }
            }
            for r in s
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if !props.contains_key(r.as_str().unwrap_or("")) {
                    return Some(format!("{path}: required {r} is not a property"));
                }
            }
        }
        if let Some(items) = s.get("items") {
            if let Some(b) = breach(items, &format!("{path}[]")) {
                return Some(b);
            }
        }
        for a in s
            .get("anyOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(b) = breach(a, &format!("{path}|")) {
                return Some(b);
            }
        }
        None
    }

    fn tool(parameters: Value) -> Value {
        json!({"name": "t", "description": "d", "parameters": parameters})
    }

    #[test]
    fn forbidden_keys_go_at_every_depth() {
        let p = json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
            "additionalProperties": false, "properties": {
            "query": {"type": "string", "minLength": 2, "default": "x"},
            "count": {"type": "integer", "minimum": 1, "maximum": 20, "default": 10, "exclusiveMinimum": 0},
            "url": {"type": "string", "format": "uri"},
            "when": {"type": "string", "format": "date-time"},
            "opts": {"type": "object", "additionalProperties": {"type": "string"}, "propertyNames": {"pattern": "^a"},
                "properties": {"deep": {"type": ["string", "null"], "const": "k", "examples": ["k"]}}},
            "tags": {"type": "array"},
            "level": {"type": "integer", "enum": [1, 2, 3], "description": "Level"},
            "unit": {"enum": ["c", "f"]},
            "either": {"type": ["string", "integer"]},
            "free": {"type": "object"}
        }, "required": ["query", "missing"]});
        let d = declaration(&tool(p)).unwrap();
        assert_eq!(breach(&d["parameters"], "$"), None, "{d:#}");
        let props = &d["parameters"]["properties"];
        assert_eq!(props["query"], json!({"type": "string", "minLength": 2}));
        assert_eq!(
            props["count"],
            json!({"type": "integer", "minimum": 1, "maximum": 20})
        );
        assert_eq!(props["url"], json!({"type": "string"}));
        assert_eq!(
            props["when"],
            json!({"type": "string", "format": "date-time"})
        );
        assert_eq!(
            props["opts"]["properties"]["deep"],
            json!({"type": "string", "nullable": true, "enum": ["k"]})
        );
        assert_eq!(
            props["tags"],
            json!({"type": "array", "items": {"type": "string"}})
        );
        assert_eq!(
            props["level"],
            json!({"type": "integer", "description": "Level (one of: 1, 2, 3)"})
        );
        assert_eq!(props["unit"], json!({"type": "string", "enum": ["c", "f"]}));
        assert_eq!(
            props["either"],
            json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
        );
        assert_eq!(props["free"], json!({"type": "object"}));
        assert_eq!(d["parameters"]["required"], json!(["query"]));
    }

    #[test]
    fn no_parameters_means_no_parameters_key() {
        let d = declaration(&tool(json!({"type": "object", "properties": {}}))).unwrap();
        assert_eq!(d, json!({"name": "t", "description": "d"}));
    }

    #[test]
    fn names_gemini_refuses_are_left_out() {
        assert!(accepts_name("file_read"));
        assert!(accepts_name("_x-1"));
        assert!(!accepts_name("1tool"));
        assert!(!accepts_name("-x"));
        assert!(!accepts_name(""));
        let schemas = [
            json!({"name": "ok", "description": "d", "parameters": {"type": "object", "properties": {}}}),
            json!({"name": "9lives", "description": "d", "parameters": {"type": "object", "properties": {}}}),
        ];
        assert_eq!(
            tools(schemas.iter()),
            json!([{"functionDeclarations": [{"name": "ok", "description": "d"}]}])
        );
        assert_eq!(tools(schemas[1..].iter()), json!([]));
    }
}
