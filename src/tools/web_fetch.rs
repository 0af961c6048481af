//! web_fetch: fetch a URL and answer its content as markdown.
//!
//! Only http and https, and only hosts on the public internet (`web::guard`:
//! every host, the first and each redirect's, resolved and checked, and the
//! connection made to the checked addresses). Redirects followed (at most
//! 10) and the final URL answered; limits of `web::http` (20 s, 10 MiB, cut
//! bodies say so). HTML and XHTML become markdown (`web::markdown`) with the
//! page's `<title>`; other text types come back as text with an empty title;
//! binary types are refused by name. `offset` (1-based) and `limit` count
//! lines of the final content.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::{ErrorCode, ToolError};
use crate::tool::{Env, Family, Tool};

use super::web::content::{self, ContentType, Kind};
use super::web::http::{self, Client, Failure, BODY_CAP};
use super::web::markdown::{self, Page};
use super::web::stub;
use crate::args;

pub struct WebFetch;

const SCHEMA: &str = r#"{
  "name": "web_fetch",
  "description": "Fetches content from a specified URL and returns it as markdown. Converts HTML to markdown using libxml2. Supports pagination via offset and limit parameters similar to file_read.",
  "parameters": {
    "type": "object",
    "properties": {
      "url": {
        "type": "string",
        "format": "uri",
        "description": "The URL to fetch content from"
      },
      "offset": {
        "type": "integer",
        "description": "Line number to start reading from (1-based)",
        "minimum": 1
      },
      "limit": {
        "type": "integer",
        "description": "Maximum number of lines to return",
        "minimum": 1
      }
    },
    "required": ["url"]
  },
  "annotations": {"readOnlyHint": true, "openWorldHint": true}
}"#;

/// What we can use, best first; servers that negotiate send HTML.
const ACCEPT: &str = "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5";

/// The arguments, as the schema states them.
#[derive(Deserialize)]
struct Args {
    url: String,
    /// The 1-based line to start from.
    #[serde(default = "first_line")]
    offset: u64,
    limit: Option<u64>,
}

fn first_line() -> u64 {
    1
}

impl Tool for WebFetch {
    fn name(&self) -> &'static str {
        "web_fetch"
    }
    fn command(&self) -> &'static str {
        "web-fetch"
    }
    fn schema(&self) -> &'static str {
        SCHEMA
    }
    fn family(&self) -> Family {
        Family::Web
    }

    fn execute(&self, args: &Map<String, Value>, env: &Env) -> Result<Value, ToolError> {
        let Args { url, offset, limit } = args::typed(args)?;
        let raw_url = url.as_str();
        let url = http::parse_url(raw_url).map_err(|why| {
            ToolError::new(
                ErrorCode::InvalidUrl,
                format!("Invalid URL '{raw_url}': {why}"),
            )
        })?;
        if env.stub() {
            let page = stub::page();
            return Ok(answer(url.to_string(), page, offset, limit));
        }

        let client = Client::new(env)?;
        let response =
            client
                .get(&url, &[("Accept", ACCEPT)], &[])
                .map_err(|failure| match failure {
                    Failure::Network(reason) => ToolError::new(
                        ErrorCode::NetworkError,
                        format!("Failed to fetch URL: {reason}"),
                    ),
                    Failure::Decode(reason) => ToolError::new(
                        ErrorCode::ParseError,
                        format!("Failed to parse response: {reason}"),
                    ),
                    Failure::Blocked(reason) => ToolError::new(
                        ErrorCode::AddressBlocked,
                        format!("Refused to fetch URL: {reason}"),
                    ),
                })?;
        if response.status >= 400 {
            return Err(ToolError::new(
                ErrorCode::HttpError,
                http::status_text(response.status),
            ));
        }

        let content_type = ContentType::parse(response.content_type.as_deref().unwrap_or(""));
        let kind = content::classify(&content_type.mime, &response.body);
        let mut page = match kind {
            Kind::Binary => return Err(unsupported(&content_type.mime)),
            Kind::Html => {
                let html = content::decode(response.body, content_type.charset.as_deref(), kind);
                markdown::convert(&html, &response.url)
            }
            Kind::Text => {
                let text = content::decode(response.body, content_type.charset.as_deref(), kind);
                Page {
                    title: String::new(),
                    markdown: text.replace("\r\n", "\n"),
                }
            }
        };
        if response.truncated {
            if !page.markdown.is_empty() {
                page.markdown.push_str("\n\n");
            }
            page.markdown.push_str(&format!(
                "[Content truncated: the response is larger than {} MiB; only its first {} MiB were read.]",
                BODY_CAP >> 20,
                BODY_CAP >> 20
            ));
        }
        Ok(answer(response.url, page, offset, limit))
    }
}

/// Built by moving the strings in: `json!` would copy each one, and a
/// page's markdown held twice is the fetch's peak memory.
fn answer(url: String, page: Page, offset: u64, limit: Option<u64>) -> Value {
    let mut map = Map::new();
    map.insert("success".into(), Value::Bool(true));
    map.insert("url".into(), Value::String(url));
    map.insert("title".into(), Value::String(page.title));
    map.insert(
        "content".into(),
        Value::String(lines(page.markdown, offset, limit)),
    );
    Value::Object(map)
}

/// Lines `offset..offset+limit` (1-based) of `text`; empty past the end.
/// The whole text is moved, not copied: a page's markdown can be megabytes.
fn lines(text: String, offset: u64, limit: Option<u64>) -> String {
    if offset <= 1 && limit.is_none() {
        return text;
    }
    let skip = usize::try_from(offset.saturating_sub(1)).unwrap_or(usize::MAX);
    let take = limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    text.split('\n')
        .skip(skip)
        .take(take)
        .collect::<Vec<_>>()
        .join("\n")
}

fn unsupported(mime: &str) -> ToolError {
    let message = if mime.is_empty() || mime.ends_with("octet-stream") {
        let declared = if mime.is_empty() {
            "no Content-Type".to_string()
        } else {
            format!("Content-Type {mime}")
        };
        format!(
            "Unsupported content: the response has {declared} and its body is binary; web_fetch reads HTML and text only"
        )
    } else {
        format!(
            "Unsupported content type: {mime} is binary; web_fetch reads HTML and text (plain, markdown, JSON, XML, ...) only"
        )
    };
    ToolError::new(ErrorCode::UnsupportedContent, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn offset_is_one_based_and_limit_counts_lines() {
        let text = "l1\nl2\nl3\nl4";
        assert_eq!(lines(text.into(), 1, None), text);
        assert_eq!(lines(text.into(), 3, None), "l3\nl4");
        assert_eq!(lines(text.into(), 2, Some(2)), "l2\nl3");
        assert_eq!(lines(text.into(), 1, Some(1)), "l1");
        assert_eq!(lines(text.into(), 4, Some(10)), "l4");
        assert_eq!(lines(text.into(), 5, None), "");
        assert_eq!(lines(text.into(), u64::MAX, Some(u64::MAX)), "");
        assert_eq!(lines("".into(), 1, Some(3)), "");
    }

    #[test]
    fn unsupported_names_the_type() {
        assert_eq!(
            unsupported("application/pdf").message,
            "Unsupported content type: application/pdf is binary; web_fetch reads HTML and text (plain, markdown, JSON, XML, ...) only"
        );
        assert!(unsupported("").message.starts_with(
            "Unsupported content: the response has no Content-Type and its body is binary"
        ));
    }

    #[test]
    fn stub_answers_without_network_and_pages_its_lines() {
        let env = Env::from_pairs([("IKIGAI_STUB", "1")]);
        let args = json!({"url": "http://127.0.0.1:1/never", "offset": 3, "limit": 1});
        let out = WebFetch.execute(args.as_object().unwrap(), &env).unwrap();
        assert_eq!(
            out,
            json!({"success": true, "url": "http://127.0.0.1:1/never", "title": "Example Domain",
                   "content": "A fixed stub page: SHELLCLAW_STUB or IKIGAI_STUB is set, so nothing was fetched."})
        );
    }
}
