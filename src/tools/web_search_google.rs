//! web_search_google: search the web with Google's Custom Search JSON API
//! (decisions 8, 10, 12 and 15).
//!
//! `query`/`num`/`start` become Google's `q`/`num`/`start`, with the key and
//! engine id as `key`/`cx`. Google filters by one domain (`siteSearch` with
//! `siteSearchFilter=i` or `e`): a single allowed domain is sent as an
//! include, otherwise the first blocked domain as an exclude, and every
//! filter is applied to the results as well, so lists Google cannot express
//! still hold. Errors are told apart by Google's `reason`.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::{ErrorCode, ToolError};
use crate::tool::{Env, Family, Tool};

use super::web::credentials::Store;
use super::web::http::{self, Client, Fetched};
use super::web::search::{self, Layout, Provider};
use super::web::{domains, stub};
use crate::args;

pub struct WebSearchGoogle;

const SCHEMA: &str = r#"{
  "name": "web_search_google",
  "description": "Search the web using Google Custom Search API and use the results to inform responses. Provides up-to-date information for current events and recent data. Returns search result information formatted as search result blocks, including links as markdown hyperlinks.",
  "parameters": {
    "type": "object",
    "properties": {
      "query": {
        "type": "string",
        "description": "The search query to use",
        "minLength": 2
      },
      "num": {
        "type": "integer",
        "description": "Number of results to return (1-10)",
        "minimum": 1,
        "maximum": 10,
        "default": 10
      },
      "start": {
        "type": "integer",
        "description": "Result index offset for pagination (1-based, max 91)",
        "minimum": 1,
        "maximum": 91,
        "default": 1
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

const DEFAULT_URL: &str = "https://www.googleapis.com/customsearch/v1";
const URL_VAR: &str = "IKIGAI_GOOGLE_URL";
const KEY_VAR: &str = "GOOGLE_SEARCH_API_KEY";
const ENGINE_VAR: &str = "GOOGLE_SEARCH_ENGINE_ID";
const PROVIDER: &str = "Google Custom Search";
/// Google serves no result past the 100th: `start + num` at most 100.
const LAST_RESULT: i64 = 100;

/// The contract's texts, word for word: hosts and tests compare them.
const AUTH_MISSING: &str = "Web search requires API key configuration.\n\nGoogle Custom Search offers 100 free searches/day.\nGet API key: https://developers.google.com/custom-search/v1/overview\nGet Search Engine ID: https://programmablesearchengine.google.com/controlpanel/create\nAdd to: ~/.config/ikigai/credentials.json as 'web_search.google.api_key' and 'web_search.google.engine_id'";
const CONFIG_REQUIRED: &str = "⚠ Configuration Required\n\nWeb search needs an API key and Search Engine ID. Google Custom Search offers 100 free searches/day.\n\nGet API key: https://developers.google.com/custom-search/v1/overview\nGet Search Engine ID: https://programmablesearchengine.google.com/controlpanel/create\nAdd to: ~/.config/ikigai/credentials.json\n\nExample:\n{\n  \"web_search\": {\n    \"google\": {\n      \"api_key\": \"your-api-key-here\",\n      \"engine_id\": \"your-search-engine-id\"\n    }\n  }\n}";
const CONFIG_DATA: &str =
    r#"{"tool": "web_search_google", "credentials": ["api_key", "engine_id"]}"#;
const DAILY_LIMIT: &str = "Rate limit exceeded. You've used your free search quota (100/day).";

/// Google's reasons for a key or project that may not search (the `details`
/// form of newer error bodies too).
const AUTH_REASONS: &[&str] = &[
    "keyInvalid",
    "keyExpired",
    "forbidden",
    "accessNotConfigured",
    "API_KEY_INVALID",
    "SERVICE_DISABLED",
];
const RATE_REASONS: &[&str] = &[
    "dailyLimitExceeded",
    "rateLimitExceeded",
    "userRateLimitExceeded",
    "RATE_LIMIT_EXCEEDED",
];

/// The arguments, as the schema states them.
#[derive(Deserialize)]
struct Args {
    query: String,
    #[serde(default = "default_start")]
    start: i64,
    #[serde(default = "default_num")]
    num: i64,
    #[serde(default)]
    allowed_domains: Vec<String>,
    #[serde(default)]
    blocked_domains: Vec<String>,
}

fn default_start() -> i64 {
    1
}

fn default_num() -> i64 {
    10
}

impl Tool for WebSearchGoogle {
    fn name(&self) -> &'static str {
        "web_search_google"
    }
    fn command(&self) -> &'static str {
        "web-search-google"
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
            start,
            num,
            allowed_domains,
            blocked_domains,
        } = args::typed(args)?;
        let query = query.as_str();
        let num = num.min(LAST_RESULT - start);
        let allowed = domains::from_list(&allowed_domains, "allowed_domains")?;
        let blocked = domains::from_list(&blocked_domains, "blocked_domains")?;
        if env.stub() {
            return Ok(stub::search(PROVIDER));
        }

        let mut store = Store::new(env);
        let key = store.find(KEY_VAR, &["web_search", "google", "api_key"])?;
        let engine = store.find(ENGINE_VAR, &["web_search", "google", "engine_id"])?;
        let (Some(key), Some(engine)) = (key, engine) else {
            return Err(auth_missing());
        };
        let endpoint = search::endpoint(env, URL_VAR, DEFAULT_URL)?;
        let provider = Provider {
            name: PROVIDER,
            endpoint: &endpoint,
            secrets: &[&key.value],
        };
        let client = Client::for_api(env)?;
        let (num, start) = (num.to_string(), start.to_string());
        let mut query_params = vec![
            ("key", key.value.as_str()),
            ("cx", engine.value.as_str()),
            ("q", query),
            ("num", &num),
            ("start", &start),
        ];
        if let Some((site, filter)) = site_search(&allowed, &blocked) {
            query_params.push(("siteSearch", site));
            query_params.push(("siteSearchFilter", filter));
        }
        let response = client
            .get(&endpoint, &[("Accept", "application/json")], &query_params)
            .map_err(|f| provider.failure(f))?;

        if (200..300).contains(&response.status) {
            let body = search::json_body(&provider, &response)?;
            let hits = search::hits(&body, &LAYOUT)
                .map_err(|what| provider.api_error(format!("unexpected answer: {what}")))?;
            return Ok(search::answer(hits, &allowed, &blocked));
        }
        Err(status_error(
            &provider,
            &response,
            &key.origin,
            &engine.origin,
        ))
    }
}

/// The one domain filter Google can take: a lone allowed domain, else the
/// first blocked one.
fn site_search<'a>(allowed: &'a [String], blocked: &'a [String]) -> Option<(&'a str, &'a str)> {
    match (allowed, blocked) {
        ([only], _) => Some((only, "i")),
        (_, [first, ..]) => Some((first, "e")),
        _ => None,
    }
}

/// Google's `items[]`, plain text.
fn auth_missing() -> ToolError {
    search::auth_missing(AUTH_MISSING, CONFIG_REQUIRED, CONFIG_DATA)
}

const LAYOUT: Layout = Layout {
    list: &["items"],
    url: "link",
    snippet: "snippet",
    text: trimmed,
};

fn trimmed(text: &str) -> String {
    text.trim().to_string()
}

/// Google's error body: its message and every `reason` it gives.
fn parse_error(body: &[u8]) -> (Option<String>, Vec<String>) {
    let Ok(json) = serde_json::from_slice::<Value>(body) else {
        let text = String::from_utf8_lossy(body).trim().to_string();
        return ((!text.is_empty()).then_some(text), Vec::new());
    };
    let error = &json["error"];
    let message = error["message"].as_str().map(str::to_string);
    let reasons = ["errors", "details"]
        .iter()
        .filter_map(|list| error[list].as_array())
        .flatten()
        .filter_map(|e| e["reason"].as_str().map(str::to_string))
        .collect();
    (message, reasons)
}

fn status_error(
    provider: &Provider,
    response: &Fetched,
    key_origin: &str,
    engine_origin: &str,
) -> ToolError {
    let (message, reasons) = parse_error(&response.body);
    let has = |set: &[&str]| reasons.iter().any(|r| set.contains(&r.as_str()));
    let status = response.status;
    let said = |message: &Option<String>| match message {
        Some(m) => format!(
            "{}: {}",
            http::status_text(status),
            search::one_line(m, 300)
        ),
        None => http::status_text(status),
    };
    if status == 401 || (matches!(status, 400 | 403) && has(AUTH_REASONS)) {
        return provider.error(
            ErrorCode::AuthInvalid,
            format!(
                "Google Custom Search rejected the credentials ({}). Check the API key in {key_origin} and the engine id in {engine_origin}.",
                said(&message)
            ),
        );
    }
    if status == 429 || (status == 403 && has(RATE_REASONS)) {
        let text = if reasons.iter().any(|r| r == "dailyLimitExceeded") {
            DAILY_LIMIT.to_string()
        } else {
            format!(
                "Rate limit exceeded. Google Custom Search refused the search ({}).",
                said(&message)
            )
        };
        return provider.error(ErrorCode::RateLimit, text);
    }
    provider.status_error(response, message)
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
    fn maps_items() {
        let body = json!({"kind": "customsearch#search", "items": [
            {"kind": "customsearch#result", "title": "Rust", "htmlTitle": "<b>Rust</b>",
             "link": "https://www.rust-lang.org/", "snippet": "A language\n empowering everyone."}
        ]});
        assert_eq!(
            hits(&body).unwrap(),
            vec![Hit {
                title: "Rust".into(),
                url: "https://www.rust-lang.org/".into(),
                snippet: "A language\n empowering everyone.".into()
            }]
        );
        assert_eq!(
            hits(&json!({"kind": "customsearch#search"})).unwrap(),
            vec![]
        );
        assert_eq!(
            hits(&json!({"items": 3})).unwrap_err(),
            "'items' is not an array"
        );
        assert_eq!(
            hits(&json!({"items": [{"title": "x"}]})).unwrap_err(),
            "'items[0].link' is missing"
        );
    }

    #[test]
    fn one_site_filter_is_sent() {
        let s = |v: &[&str]| v.iter().map(|d| d.to_string()).collect::<Vec<_>>();
        assert_eq!(site_search(&s(&["a.org"]), &[]), Some(("a.org", "i")));
        assert_eq!(
            site_search(&s(&["a.org"]), &s(&["b.org"])),
            Some(("a.org", "i"))
        );
        assert_eq!(
            site_search(&[], &s(&["b.org", "c.org"])),
            Some(("b.org", "e"))
        );
        assert_eq!(
            site_search(&s(&["a.org", "x.org"]), &s(&["b.org"])),
            Some(("b.org", "e"))
        );
        assert_eq!(site_search(&s(&["a.org", "x.org"]), &[]), None);
        assert_eq!(site_search(&[], &[]), None);
    }

    #[test]
    fn error_reasons_from_both_forms() {
        let body = br#"{"error": {"code": 400, "message": "API key not valid.", "errors": [{"reason": "badRequest"}], "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]}}"#;
        let (message, reasons) = parse_error(body);
        assert_eq!(message.as_deref(), Some("API key not valid."));
        assert_eq!(reasons, vec!["badRequest", "API_KEY_INVALID"]);
        assert_eq!(parse_error(b"oops"), (Some("oops".into()), vec![]));
        assert_eq!(parse_error(b""), (None, vec![]));
    }
}
