//! What the two search tools share: the common answer
//! `{"success": true, "results": [{title, url, snippet}], "count"}`, the
//! endpoint variables, and the messages for failures, from which the API
//! key is always removed (a provider may quote the request URL, and Google's
//! URL holds the key).

use serde_json::{json, Value};
use ureq::http::Uri;

use crate::error::{ErrorCode, ToolError};
use crate::tool::Env;

use super::domains;
use super::http::{self, Failure, Fetched};

/// One search result in the common format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// Where a provider keeps its results and what it calls their fields:
/// Brave's `web.results[].{url, description}`, Google's
/// `items[].{link, snippet}`.
pub struct Layout {
    /// The path to the result list, from the body down.
    pub list: &'static [&'static str],
    pub url: &'static str,
    pub snippet: &'static str,
    /// Cleans a title or snippet (Brave's carry HTML, Google's do not).
    pub text: fn(&str) -> String,
}

/// A provider's results in the common format. A missing or `null` list is
/// no results; anything else not of the expected shape says what was wrong.
pub fn hits(body: &Value, layout: &Layout) -> Result<Vec<Hit>, String> {
    if !body.is_object() {
        return Err("the JSON is not an object".to_string());
    }
    let name = layout.list.join(".");
    let mut list = body;
    for key in layout.list {
        match list.get(key) {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(inner) => list = inner,
        }
    }
    let Value::Array(results) = list else {
        return Err(format!("'{name}' is not an array"));
    };
    results
        .iter()
        .enumerate()
        .map(|(i, result)| {
            let url = result[layout.url]
                .as_str()
                .filter(|u| !u.is_empty())
                .ok_or_else(|| format!("'{name}[{i}].{}' is missing", layout.url))?;
            let text = |field: &str| (layout.text)(result[field].as_str().unwrap_or_default());
            Ok(Hit {
                title: text("title"),
                url: url.to_string(),
                snippet: text(layout.snippet),
            })
        })
        .collect()
}

/// AUTH_MISSING with its `config_required` event for the person:
/// `message` for the model, `content` and `data_json` for the event.
pub fn auth_missing(message: &str, content: &str, data_json: &str) -> ToolError {
    ToolError::new(ErrorCode::AuthMissing, message).with_event(json!({
        "kind": "config_required",
        "content": content,
        "data_json": data_json,
    }))
}

/// The success answer: the hits that pass the domain filters.
pub fn answer(hits: Vec<Hit>, allowed: &[String], blocked: &[String]) -> Value {
    let results: Vec<Value> = hits
        .into_iter()
        .filter(|hit| domains::keep(&hit.url, allowed, blocked))
        .map(|hit| json!({"title": hit.title, "url": hit.url, "snippet": hit.snippet}))
        .collect();
    let count = results.len();
    json!({"success": true, "results": results, "count": count})
}

/// The provider's endpoint: `var` when set, else `default`.
pub fn endpoint(env: &Env, var: &str, default: &str) -> Result<Uri, ToolError> {
    let url = env.var(var).unwrap_or(default);
    http::parse_url(url).map_err(|why| {
        ToolError::new(
            ErrorCode::NetworkError,
            format!("{var} is not a usable http(s) URL: {why}"),
        )
    })
}

/// What a search tool needs to know to report a provider's failure.
pub struct Provider<'a> {
    /// "Brave Search", "Google Custom Search".
    pub name: &'a str,
    pub endpoint: &'a Uri,
    /// Never shown: removed from every message.
    pub secrets: &'a [&'a str],
}

impl Provider<'_> {
    /// A transport failure: NETWORK_ERROR naming the host, not the URL.
    pub fn failure(&self, failure: Failure) -> ToolError {
        let reason = match failure {
            // The search client checks no hosts; a refusal reads as one.
            Failure::Network(reason) | Failure::Blocked(reason) => reason,
            Failure::Decode(reason) => format!("unreadable response: {reason}"),
        };
        self.error(
            ErrorCode::NetworkError,
            format!(
                "Could not reach {} at {}: {reason}",
                self.name,
                http::host_of(self.endpoint)
            ),
        )
    }

    /// An answer that is not the expected JSON, or an unexpected status.
    pub fn api_error(&self, what: String) -> ToolError {
        self.error(
            ErrorCode::ApiError,
            format!("{} API error: {what}", self.name),
        )
    }

    /// A status the tool does not otherwise handle, with the provider's
    /// own explanation when it gave one.
    pub fn status_error(&self, response: &Fetched, detail: Option<String>) -> ToolError {
        let mut what = http::status_text(response.status);
        if let Some(detail) = detail.filter(|d| !d.trim().is_empty()) {
            what.push_str(": ");
            what.push_str(&one_line(&detail, 300));
        }
        self.api_error(what)
    }

    /// Any error, with the secrets taken out of its message.
    pub fn error(&self, code: ErrorCode, message: String) -> ToolError {
        ToolError::new(code, redact(&message, self.secrets))
    }
}

/// Parses a 2xx body as JSON, or says what it is instead.
pub fn json_body(provider: &Provider, response: &Fetched) -> Result<Value, ToolError> {
    serde_json::from_slice(&response.body).map_err(|e| {
        let shown = if response.body.is_empty() {
            "an empty body".to_string()
        } else {
            format!("a body that is not JSON ({e})")
        };
        provider.api_error(format!(
            "{} with {shown}",
            http::status_text(response.status)
        ))
    })
}

/// A body's text on one line, at most `max` characters.
pub fn one_line(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line,
    }
}

pub fn redact(message: &str, secrets: &[&str]) -> String {
    let mut out = message.to_string();
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        out = out.replace(secret, "[REDACTED]");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(url: &str) -> Hit {
        Hit {
            title: "t".into(),
            url: url.into(),
            snippet: "s".into(),
        }
    }

    #[test]
    fn answer_in_spec_order_after_filtering() {
        let hits = vec![hit("https://a.org/1"), hit("https://b.org/2")];
        let value = answer(hits, &[], &["b.org".to_string()]);
        assert_eq!(
            serde_json::to_string(&value).unwrap(),
            r#"{"success":true,"results":[{"title":"t","url":"https://a.org/1","snippet":"s"}],"count":1}"#
        );
    }

    #[test]
    fn secrets_never_show() {
        let endpoint = http::parse_url("http://127.0.0.1:9/v1?key=SECRET").unwrap();
        let provider = Provider {
            name: "Google Custom Search",
            endpoint: &endpoint,
            secrets: &["SECRET"],
        };
        let err = provider.failure(Failure::Network("bad uri http://x/?key=SECRET".into()));
        assert_eq!(
            err.message,
            "Could not reach Google Custom Search at 127.0.0.1:9: bad uri http://x/?key=[REDACTED]"
        );
        assert_eq!(err.code, ErrorCode::NetworkError);
    }

    #[test]
    fn details() {
        assert_eq!(one_line("a\n  b\tc", 10), "a b c");
        assert_eq!(one_line("abcdef", 3), "abc...");
    }

    #[test]
    fn endpoint_variables() {
        let env = Env::from_pairs([("IKIGAI_BRAVE_URL", "http://127.0.0.1:5/s")]);
        let url = endpoint(&env, "IKIGAI_BRAVE_URL", "https://default/x").unwrap();
        assert_eq!(url.to_string(), "http://127.0.0.1:5/s");
        let url = endpoint(&Env::default(), "IKIGAI_BRAVE_URL", "https://d.org/x").unwrap();
        assert_eq!(url.to_string(), "https://d.org/x");
        let env = Env::from_pairs([("IKIGAI_BRAVE_URL", "localhost:5")]);
        let err = endpoint(&env, "IKIGAI_BRAVE_URL", "https://d.org/x").unwrap_err();
        assert_eq!(
            err.message,
            "IKIGAI_BRAVE_URL is not a usable http(s) URL: it must start with http:// or https://"
        );
    }
}
