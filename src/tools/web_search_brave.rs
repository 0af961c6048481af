//! web_search_brave: search the web with the Brave Search API (decisions 8,
//! 10, 12 and 15).
//!
//! `query`/`count`/`offset` become Brave's `q`/`count`/`offset`; the key
//! travels in `X-Subscription-Token`. Brave has no domain filters, so both
//! lists are applied to the results. Brave may mark up titles and
//! descriptions (`<strong>`, entities): the common answer holds plain text.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::{ErrorCode, ToolError};
use crate::tool::{Env, Family, Tool};

use super::web::credentials::Store;
use super::web::http::{self, Client};
use super::web::search::{self, Layout, Provider};
use super::web::text::fragment_text;
use super::web::{domains, stub};
use crate::args;

pub struct WebSearchBrave;

const SCHEMA: &str = r#"{
  "name": "web_search_brave",
  "description": "Search the web using Brave Search API and use the results to inform responses. Provides up-to-date information for current events and recent data. Returns search result information formatted as search result blocks, including links as markdown hyperlinks.",
  "parameters": {
    "type": "object",
    "properties": {
      "query": {
        "type": "string",
        "description": "The search query to use",
        "minLength": 2
      },
      "count": {
        "type": "integer",
        "description": "Number of results to return (1-20)",
        "minimum": 1,
        "maximum": 20,
        "default": 10
      },
      "offset": {
        "type": "integer",
        "description": "Result offset for pagination",
        "minimum": 0,
        "default": 0
      },
      "allowed_domains": {
        "type": "array",
        "items": {
          "type": "string"
        },
        "description": "Only include search results from these domains"
      },
      "blocked_domains": {
        "type": "array",
        "items": {
          "type": "string"
        },
        "description": "Never include search results from these domains"
      }
    },
    "required": ["query"]
  },
  "annotations": {"readOnlyHint": true, "openWorldHint": true}
}"#;

const DEFAULT_URL: &str = "https://api.search.brave.com/res/v1/web/search";
const URL_VAR: &str = "IKIGAI_BRAVE_URL";
const KEY_VAR: &str = "BRAVE_API_KEY";
const PROVIDER: &str = "Brave Search";

/// The contract's texts, word for word: hosts and tests compare them.
const AUTH_MISSING: &str = "Web search requires API key configuration.\n\nBrave Search offers 2,000 free searches/month.\nGet your key: https://brave.com/search/api/\nAdd to: ~/.config/ikigai/credentials.json as 'web_search.brave.api_key'";
const CONFIG_REQUIRED: &str = "⚠ Configuration Required\n\nWeb search needs an API key. Brave Search offers 2,000 free searches/month.\n\nGet your key: https://brave.com/search/api/\nAdd to: ~/.config/ikigai/credentials.json\n\nExample:\n{\n  \"web_search\": {\n    \"brave\": {\n      \"api_key\": \"your-api-key-here\"\n    }\n  }\n}";
const CONFIG_DATA: &str = r#"{"tool": "web_search_brave", "credential": "api_key", "signup_url": "https://brave.com/search/api/"}"#;
const RATE_LIMIT: &str = "Rate limit exceeded. You've used your free search quota (2,000/month).";

/// The arguments, as the schema states them.
#[derive(Deserialize)]
struct Args {
    query: String,
    #[serde(default = "default_count")]
    count: i64,
    #[serde(default)]
    offset: i64,
    #[serde(default)]
    allowed_domains: Vec<String>,
    #[serde(default)]
    blocked_domains: Vec<String>,
}

fn default_count() -> i64 {
    10
}

impl Tool for WebSearchBrave {
    fn name(&self) -> &'static str {
        "web_search_brave"
    }
    fn command(&self) -> &'static str {
        "web-search-brave"
    }
    fn schema(&self) -> &'static str {
        SCHEMA
    }
    fn family(&self) -> Family {
        Family::Web
    }

    fn execute(&self, args: &Map<String, Value>, env: &Env) -> Result<Value, ToolError> {
        let Args {
            query,
            count,
            offset,
            allowed_domains,
            blocked_domains,
        } = args::typed(args)?;
        let query = query.as_str();
        let allowed = domains::from_list(&allowed_domains, "allowed_domains")?;
        let blocked = domains::from_list(&blocked_domains, "blocked_domains")?;
        if env.stub() {
            return Ok(stub::search(PROVIDER));
        }

        let key = Store::new(env)
            .find(KEY_VAR, &["web_search", "brave", "api_key"])?
            .ok_or_else(auth_missing)?;
        let endpoint = search::endpoint(env, URL_VAR, DEFAULT_URL)?;
        let provider = Provider {
            name: PROVIDER,
            endpoint: &endpoint,
            secrets: &[&key.value],
        };
        let client = Client::for_api(env)?;
        let (count, offset) = (count.to_string(), offset.to_string());
        let response = client
            .get(
                &endpoint,
                &[
                    ("Accept", "application/json"),
                    ("X-Subscription-Token", &key.value),
                ],
                &[("q", query), ("count", &count), ("offset", &offset)],
            )
            .map_err(|f| provider.failure(f))?;

        match response.status {
            200..=299 => {
                let body = search::json_body(&provider, &response)?;
                let hits = search::hits(&body, &LAYOUT)
                    .map_err(|what| provider.api_error(format!("unexpected answer: {what}")))?;
                Ok(search::answer(hits, &allowed, &blocked))
            }
            401 | 403 => Err(provider.error(
                ErrorCode::AuthInvalid,
                format!(
                    "Brave Search rejected the API key ({}). Check the key in {}.",
                    http::status_text(response.status),
                    key.origin
                ),
            )),
            429 => Err(provider.error(ErrorCode::RateLimit, RATE_LIMIT.to_string())),
            _ => Err(provider.status_error(&response, error_detail(&response.body))),
        }
    }
}

/// Brave's `web.results[]`, whose titles and descriptions carry HTML.
fn auth_missing() -> ToolError {
    search::auth_missing(AUTH_MISSING, CONFIG_REQUIRED, CONFIG_DATA)
}

const LAYOUT: Layout = Layout {
    list: &["web", "results"],
    url: "url",
    snippet: "description",
    text: fragment_text,
};

/// Brave's own explanation in an error body (`{"error": {"detail": ...}}`),
/// or the start of a plain-text body.
fn error_detail(body: &[u8]) -> Option<String> {
    match serde_json::from_slice::<Value>(body) {
        Ok(json) => {
            let error = &json["error"];
            error["detail"]
                .as_str()
                .or_else(|| error["message"].as_str())
                .or_else(|| error.as_str())
                .or_else(|| json["message"].as_str())
                .map(str::to_string)
        }
        Err(_) => {
            let text = String::from_utf8_lossy(body);
            (!text.trim().is_empty()).then(|| text.into_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::web::search::Hit;
    use serde_json::json;

    fn hits(body: &Value) -> Result<Vec<Hit>, String> {
        search::hits(body, &LAYOUT)
    }

    #[test]
    fn maps_results_and_strips_markup() {
        let body = json!({"type": "search", "web": {"type": "search", "results": [
            {"title": "The <strong>Rust</strong> Book", "url": "https://doc.rust-lang.org/book/",
             "description": "Learn <strong>Rust</strong> &amp; more", "age": "2 days"},
            {"title": "No description", "url": "https://x.org/"}
        ]}});
        assert_eq!(
            hits(&body).unwrap(),
            vec![
                Hit {
                    title: "The Rust Book".into(),
                    url: "https://doc.rust-lang.org/book/".into(),
                    snippet: "Learn Rust & more".into()
                },
                Hit {
                    title: "No description".into(),
                    url: "https://x.org/".into(),
                    snippet: String::new()
                },
            ]
        );
    }

    #[test]
    fn no_web_section_is_no_results_and_bad_shapes_say_what() {
        assert_eq!(hits(&json!({"type": "search"})).unwrap(), vec![]);
        assert_eq!(
            hits(&json!({"web": {"results": {}}})).unwrap_err(),
            "'web.results' is not an array"
        );
        assert_eq!(
            hits(&json!({"web": {"results": [{"title": "t"}]}})).unwrap_err(),
            "'web.results[0].url' is missing"
        );
        assert_eq!(hits(&json!([1])).unwrap_err(), "the JSON is not an object");
    }

    #[test]
    fn error_details() {
        let body = br#"{"type":"ErrorResponse","error":{"code":"VALIDATION","detail":"Unable to validate request parameter(s).","status":422}}"#;
        assert_eq!(
            error_detail(body).as_deref(),
            Some("Unable to validate request parameter(s).")
        );
        assert_eq!(error_detail(b"Bad gateway").as_deref(), Some("Bad gateway"));
        assert_eq!(error_detail(b"  "), None);
    }

    #[test]
    fn auth_missing_event_is_the_specified_json() {
        let err = auth_missing();
        assert_eq!(err.code, ErrorCode::AuthMissing);
        let event = err.event.unwrap();
        let data: Value = serde_json::from_str(event["data_json"].as_str().unwrap()).unwrap();
        assert_eq!(data["tool"], "web_search_brave");
    }
}
