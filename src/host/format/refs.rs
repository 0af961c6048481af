//! `$ref` inlining. A third-party tool may share parts of its schema through
//! `$defs` (or the older `definitions`) and `$ref`; Gemini's schema subset
//! has no references at all, and OpenAI strict mode is simplest to satisfy
//! when every node stands where it is used. `inline` replaces each local
//! reference (`#`, `#/$defs/Name`, any JSON pointer into the schema) with
//! the schema it points to, keywords written beside the `$ref` (usually a
//! `description`) taking precedence, and drops the definitions.
//!
//! Not every schema can be inlined: a recursive one (a tree whose nodes
//! hold nodes) would never end, references nested deeper than `MAX_DEPTH`
//! or an expansion beyond `MAX_NODES` would blow a small schema up, and a
//! reference outside the schema cannot be followed. Those are errors that
//! say which reference is at fault, for the person to read. Pure.

use serde_json::{Map, Value};

/// References followed within references, at most.
pub const MAX_DEPTH: usize = 16;
/// Schema nodes the inlined schema may hold, at most.
pub const MAX_NODES: usize = 10_000;

/// Keywords whose values are data, never schemas: a `$ref` key inside them
/// is not a reference.
const DATA: &[&str] = &["enum", "const", "default", "examples", "example"];

/// True when `schema` holds a `$ref` anywhere outside data values.
pub fn has_refs(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map.iter().any(|(key, value)| {
            (key == "$ref" && value.is_string())
                || (!DATA.contains(&key.as_str()) && has_refs(value))
        }),
        Value::Array(items) => items.iter().any(has_refs),
        _ => false,
    }
}

/// `schema` with every reference replaced by what it points to and its
/// definitions removed; Err says why it cannot be done.
pub fn inline(schema: &Value) -> Result<Value, String> {
    let mut walk = Walk {
        root: schema,
        stack: Vec::new(),
        nodes: 0,
    };
    // Definitions are expanded where they are used, and only there: one
    // that nothing uses may even be recursive.
    let mut top = schema.clone();
    if let Value::Object(map) = &mut top {
        map.remove("$defs");
        map.remove("definitions");
    }
    walk.node(&top)
}

struct Walk<'a> {
    root: &'a Value,
    /// The references being expanded, outermost first.
    stack: Vec<String>,
    nodes: usize,
}

impl Walk<'_> {
    fn node(&mut self, value: &Value) -> Result<Value, String> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(format!(
                "its schema grows past {MAX_NODES} nodes once its $refs are inlined"
            ));
        }
        match value {
            Value::Object(map) => match map.get("$ref") {
                Some(Value::String(reference)) => self.reference(reference, map),
                _ => {
                    let mut out = Map::new();
                    self.keywords(map, None, &mut out)?;
                    Ok(Value::Object(out))
                }
            },
            Value::Array(items) => items.iter().map(|v| self.node(v)).collect(),
            other => Ok(other.clone()),
        }
    }

    fn reference(&mut self, reference: &str, map: &Map<String, Value>) -> Result<Value, String> {
        if self.stack.iter().any(|r| r == reference) {
            let mut path = self.stack.clone();
            path.push(reference.to_string());
            let cycle_start = path.iter().position(|r| r == reference).unwrap_or(0);
            return Err(format!(
                "its schema is recursive ({}), which cannot be written out in full",
                path[cycle_start..].join(" -> ")
            ));
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(format!(
                "its schema nests $refs more than {MAX_DEPTH} deep (at {reference})"
            ));
        }
        let Some(pointer) = reference.strip_prefix('#') else {
            return Err(format!(
                "its schema refers outside itself ($ref {reference})"
            ));
        };
        let target = self
            .root
            .pointer(&percent_decoded(pointer))
            .ok_or_else(|| format!("its schema's $ref {reference} points to nothing"))?;
        self.stack.push(reference.to_string());
        let expanded = self.node(target);
        self.stack.pop();
        let mut out = match expanded? {
            Value::Object(m) => m,
            // `true` / `false` schemas have no keywords to merge into.
            other if map.len() == 1 => return Ok(other),
            _ => Map::new(),
        };
        out.remove("$defs");
        out.remove("definitions");
        self.keywords(map, Some("$ref"), &mut out)?;
        Ok(Value::Object(out))
    }

    /// Copies `map`'s keywords (but `skip`) into `out`, each walked,
    /// except those whose values are data (`DATA`), copied as they are.
    fn keywords(
        &mut self,
        map: &Map<String, Value>,
        skip: Option<&str>,
        out: &mut Map<String, Value>,
    ) -> Result<(), String> {
        for (key, v) in map {
            if Some(key.as_str()) == skip {
                continue;
            }
            let v = if DATA.contains(&key.as_str()) {
                v.clone()
            } else {
                self.node(v)?
            };
            out.insert(key.clone(), v);
        }
        Ok(())
    }
}

/// A URI fragment's `%XX` escapes decoded (`#/$defs/a%20b`); JSON pointer's
/// own `~0`/`~1` are left to `Value::pointer`.
fn percent_decoded(fragment: &str) -> String {
    percent_encoding::percent_decode_str(fragment)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn definitions_are_written_out_where_used() {
        let schema = json!({
            "type": "object",
            "properties": {
                "from": {"$ref": "#/$defs/point", "description": "Start"},
                "to": {"$ref": "#/definitions/point"},
                "path": {"type": "array", "items": {"$ref": "#/$defs/point"}},
                "tag": {"enum": [{"$ref": "data, not a reference"}]}
            },
            "required": ["from"],
            "$defs": {"point": {"type": "object", "description": "A point",
                "properties": {"x": {"$ref": "#/$defs/coord"}, "y": {"$ref": "#/$defs/coord"}}}},
            "definitions": {"point": {"$ref": "#/$defs/point"}},
        });
        let mut with_coord = schema.clone();
        with_coord["$defs"]["coord"] = json!({"type": "number"});
        assert!(has_refs(&with_coord));
        let out = inline(&with_coord).unwrap();
        assert!(!has_refs(&out), "{out:#}");
        let point = json!({"type": "object", "description": "A point",
            "properties": {"x": {"type": "number"}, "y": {"type": "number"}}});
        let mut described = point.clone();
        described["description"] = json!("Start");
        assert_eq!(out["properties"]["from"], described);
        assert_eq!(out["properties"]["to"], point);
        assert_eq!(out["properties"]["path"]["items"], point);
        assert_eq!(
            out["properties"]["tag"],
            json!({"enum": [{"$ref": "data, not a reference"}]})
        );
        assert!(out.get("$defs").is_none() && out.get("definitions").is_none());
        // The missing `coord` is named.
        let why = inline(&schema).unwrap_err();
        assert!(why.contains("#/$defs/coord points to nothing"), "{why}");
    }

    #[test]
    fn recursion_depth_size_and_outside_references_are_refused() {
        let tree = json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/node"}},
            "$defs": {"node": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}});
        assert_eq!(
            inline(&tree).unwrap_err(),
            "its schema is recursive (#/$defs/node -> #/$defs/node), which cannot be written out in full"
        );
        let whole = json!({"type": "object", "properties": {"again": {"$ref": "#"}}});
        assert!(inline(&whole).unwrap_err().contains("recursive (# -> #)"));

        let mut defs = Map::new();
        for i in 0..20 {
            defs.insert(
                format!("d{i}"),
                json!({"$ref": format!("#/$defs/d{}", i + 1)}),
            );
        }
        defs.insert("d20".into(), json!({"type": "string"}));
        let deep =
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/d0"}}, "$defs": defs});
        assert!(inline(&deep).unwrap_err().contains("more than 16 deep"));

        // Each level doubles: 2^20 nodes from a schema of a few dozen.
        let mut defs = Map::new();
        for i in 0..15 {
            let next = format!("#/$defs/b{}", i + 1);
            defs.insert(
                format!("b{i}"),
                json!({"type": "object", "properties": {"l": {"$ref": next}, "r": {"$ref": next}}}),
            );
        }
        defs.insert("b15".into(), json!({"type": "string"}));
        let bomb =
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/b0"}}, "$defs": defs});
        assert!(inline(&bomb).unwrap_err().contains("past 10000 nodes"));

        let outside = json!({"properties": {"a": {"$ref": "https://example.com/s.json"}}});
        assert!(inline(&outside)
            .unwrap_err()
            .contains("refers outside itself"));
    }

    #[test]
    fn pointers_decode_their_escapes() {
        let schema = json!({"properties": {"a": {"$ref": "#/$defs/a%20b~1c"}},
            "$defs": {"a b/c": {"type": "integer"}}});
        assert_eq!(
            inline(&schema).unwrap(),
            json!({"properties": {"a": {"type": "integer"}}})
        );
    }
}
