//! Typed arguments of the web tools: each tool reads its arguments, already
//! checked against its schema, into a struct whose defaults are stated
//! once, on its fields. A mismatch the schema check let through is still
//! INVALID_ARG naming what is wrong, never a panic.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::ToolError;

/// `args` as `T`.
pub fn read<T: DeserializeOwned>(args: &Map<String, Value>) -> Result<T, ToolError> {
    serde_json::from_value(Value::Object(args.clone()))
        .map_err(|e| ToolError::invalid_arg(format!("invalid arguments: {e}")))
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Example {
        url: String,
        #[serde(default = "one")]
        offset: u64,
        limit: Option<u64>,
    }

    fn one() -> u64 {
        1
    }

    #[test]
    fn defaults_and_errors() {
        let args = json!({"url": "https://x.org/"});
        assert_eq!(
            read::<Example>(args.as_object().unwrap()).unwrap(),
            Example {
                url: "https://x.org/".into(),
                offset: 1,
                limit: None
            }
        );
        let args = json!({"url": 5});
        let err = read::<Example>(args.as_object().unwrap()).unwrap_err();
        assert_eq!(
            err.message,
            "invalid arguments: invalid type: integer `5`, expected a string"
        );
        let err = read::<Example>(&Map::new()).unwrap_err();
        assert_eq!(err.message, "invalid arguments: missing field `url`");
    }
}
