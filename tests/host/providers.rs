//! `ikigai schema --provider ...` on the ten tools' schemas, a flat legacy
//! schema and a shellclaw tool, checked against each provider's documented
//! rules (decision 21; docs/providers.md).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Map, Value};

use super::Dirs;

/// The nine tools' schemas (tests/fixtures/schemas), by name.
fn spec_schemas() -> BTreeMap<String, Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/schemas");
    let mut all = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let schema: Value = serde_json::from_str(&text).unwrap();
        all.insert(schema["name"].as_str().unwrap().to_string(), schema);
    }
    all
}

/// A registry of the ten tools' schemas (played by `spec.sh`), a flat
/// legacy tool, a shellclaw tool, and a name Gemini refuses.
fn registry() -> Dirs {
    let d = Dirs::new();
    for name in spec_schemas().keys() {
        d.sys_tool("spec.sh", &name.replace('_', "-"));
    }
    d.sys_tool("flat.sh", "legacy");
    d.user_tool("shellclaw.sh", "claw");
    d.user_tool("tool.sh", "9lives");
    let names = super::names(&d.listing());
    assert_eq!(names.len(), 13, "{names:?}");
    d
}

fn schema(d: &Dirs, provider: &str) -> Vec<Value> {
    let out = d.ikigai().args(["schema", "--provider", provider]).output();
    assert_eq!(out.code, 0, "{out:?}");
    out.json().as_array().expect("an array").clone()
}

/// Every name, description and parameters schema the registry holds.
fn expected() -> BTreeMap<String, Value> {
    let mut all = spec_schemas();
    all.insert(
        "legacy_exec".into(),
        json!({"name": "legacy_exec", "description": "Execute a shell command", "parameters": {
            "type": "object", "properties": {
                "command": {"type": "string", "description": "Command to execute"},
                "cwd": {"type": "string", "description": "Working directory"}},
            "required": ["command"]}}),
    );
    all.insert(
        "claw".into(),
        json!({"name": "claw", "description": "Shellclaw fixture claw", "parameters": {
            "type": "object", "properties": {"location": {"type": "string", "description": "City"}},
            "required": ["location"]}}),
    );
    all.insert(
        "9lives".into(),
        json!({"name": "9lives", "description": "Fixture tool 9lives", "parameters": {
            "type": "object", "properties": {"text": {"type": "string", "description": "Any text"},
            "n": {"type": "integer"}}, "required": []}}),
    );
    all
}

const STRICT_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "enum",
    "const",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "$ref",
    "$defs",
];
const STRICT_FORMATS: &[&str] = &[
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

/// OpenAI strict mode's rules at every depth: every object closed
/// (`additionalProperties: false`) with every property required, and only
/// supported keywords and formats.
fn check_strict(node: &Value, path: &str) {
    let s = node
        .as_object()
        .unwrap_or_else(|| panic!("{path}: not an object"));
    for key in s.keys() {
        assert!(
            STRICT_KEYWORDS.contains(&key.as_str()),
            "{path}: '{key}' is not allowed in strict mode"
        );
    }
    if let Some(format) = s.get("format") {
        assert!(
            STRICT_FORMATS.contains(&format.as_str().unwrap()),
            "{path}: format {format}"
        );
    }
    let types: Vec<&str> = match s.get("type") {
        Some(Value::String(t)) => vec![t],
        Some(Value::Array(ts)) => ts.iter().map(|t| t.as_str().unwrap()).collect(),
        _ => vec![],
    };
    if types.contains(&"object") {
        assert_eq!(s.get("additionalProperties"), Some(&json!(false)), "{path}");
        let props = s["properties"].as_object().unwrap();
        let keys: Vec<Value> = props.keys().map(|k| json!(k)).collect();
        assert_eq!(
            s["required"],
            Value::Array(keys),
            "{path}: every property is required"
        );
        for (k, v) in props {
            check_strict(v, &format!("{path}.{k}"));
        }
    }
    if types.contains(&"array") {
        check_strict(&s["items"], &format!("{path}[]"));
    }
    for alternative in s
        .get("anyOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        check_strict(alternative, &format!("{path}|"));
    }
}

/// The strict schema says the same as the tool's: the same properties, the
/// optional ones (and only those) nullable.
fn check_same_parameters(strict: &Value, original: &Value, tool: &str) {
    let required: Vec<&str> = original["required"]
        .as_array()
        .map(|r| r.iter().map(|v| v.as_str().unwrap()).collect())
        .unwrap_or_default();
    let props = original["properties"].as_object().unwrap();
    let strict_props = strict["properties"].as_object().unwrap();
    assert_eq!(
        strict_props.keys().collect::<Vec<_>>(),
        props.keys().collect::<Vec<_>>(),
        "{tool}"
    );
    for (name, prop) in props {
        let types = &strict_props[name]["type"];
        if required.contains(&name.as_str()) {
            assert_eq!(types, &prop["type"], "{tool}.{name} stays as it is");
        } else {
            assert_eq!(
                types,
                &json!([prop["type"], "null"]),
                "{tool}.{name} is nullable"
            );
        }
        assert_eq!(
            strict_props[name]["description"], prop["description"],
            "{tool}.{name}"
        );
    }
}

fn check_openai(declarations: Vec<(Value, Value)>) {
    let expected = expected();
    assert_eq!(
        declarations
            .iter()
            .map(|(f, _)| f["name"].as_str().unwrap())
            .collect::<Vec<_>>(),
        expected.keys().map(String::as_str).collect::<Vec<_>>(),
        "every tool, sorted by name"
    );
    for (function, strict) in declarations {
        let name = function["name"].as_str().unwrap();
        let original = &expected[name];
        assert_eq!(function["description"], original["description"]);
        assert_eq!(strict, true, "{name}: all of these schemas can be strict");
        check_strict(&function["parameters"], name);
        check_same_parameters(&function["parameters"], &original["parameters"], name);
    }
}

#[test]
fn openai_chat_completions_strict_mode() {
    let d = registry();
    let tools = schema(&d, "openai");
    let mut declarations = Vec::new();
    for tool in tools {
        let obj = tool.as_object().unwrap();
        assert_eq!(obj.keys().collect::<Vec<_>>(), ["type", "function"]);
        assert_eq!(tool["type"], "function");
        let f = tool["function"].as_object().unwrap();
        assert_eq!(
            f.keys().collect::<Vec<_>>(),
            ["name", "description", "parameters", "strict"]
        );
        declarations.push((tool["function"].clone(), tool["function"]["strict"].clone()));
    }
    check_openai(declarations);
}

#[test]
fn openai_responses_strict_mode() {
    let d = registry();
    let tools = schema(&d, "openai-responses");
    let mut declarations = Vec::new();
    for tool in tools {
        let obj = tool.as_object().unwrap();
        assert_eq!(
            obj.keys().collect::<Vec<_>>(),
            ["type", "name", "description", "parameters", "strict"]
        );
        assert_eq!(tool["type"], "function");
        declarations.push((tool.clone(), tool["strict"].clone()));
    }
    check_openai(declarations);
}

#[test]
fn anthropic_input_schema_is_the_json_schema() {
    let d = registry();
    let tools = schema(&d, "anthropic");
    let expected = expected();
    let got: Vec<Value> = tools;
    let want: Vec<Value> = expected
        .values()
        .map(|s| json!({"name": s["name"], "description": s["description"], "input_schema": s["parameters"]}))
        .collect();
    assert_eq!(got, want);
}

/// Gemini's Schema keys; anything else is HTTP 400.
const GEMINI_KEYS: &[&str] = &[
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

fn check_gemini(node: &Map<String, Value>, path: &str) {
    for (key, value) in node {
        assert!(
            GEMINI_KEYS.contains(&key.as_str()),
            "{path}: '{key}' is rejected by Gemini"
        );
        if key == "type" {
            assert!(
                value.is_string(),
                "{path}: type arrays are rejected by Gemini"
            );
        }
    }
    if let Some(props) = node.get("properties") {
        let props = props.as_object().unwrap();
        assert!(!props.is_empty(), "{path}: empty properties are rejected");
        for (k, v) in props {
            check_gemini(v.as_object().unwrap(), &format!("{path}.{k}"));
        }
        for r in node
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            assert!(
                props.contains_key(r.as_str().unwrap()),
                "{path}: required {r}"
            );
        }
    }
    if node.get("type") == Some(&json!("array")) {
        check_gemini(
            node["items"].as_object().expect("items"),
            &format!("{path}[]"),
        );
    }
    if let Some(values) = node.get("enum") {
        assert_eq!(node["type"], "string", "{path}: enum only on strings");
        assert!(values.as_array().unwrap().iter().all(Value::is_string));
    }
}

#[test]
fn google_gemini_openapi_subset() {
    let d = registry();
    let tools = schema(&d, "google");
    // The person is told which tools Gemini cannot be offered.
    let out = d.ikigai().args(["schema", "--provider", "google"]).output();
    assert!(
        out.stderr.contains("Gemini refuses tool names")
            && out.stderr.contains("not offered to the model: 9lives"),
        "{out:?}"
    );
    let out = d
        .ikigai()
        .args(["schema", "--provider", "anthropic"])
        .output();
    assert_eq!(out.stderr, "", "{out:?}");
    // The assistant's own names are accepted here too.
    assert_eq!(schema(&d, "gemini"), tools);
    assert_eq!(schema(&d, "Google"), tools);
    assert_eq!(tools.len(), 1);
    let declarations = tools[0]["functionDeclarations"].as_array().unwrap();
    let expected = expected();
    let names: Vec<&str> = declarations
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    let wanted: Vec<&str> = expected
        .keys()
        .map(String::as_str)
        .filter(|n| *n != "9lives")
        .collect();
    assert_eq!(names, wanted, "a name starting with a digit is left out");
    for f in declarations {
        let name = f["name"].as_str().unwrap();
        assert_eq!(f["description"], expected[name]["description"]);
        let params = f["parameters"].as_object().unwrap();
        assert_eq!(params["type"], "object");
        check_gemini(params, name);
        // The same parameters, with what Gemini cannot take left out.
        let original = expected[name]["parameters"]["properties"]
            .as_object()
            .unwrap();
        assert_eq!(
            params["properties"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            original.keys().collect::<Vec<_>>()
        );
        assert_eq!(
            params.get("required"),
            expected[name]["parameters"]
                .get("required")
                .filter(|r| r != &&json!([]))
        );
    }
    // The Brave search schema in Gemini's words.
    let brave = declarations
        .iter()
        .find(|f| f["name"] == "web_search_brave")
        .unwrap();
    assert_eq!(
        brave["parameters"]["properties"]["count"],
        json!({"type": "integer", "description": "Number of results to return (1-20)", "minimum": 1, "maximum": 20})
    );
}

/// A registry of the two `refs.sh` tools: `shapes`, whose `$ref`s can be
/// written out, and the recursive `tree`.
fn refs_registry() -> Dirs {
    let d = Dirs::new();
    d.user_tool("refs.sh", "shapes");
    d.user_tool("refs.sh", "tree");
    assert_eq!(super::names(&d.listing()), ["shapes", "tree"]);
    d
}

/// The `point` of `refs.sh` as strict mode has it, optional or not.
fn strict_point(description: Option<&str>) -> Value {
    let mut point = json!({"type": "object", "properties": {
        "x": {"type": "number"}, "y": {"type": "number"}},
        "required": ["x", "y"], "additionalProperties": false});
    if let Some(d) = description {
        point["description"] = json!(d);
    }
    point
}

#[test]
fn ref_schemas_are_written_out_for_openai_strict_mode() {
    let d = refs_registry();
    for provider in ["openai", "openai-responses"] {
        let tools = schema(&d, provider);
        let function = |i: usize| {
            if provider == "openai" {
                tools[i]["function"].clone()
            } else {
                tools[i].clone()
            }
        };
        let shapes = function(0);
        assert_eq!(shapes["strict"], true, "{provider}");
        let params = &shapes["parameters"];
        check_strict(params, "shapes");
        assert!(!params.to_string().contains("$ref"), "{provider}: {params}");
        assert_eq!(
            params["properties"]["from"],
            strict_point(Some("Where it starts"))
        );
        assert_eq!(params["properties"]["to"], strict_point(None));
        assert_eq!(
            params["properties"]["path"],
            json!({"type": ["array", "null"], "items": strict_point(None)})
        );
        // Strict mode takes a recursive schema as references into $defs,
        // each definition strict.
        let tree = function(1);
        assert_eq!(tree["strict"], true, "{provider}");
        let params = &tree["parameters"];
        assert_eq!(
            params["properties"]["root"],
            json!({"$ref": "#/$defs/node"})
        );
        let node = &params["$defs"]["node"];
        check_strict(node, "tree.$defs.node");
        assert_eq!(
            node["properties"]["children"]["items"],
            json!({"$ref": "#/$defs/node"})
        );
    }
}

#[test]
fn ref_schemas_for_anthropic_and_gemini() {
    let d = refs_registry();
    // Anthropic reads JSON Schema, references and all.
    let tools = schema(&d, "anthropic");
    assert_eq!(
        tools[1]["input_schema"]["$defs"]["node"]["properties"]["children"]["items"],
        json!({"$ref": "#/$defs/node"})
    );
    assert_eq!(
        tools[0]["input_schema"]["properties"]["from"],
        json!({"$ref": "#/$defs/point", "description": "Where it starts"})
    );
    // Gemini has no references: written out, or the tool is left out with
    // the reason.
    let out = d.ikigai().args(["schema", "--provider", "google"]).output();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains(
            "not offered to the model: tree (its schema is recursive (#/$defs/node -> #/$defs/node), which cannot be written out in full)"
        ),
        "{}",
        out.stderr
    );
    let tools = out.json();
    let declarations = tools[0]["functionDeclarations"].as_array().unwrap();
    assert_eq!(declarations.len(), 1);
    assert_eq!(declarations[0]["name"], "shapes");
    let params = declarations[0]["parameters"].as_object().unwrap();
    check_gemini(params, "shapes");
    assert_eq!(
        params["properties"]["from"],
        json!({"type": "object", "description": "Where it starts", "properties": {
            "x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]})
    );
    assert_eq!(
        params["properties"]["path"]["items"]["properties"]["x"]["type"],
        "number"
    );
}

/// Annotations are the host's to read (call order, approval): no provider's
/// tool definition carries them, while `ikigai tools NAME --json` shows them.
#[test]
fn annotations_never_reach_a_provider() {
    let d = registry();
    for provider in ["openai", "openai-responses", "anthropic", "google"] {
        let text = serde_json::to_string(&schema(&d, provider)).unwrap();
        assert!(!text.contains("annotations"), "{provider}: {text}");
        assert!(!text.contains("Hint"), "{provider}: {text}");
    }
    let out = d.ikigai().args(["tools", "--json", "grep"]).output();
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.json()["schema"]["annotations"],
        json!({"readOnlyHint": true})
    );
}
