//! Random and mutated schema answers (see `crate::fuzzing`), as a tool of
//! anyone's might print them: never a panic; a schema that is taken is in
//! the normal form (a valid name, a string description, an object schema
//! whose properties are schemas, a list of names as `required`), and the
//! normal form is its own normal form, so the registry never holds a
//! schema that providers would refuse.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::fuzzing::{config, json, mutate};

const WORDS: &[&str] = &[
    "name",
    "description",
    "parameters",
    "annotations",
    "type",
    "object",
    "string",
    "properties",
    "required",
    "readOnlyHint",
    "destructiveHint",
    "returns",
    "x",
    "file_path",
];

/// Our own tools' schemas as they print them (the fixtures that
/// `tests/tools/protocol.rs` holds equal to each tool's `--schema`): the host
/// knows a tool only by what it prints, never by its code.
fn ours() -> Vec<Value> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/schemas");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the schema fixtures")
        .map(|e| e.expect("a fixture").path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).expect("a readable fixture");
            serde_json::from_str(&text).expect("our schemas are JSON")
        })
        .collect()
}

fn check(answer: &Value) -> Result<(), TestCaseError> {
    let Ok(normal) = normalise(answer) else {
        return Ok(());
    };
    prop_assert!(valid_name(normal["name"].as_str().unwrap_or_default()));
    prop_assert!(normal["description"].is_string());
    let params = &normal["parameters"];
    prop_assert_eq!(&params["type"], "object");
    let properties = params["properties"].as_object();
    prop_assert!(properties.is_some(), "properties: {}", params);
    prop_assert!(properties.into_iter().flatten().all(|(_, p)| p.is_object()));
    if let Some(required) = params.get("required") {
        prop_assert!(required
            .as_array()
            .is_some_and(|r| r.iter().all(Value::is_string)));
    }
    if let Some(a) = normal.get("annotations") {
        prop_assert!(a.is_object());
    }
    prop_assert_eq!(
        normalise(&normal),
        Ok(normal.clone()),
        "not its own normal form"
    );
    Ok(())
}

fn answer() -> impl Strategy<Value = Value> {
    (
        "[a-z_-]{0,10}",
        json(WORDS),
        json(WORDS),
        proptest::option::of(json(WORDS)),
    )
        .prop_map(|(name, description, parameters, annotations)| {
            let description = if description.is_string() {
                description
            } else {
                json!("d")
            };
            let mut answer = json!({"name": name, "description": description,
                                    "parameters": parameters});
            if let Some(a) = annotations {
                answer["annotations"] = a;
            }
            answer
        })
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn random_answers(value in prop_oneof![json(WORDS), answer()]) {
        check(&value)?;
    }

    #[test]
    fn mutated_schemas_of_ours(
        tool in 0usize..64,
        path in proptest::collection::vec(any::<usize>(), 0..6),
        new in json(WORDS),
    ) {
        let ours = ours();
        let schema = &ours[tool % ours.len()];
        prop_assert!(normalise(schema).is_ok());
        check(&mutate(schema, &path, new))?;
    }
}
