//! Generic argument validation against a tool's own schema, done once before
//! any tool runs, so every tool answers bad input the same way: INVALID_ARG
//! with a message naming the parameter (decision 3).
//!
//! It understands the JSON-Schema subset our schemas use: `type` (string,
//! integer, number, boolean, array, object), `items`, `enum`, `minimum`,
//! `maximum`, `minLength`, `maxLength`, `required`. An optional parameter given
//! as `null` counts as absent, so OpenAI strict mode (which sends every
//! property, `null` for the unused ones) round-trips.
//!
//! A tool then reads the validated arguments into a struct of its own with
//! [`typed`], its defaults stated once on the struct's fields.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::ToolError;

/// Parses the raw input text into the arguments object.
pub fn parse_input(input: &[u8]) -> Result<Map<String, Value>, ToolError> {
    if input.iter().all(u8::is_ascii_whitespace) {
        return Err(ToolError::invalid_arg(
            "no input: expected a JSON object of arguments (on stdin, or as the first argument)",
        ));
    }
    match serde_json::from_slice::<Value>(input) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(ToolError::invalid_arg(format!(
            "arguments must be a JSON object, got {}",
            type_name(&other)
        ))),
        Err(e) => Err(ToolError::invalid_arg(format!(
            "input is not valid JSON: {e}"
        ))),
    }
}

/// Checks `args` against `schema` (the tool's whole `--schema` object) and
/// returns the arguments with `null` optionals removed and integral floats
/// (`5.0`) turned into integers.
pub fn validate(
    schema: &Value,
    args: &Map<String, Value>,
) -> Result<Map<String, Value>, ToolError> {
    let params = &schema["parameters"];
    let empty = Map::new();
    let properties = params["properties"].as_object().unwrap_or(&empty);
    let required: Vec<&str> = params["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();

    let mut out = Map::new();
    for (name, value) in args {
        let Some(prop) = properties.get(name) else {
            let known: Vec<&str> = properties.keys().map(String::as_str).collect();
            return Err(ToolError::invalid_arg(format!(
                "unknown parameter '{name}' (parameters: {})",
                known.join(", ")
            )));
        };
        if value.is_null() && !required.contains(&name.as_str()) {
            continue;
        }
        out.insert(name.clone(), check_value(name, prop, value)?);
    }
    for name in required {
        if !out.contains_key(name) {
            return Err(ToolError::invalid_arg(format!(
                "missing required parameter '{name}'"
            )));
        }
    }
    Ok(out)
}

/// The validated arguments as the tool's own struct, strings borrowed from
/// `args` (a file's content is not copied). Validation has already checked
/// every type the struct asks for, so a failure here means the struct and
/// the schema disagree; it is still answered as INVALID_ARG, never a panic.
pub fn typed<'a, T: Deserialize<'a>>(args: &'a Map<String, Value>) -> Result<T, ToolError> {
    T::deserialize(args).map_err(|e| ToolError::invalid_arg(format!("invalid arguments: {e}")))
}

fn check_value(name: &str, prop: &Value, value: &Value) -> Result<Value, ToolError> {
    let value = match prop["type"].as_str() {
        Some(ty) => check_type(name, ty, value)?,
        None => value.clone(),
    };
    if let Some(allowed) = prop["enum"].as_array() {
        if !allowed.contains(&value) {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            return Err(ToolError::invalid_arg(format!(
                "parameter '{name}' must be one of {}, got {value}",
                list.join(", ")
            )));
        }
    }
    if let Some(n) = value.as_f64() {
        if let Some(min) = prop["minimum"].as_f64() {
            if n < min {
                return Err(ToolError::invalid_arg(format!(
                    "parameter '{name}' must be at least {}, got {value}",
                    prop["minimum"]
                )));
            }
        }
        if let Some(max) = prop["maximum"].as_f64() {
            if n > max {
                return Err(ToolError::invalid_arg(format!(
                    "parameter '{name}' must be at most {}, got {value}",
                    prop["maximum"]
                )));
            }
        }
    }
    if let Some(s) = value.as_str() {
        let chars = s.chars().count() as u64;
        if let Some(min) = prop["minLength"].as_u64() {
            if chars < min {
                return Err(ToolError::invalid_arg(format!(
                    "parameter '{name}' must be at least {min} characters long, got {chars}"
                )));
            }
        }
        if let Some(max) = prop["maxLength"].as_u64() {
            if chars > max {
                return Err(ToolError::invalid_arg(format!(
                    "parameter '{name}' must be at most {max} characters long, got {chars}"
                )));
            }
        }
    }
    if let (Some(items), Value::Array(elements)) = (prop.get("items"), &value) {
        let checked = elements
            .iter()
            .enumerate()
            .map(|(i, e)| check_value(&format!("{name}[{i}]"), items, e))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(Value::Array(checked));
    }
    Ok(value)
}

fn check_type(name: &str, ty: &str, value: &Value) -> Result<Value, ToolError> {
    let ok = match ty {
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "number" => value.is_number(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "integer" => {
            if value.is_i64() || value.is_u64() {
                true
            } else if let Some(f) = value
                .as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            {
                return Ok(Value::from(f as i64));
            } else {
                false
            }
        }
        _ => true,
    };
    if ok {
        Ok(value.clone())
    } else {
        let article = if ty == "integer" || ty == "array" || ty == "object" {
            "an"
        } else {
            "a"
        };
        Err(ToolError::invalid_arg(format!(
            "parameter '{name}' must be {article} {ty}, got {}",
            describe(value)
        )))
    }
}

/// "a string", "an array", ... for messages (the host's too).
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::Number(n) => format!("{n}"),
        Value::Null => "null".to_string(),
        other => type_name(other).to_string(),
    }
}

#[cfg(test)]
mod fuzz;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use serde_json::json;

    fn schema() -> Value {
        json!({"name": "t", "description": "d", "parameters": {"type": "object", "properties": {
            "path": {"type": "string"},
            "query": {"type": "string", "minLength": 2},
            "count": {"type": "integer", "minimum": 1, "maximum": 20},
            "all": {"type": "boolean"},
            "domains": {"type": "array", "items": {"type": "string"}},
            "unit": {"type": "string", "enum": ["c", "f"]}
        }, "required": ["path"]}})
    }

    fn check(args: Value) -> Result<Map<String, Value>, String> {
        let map = args.as_object().unwrap().clone();
        validate(&schema(), &map).map_err(|e| {
            assert_eq!(e.code, ErrorCode::InvalidArg);
            e.message
        })
    }

    #[test]
    fn accepts_valid_and_drops_null_optionals() {
        let out = check(json!({"path": "a", "count": 3, "all": null})).unwrap();
        assert_eq!(Value::Object(out), json!({"path": "a", "count": 3}));
    }

    #[test]
    fn names_the_parameter() {
        assert_eq!(
            check(json!({})).unwrap_err(),
            "missing required parameter 'path'"
        );
        assert_eq!(
            check(json!({"path": null})).unwrap_err(),
            "parameter 'path' must be a string, got null"
        );
        assert_eq!(
            check(json!({"path": 1})).unwrap_err(),
            "parameter 'path' must be a string, got 1"
        );
        assert_eq!(
            check(json!({"path": "a", "count": "3"})).unwrap_err(),
            "parameter 'count' must be an integer, got a string"
        );
        assert_eq!(
            check(json!({"path": "a", "count": 1.5})).unwrap_err(),
            "parameter 'count' must be an integer, got 1.5"
        );
        assert_eq!(
            check(json!({"path": "a", "count": 0})).unwrap_err(),
            "parameter 'count' must be at least 1, got 0"
        );
        assert_eq!(
            check(json!({"path": "a", "count": 21})).unwrap_err(),
            "parameter 'count' must be at most 20, got 21"
        );
        assert_eq!(
            check(json!({"path": "a", "query": "x"})).unwrap_err(),
            "parameter 'query' must be at least 2 characters long, got 1"
        );
        assert_eq!(
            check(json!({"path": "a", "domains": ["x", 2]})).unwrap_err(),
            "parameter 'domains[1]' must be a string, got 2"
        );
        assert_eq!(
            check(json!({"path": "a", "unit": "k"})).unwrap_err(),
            "parameter 'unit' must be one of \"c\", \"f\", got \"k\""
        );
        assert!(check(json!({"path": "a", "pth": "b"}))
            .unwrap_err()
            .starts_with("unknown parameter 'pth'"));
    }

    #[test]
    fn integral_floats_become_integers() {
        let out = check(json!({"path": "a", "count": 5.0})).unwrap();
        assert!(out["count"].is_i64());
    }

    #[test]
    fn typed_reads_validated_arguments_with_defaults() {
        #[derive(Deserialize)]
        struct Args<'a> {
            path: &'a str,
            #[serde(default = "ten")]
            count: u64,
            #[serde(default)]
            all: bool,
        }
        fn ten() -> u64 {
            10
        }
        let map = check(json!({"path": "a/b", "all": null})).unwrap();
        let args: Args = typed(&map).unwrap();
        assert_eq!((args.path, args.count, args.all), ("a/b", 10, false));
        let map = check(json!({"path": "x", "count": 3.0, "all": true})).unwrap();
        let args: Args = typed(&map).unwrap();
        assert_eq!((args.path, args.count, args.all), ("x", 3, true));
        let bad = json!({"count": 1}).as_object().unwrap().clone();
        let err = typed::<Args>(&bad).err().unwrap();
        assert_eq!(err.code, ErrorCode::InvalidArg);
        assert!(err.message.contains("path"), "{}", err.message);
    }

    #[test]
    fn parse_input_errors() {
        assert!(parse_input(b"")
            .unwrap_err()
            .message
            .starts_with("no input"));
        assert!(parse_input(b"[1]")
            .unwrap_err()
            .message
            .contains("got an array"));
        assert!(parse_input(b"{")
            .unwrap_err()
            .message
            .starts_with("input is not valid JSON"));
        assert!(parse_input(b"\xff").is_err());
        assert!(parse_input(b" {\"a\":1} ").is_ok());
    }
}
