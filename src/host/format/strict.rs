//! OpenAI strict mode (Structured Outputs), shared by Chat Completions and
//! Responses (decision 21). Strict mode accepts a schema only when every
//! object has `"additionalProperties": false` and lists every property in
//! `required`; a property the tool treats as optional becomes a union with
//! `null` (the tools treat `null` as absent). Keywords OpenAI documents as
//! supported are kept: `pattern`, `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum`, `multipleOf`, `minItems`, `maxItems`, and its string
//! formats; other validation keywords (`minLength`, `maxLength`, `default`,
//! `format: uri`,...) are dropped, which only loosens what the model is held
//! to (the tool still checks). A schema whose meaning strict mode cannot
//! express (free-form objects, maps, `allOf`, tuples, untyped values, beyond
//! the documented size limits) is not strict: `None`. References (`$ref` into
//! `$defs`) are written out where they are used (`refs.rs`); a schema that
//! cannot be written out (a recursive one) keeps its references, which strict
//! mode also accepts, each definition made strict.
//!
//! The other half of strict mode is `without_optional_nulls`: the model
//! must send every property, and sends `null` for those it means to leave
//! out; they are dropped before the tool sees the arguments. Pure.

use serde_json::{json, Map, Value};

use super::refs;

/// String formats strict mode supports.
const FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Kept as they are.
const KEEP: &[&str] = &[
    "type",
    "description",
    "enum",
    "const",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];

/// Keywords that shape the value: dropping them would change what the tool
/// receives, so their schema cannot be strict.
const SHAPING: &[&str] = &[
    "allOf",
    "patternProperties",
    "prefixItems",
    "additionalItems",
    "unevaluatedProperties",
    "unevaluatedItems",
    "dependentSchemas",
];

/// Documented limits: nesting depth and object properties in all.
const MAX_DEPTH: usize = 10;
const MAX_PROPERTIES: usize = 5000;

/// The `parameters` to declare and whether they are strict: the strict form
/// when there is one, else the schema unchanged.
pub fn declared(params: &Value) -> (Value, bool) {
    match parameters(params) {
        Some(p) => (p, true),
        None => (params.clone(), false),
    }
}

/// The strict form of a tool's `parameters`, or `None` when it cannot be made
/// strict.
pub fn parameters(params: &Value) -> Option<Value> {
    if params["type"] != "object" {
        return None;
    }
    if refs::has_refs(params) {
        if let Ok(flat) = refs::inline(params) {
            return parameters(&flat);
        }
    }
    let mut counter = 0;
    let mut out = node(params, 0, &mut counter)?;
    for defs in ["$defs", "definitions"] {
        if let Some(Value::Object(map)) = params.get(defs) {
            let mut strict = Map::new();
            for (name, schema) in map {
                strict.insert(name.clone(), node(schema, 1, &mut counter)?);
            }
            out[defs] = Value::Object(strict);
        }
    }
    Some(out)
}

fn node(schema: &Value, depth: usize, counter: &mut usize) -> Option<Value> {
    let Value::Object(s) = schema else {
        return None;
    };
    if depth > MAX_DEPTH || SHAPING.iter().any(|k| s.contains_key(*k)) {
        return None;
    }
    if let Some(reference) = s.get("$ref") {
        let mut out = json!({"$ref": reference});
        if let Some(d) = s.get("description") {
            out["description"] = d.clone();
        }
        return Some(out);
    }
    let mut out = Map::new();
    for (key, value) in s {
        if KEEP.contains(&key.as_str()) {
            out.insert(key.clone(), value.clone());
        }
    }
    if let Some(Value::String(format)) = s.get("format") {
        if FORMATS.contains(&format.as_str()) {
            out.insert("format".into(), json!(format));
        }
    }
    for union in ["anyOf", "oneOf"] {
        if let Some(alternatives) = s.get(union) {
            // Strict mode knows only anyOf; oneOf's "exactly one" is the
            // tool's to check.
            let strict = alternatives
                .as_array()?
                .iter()
                .map(|a| node(a, depth + 1, counter))
                .collect::<Option<Vec<_>>>()?;
            out.insert("anyOf".into(), Value::Array(strict));
        }
    }
    let types = types(s)?;
    if types.is_empty()
        && !out.contains_key("anyOf")
        && !out.contains_key("enum")
        && !out.contains_key("const")
    {
        // Any value at all: strict mode has no way to say it.
        return None;
    }
    if types.contains(&"object") {
        object(s, &mut out, depth, counter)?;
    }
    if types.contains(&"array") {
        out.insert("items".into(), node(s.get("items")?, depth + 1, counter)?);
    }
    Some(Value::Object(out))
}

/// The declared types: `"type": "x"` or `"type": ["x", "null"]`.
fn types(s: &Map<String, Value>) -> Option<Vec<&str>> {
    match s.get("type") {
        None => Some(vec![]),
        Some(Value::String(t)) => Some(vec![t.as_str()]),
        Some(Value::Array(ts)) => ts.iter().map(Value::as_str).collect(),
        Some(_) => None,
    }
}

fn object(
    s: &Map<String, Value>,
    out: &mut Map<String, Value>,
    depth: usize,
    counter: &mut usize,
) -> Option<()> {
    // Extra keys allowed (`true` or a schema) is a shape strict mode rejects.
    if s.get("additionalProperties")
        .is_some_and(|a| a != &Value::Bool(false))
    {
        return None;
    }
    let empty = Map::new();
    let properties = match s.get("properties") {
        // A nested object that names no properties takes any keys; strict
        // mode would close it to `{}` always. (The top level without
        // properties is a tool that takes no arguments: closed is right.)
        None if depth > 0 && s.get("additionalProperties").is_none() => return None,
        None => &empty,
        Some(Value::Object(p)) => p,
        Some(_) => return None,
    };
    *counter += properties.len();
    if *counter > MAX_PROPERTIES {
        return None;
    }
    let required: Vec<&str> = s
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut strict = Map::new();
    for (name, schema) in properties {
        let mut prop = node(schema, depth + 1, counter)?;
        if !required.contains(&name.as_str()) {
            prop = nullable(prop);
        }
        strict.insert(name.clone(), prop);
    }
    let all: Vec<Value> = properties.keys().map(|k| json!(k)).collect();
    out.insert("properties".into(), Value::Object(strict));
    out.insert("required".into(), Value::Array(all));
    out.insert("additionalProperties".into(), json!(false));
    Some(())
}

/// The schema, or `null`: how strict mode says "optional".
pub fn nullable(mut schema: Value) -> Value {
    let null = json!("null");
    match schema.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            schema["type"] = json!([t.clone(), "null"]);
        }
        Some(Value::Array(ts)) => {
            if !ts.contains(&null) {
                ts.push(null);
            }
        }
        Some(_) => {}
        None => {
            if let Some(Value::Array(alternatives)) = schema.get_mut("anyOf") {
                if !alternatives.iter().any(|a| a["type"] == "null") {
                    alternatives.push(json!({"type": "null"}));
                }
                return schema;
            }
            return json!({"anyOf": [schema, {"type": "null"}]});
        }
    }
    if let Some(Value::Array(values)) = schema.get_mut("enum") {
        if !values.contains(&Value::Null) {
            values.push(Value::Null);
        }
    }
    if schema.get("const").is_some() {
        return json!({"anyOf": [schema, {"type": "null"}]});
    }
    schema
}

/// `arguments` without the optional properties (at any depth) that are
/// `null`, as `params` (the tool's own schema) says which are optional.
/// Strict mode makes the model send every property, `null` for "absent";
/// a tool that does not read `null` as absent must never see those.
pub fn without_optional_nulls(params: &Value, arguments: &Value) -> Value {
    let flat;
    let schema = if refs::has_refs(params) {
        match refs::inline(params) {
            Ok(f) => {
                flat = f;
                &flat
            }
            Err(_) => params,
        }
    } else {
        params
    };
    strip(schema, arguments)
}

fn strip(schema: &Value, value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut out = Map::new();
            for (key, v) in map {
                let declared = properties.and_then(|p| p.get(key));
                if v.is_null() && declared.is_some() && !required.contains(&key.as_str()) {
                    continue;
                }
                let nested = declared.map_or(v.clone(), |d| strip(&alternative(d, v), v));
                out.insert(key.clone(), nested);
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let item = schema.get("items").cloned().unwrap_or(Value::Null);
            Value::Array(
                items
                    .iter()
                    .map(|v| strip(&alternative(&item, v), v))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

/// The schema that describes `value`: `schema` itself, or, for an
/// `anyOf`/`oneOf`, its first object alternative when `value` is an object
/// (the alternative it most likely matched).
fn alternative(schema: &Value, value: &Value) -> Value {
    for union in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alternatives)) = schema.get(union) {
            let wanted = if value.is_object() { "object" } else { "array" };
            if let Some(found) = alternatives.iter().find(|a| {
                a["type"] == wanted
                    || a["type"]
                        .as_array()
                        .is_some_and(|t| t.contains(&json!(wanted)))
            }) {
                return found.clone();
            }
        }
    }
    schema.clone()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Checks OpenAI's strict rules at every depth; returns the first breach.
    pub fn breach(schema: &Value, path: &str) -> Option<String> {
        let Value::Object(s) = schema else {
            return Some(format!("{path}: not an object"));
        };
        for key in s.keys() {
            let allowed = KEEP.contains(&key.as_str())
                || [
                    "properties",
                    "required",
                    "additionalProperties",
                    "items",
                    "anyOf",
                    "format",
                    "$ref",
                    "$defs",
                    "definitions",
                ]
                .contains(&key.as_str());
            if !allowed {
                return Some(format!(
                    "{path}: keyword '{key}' is not allowed in strict mode"
                ));
            }
        }
        if let Some(f) = s.get("format").and_then(Value::as_str) {
            if !FORMATS.contains(&f) {
                return Some(format!("{path}: format '{f}'"));
            }
        }
        let is_object = s.get("type") == Some(&json!("object"))
            || s.get("type")
                .and_then(Value::as_array)
                .is_some_and(|t| t.contains(&json!("object")));
        if is_object {
            if s.get("additionalProperties") != Some(&json!(false)) {
                return Some(format!("{path}: additionalProperties is not false"));
            }
            let props = s.get("properties").and_then(Value::as_object)?;
            let required: Vec<&str> = s
                .get("required")?
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let keys: Vec<&str> = props.keys().map(String::as_str).collect();
            if required != keys {
                return Some(format!(
                    "{path}: required {required:?} is not every property {keys:?}"
                ));
            }
            for (k, v) in props {
                if let Some(b) = breach(v, &format!("{path}.{k}")) {
                    return Some(b);
                }
            }
        }
        if let Some(items) = s.get("items") {
            if let Some(b) = breach(items, &format!("{path}[]")) {
                return Some(b);
            }
        }
        if let Some(Value::Array(alts)) = s.get("anyOf") {
            for (i, a) in alts.iter().enumerate() {
                if let Some(b) = breach(a, &format!("{path}|{i}")) {
                    return Some(b);
                }
            }
        }
        None
    }

    fn web_search() -> Value {
        json!({"type": "object", "properties": {
            "query": {"type": "string", "description": "The search query to use", "minLength": 2},
            "count": {"type": "integer", "description": "Number", "minimum": 1, "maximum": 20, "default": 10},
            "allowed_domains": {"type": "array", "items": {"type": "string"}, "description": "Only"},
            "url": {"type": "string", "format": "uri"},
            "when": {"type": "string", "format": "date-time"},
            "unit": {"type": "string", "enum": ["c", "f"]}
        }, "required": ["query"]})
    }

    #[test]
    fn strict_form_of_a_web_search_schema() {
        let s = parameters(&web_search()).unwrap();
        assert_eq!(
            s,
            json!({"type": "object", "properties": {
                "query": {"type": "string", "description": "The search query to use"},
                "count": {"type": ["integer", "null"], "description": "Number", "minimum": 1, "maximum": 20},
                "allowed_domains": {"type": ["array", "null"], "items": {"type": "string"}, "description": "Only"},
                "url": {"type": ["string", "null"]},
                "when": {"type": ["string", "null"], "format": "date-time"},
                "unit": {"type": ["string", "null"], "enum": ["c", "f", null]}
            }, "required": ["query", "count", "allowed_domains", "url", "when", "unit"],
               "additionalProperties": false})
        );
        assert_eq!(breach(&s, "$"), None);
    }

    #[test]
    fn nested_objects_are_strict_at_every_depth() {
        let p = json!({"type": "object", "properties": {
            "opts": {"type": "object", "properties": {
                "deep": {"type": "array", "items": {"type": "object", "properties": {
                    "x": {"type": "string", "maxLength": 3}}}}},
                "required": []},
            "choice": {"anyOf": [{"type": "string"}, {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}]},
            "one": {"oneOf": [{"type": "string"}, {"type": "integer"}]}
        }});
        let s = parameters(&p).unwrap();
        assert_eq!(breach(&s, "$"), None, "{s:#}");
        assert_eq!(
            s["properties"]["opts"]["properties"]["deep"]["items"]["properties"]["x"],
            json!({"type": ["string", "null"]})
        );
        assert_eq!(
            s["properties"]["choice"]["anyOf"][2],
            json!({"type": "null"})
        );
        assert_eq!(s["properties"]["one"]["anyOf"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn empty_object() {
        let s = parameters(&json!({"type": "object", "properties": {}})).unwrap();
        assert_eq!(
            s,
            json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
        );
    }

    #[test]
    fn shapes_strict_mode_cannot_say_are_not_strict() {
        for p in [
            json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}}}),
            json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": true}}}),
            json!({"type": "object", "properties": {"any": {"description": "anything"}}}),
            json!({"type": "object", "properties": {"a": {"allOf": [{"type": "string"}]}}}),
            json!({"type": "object", "properties": {"a": {"type": "array"}}}),
            json!({"type": "object", "properties": {"a": true}}),
            json!({"type": "string"}),
        ] {
            assert_eq!(parameters(&p), None, "{p}");
        }
        let mut deep = json!({"type": "string"});
        for _ in 0..12 {
            deep = json!({"type": "object", "properties": {"d": deep}, "required": ["d"]});
        }
        assert_eq!(parameters(&deep), None);
    }

    #[test]
    fn references_are_written_out_or_kept_when_recursive() {
        let shared = json!({"type": "object", "properties": {
            "a": {"$ref": "#/$defs/p"}, "b": {"$ref": "#/$defs/p", "description": "B"}},
            "required": ["a"],
            "$defs": {"p": {"type": "object", "properties": {"x": {"type": "integer"}}}}});
        let s = parameters(&shared).unwrap();
        assert_eq!(breach(&s, "$"), None, "{s:#}");
        assert!(!s.to_string().contains("$ref"), "{s}");
        assert_eq!(
            s["properties"]["b"],
            json!({"type": ["object", "null"], "description": "B", "properties": {
                "x": {"type": ["integer", "null"]}}, "required": ["x"], "additionalProperties": false})
        );
        let tree = json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/node"}},
            "required": ["root"],
            "$defs": {"node": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["children"]}}});
        let s = parameters(&tree).unwrap();
        assert_eq!(s["properties"]["root"], json!({"$ref": "#/$defs/node"}));
        assert_eq!(s["$defs"]["node"]["additionalProperties"], false);
    }

    #[test]
    fn optional_nulls_go_required_ones_stay() {
        let params = json!({"type": "object", "properties": {
            "path": {"type": "string"},
            "limit": {"type": "integer"},
            "keep": {"type": ["string", "null"]},
            "opts": {"$ref": "#/$defs/opts"},
            "list": {"type": "array", "items": {"$ref": "#/$defs/opts"}}},
            "required": ["path", "keep"],
            "$defs": {"opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}}}});
        let args = json!({"path": "a", "limit": null, "keep": null,
            "opts": {"deep": null}, "list": [{"deep": null}, {"deep": true}], "extra": null});
        assert_eq!(
            without_optional_nulls(&params, &args),
            json!({"path": "a", "keep": null, "opts": {}, "list": [{}, {"deep": true}], "extra": null})
        );
    }

    #[test]
    fn nullable_forms() {
        assert_eq!(
            nullable(json!({"type": "string"})),
            json!({"type": ["string", "null"]})
        );
        assert_eq!(
            nullable(json!({"type": ["string", "null"]})),
            json!({"type": ["string", "null"]})
        );
        assert_eq!(
            nullable(json!({"$ref": "#/$defs/a"})),
            json!({"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]})
        );
        assert_eq!(
            nullable(json!({"anyOf": [{"type": "string"}]})),
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]})
        );
    }
}
