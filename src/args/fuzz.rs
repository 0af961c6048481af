//! Random and mutated arguments (see `crate::fuzzing`) against every tool's
//! own schema and against random schemas: never a panic, and what passes
//! validation is what the schema asks for (every required parameter, no
//! unknown one, each of its type, in its enum and range), so a tool never
//! starts on arguments it cannot use.

use proptest::prelude::*;
use serde_json::{Map, Value};

use super::*;
use crate::fuzzing::{config, json, mutate};

const WORDS: &[&str] = &[
    "file_path",
    "offset",
    "limit",
    "command",
    "pattern",
    "path",
    "glob",
    "content",
    "old_string",
    "new_string",
    "replace_all",
    "url",
    "query",
    "count",
    "type",
    "string",
    "integer",
    "number",
    "boolean",
    "array",
    "object",
    "properties",
    "required",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "items",
    "parameters",
];

fn schemas() -> Vec<Value> {
    crate::tools::TOOLS
        .iter()
        .map(|t| serde_json::from_str(t.schema()).expect("our schemas are JSON"))
        .collect()
}

/// Whether `value` is what `prop` asks for, as validation promises.
fn conforms(prop: &Value, value: &Value) -> bool {
    let typed = match prop["type"].as_str() {
        Some("string") => value.is_string(),
        Some("boolean") => value.is_boolean(),
        Some("number") => value.is_number(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("array") => value.is_array(),
        Some("object") => value.is_object(),
        _ => true,
    };
    let in_enum = prop["enum"].as_array().is_none_or(|e| e.contains(value));
    let n = value.as_f64();
    let above = match (n, prop["minimum"].as_f64()) {
        (Some(n), Some(min)) => n >= min,
        _ => true,
    };
    let below = match (n, prop["maximum"].as_f64()) {
        (Some(n), Some(max)) => n <= max,
        _ => true,
    };
    let chars = value.as_str().map(|s| s.chars().count() as u64);
    let long_enough = match (chars, prop["minLength"].as_u64()) {
        (Some(c), Some(min)) => c >= min,
        _ => true,
    };
    let short_enough = match (chars, prop["maxLength"].as_u64()) {
        (Some(c), Some(max)) => c <= max,
        _ => true,
    };
    let items = match (prop.get("items"), value) {
        (Some(items), Value::Array(elements)) => elements.iter().all(|e| conforms(items, e)),
        _ => true,
    };
    typed && in_enum && above && below && long_enough && short_enough && items
}

/// Validation's promise for `args` against `schema`.
fn check(schema: &Value, args: &Map<String, Value>) -> Result<(), TestCaseError> {
    let Ok(out) = validate(schema, args) else {
        return Ok(());
    };
    let params = &schema["parameters"];
    let empty = Map::new();
    let properties = params["properties"].as_object().unwrap_or(&empty);
    for name in params["required"].as_array().into_iter().flatten() {
        if let Some(name) = name.as_str() {
            prop_assert!(
                out.contains_key(name),
                "required '{}' missing: {:?}",
                name,
                out
            );
        }
    }
    for (name, value) in &out {
        let prop = properties.get(name);
        prop_assert!(prop.is_some(), "unknown '{}' passed", name);
        let prop = prop.unwrap_or(&Value::Null);
        prop_assert!(
            conforms(prop, value),
            "'{}' = {} passed {}",
            name,
            value,
            prop
        );
    }
    Ok(())
}

/// Arguments named as a tool's parameters (mostly), any values.
fn arguments() -> impl Strategy<Value = Map<String, Value>> {
    proptest::collection::vec((crate::fuzzing::word(WORDS), json(WORDS)), 0..6)
        .prop_map(|pairs| pairs.into_iter().collect())
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn random_arguments_against_our_schemas(tool in 0usize..64, args in arguments()) {
        let schemas = schemas();
        check(&schemas[tool % schemas.len()], &args)?;
    }

    #[test]
    fn random_arguments_against_random_schemas(schema in json(WORDS), args in arguments()) {
        check(&serde_json::json!({"parameters": schema}), &args)?;
    }

    #[test]
    fn mutated_schemas_never_panic(
        tool in 0usize..64,
        path in proptest::collection::vec(any::<usize>(), 0..6),
        new in json(WORDS),
        args in arguments(),
    ) {
        let schemas = schemas();
        let schema = mutate(&schemas[tool % schemas.len()], &path, new);
        check(&schema, &args)?;
    }

}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn input_is_an_object_or_an_error(bytes in proptest::collection::vec(any::<u8>(), 0..64),
                                      value in json(WORDS)) {
        for input in [bytes, value.to_string().into_bytes()] {
            let parsed = serde_json::from_slice::<Value>(&input).ok();
            match parse_input(&input) {
                Ok(map) => prop_assert_eq!(parsed, Some(Value::Object(map))),
                Err(e) => prop_assert!(!matches!(parsed, Some(Value::Object(_))), "{}", e.message),
            }
        }
    }
}
