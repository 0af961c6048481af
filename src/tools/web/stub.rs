//! Stub mode: with `SHELLCLAW_STUB=1` or `IKIGAI_STUB=1` each web tool answers
//! these fixed results, the same for any valid input, without credentials
//! and without touching the network. Arguments are still validated first,
//! so bad input gets the same errors as without the stub.

use serde_json::{json, Value};

use super::markdown::Page;

/// The search tools' stub answer, naming the provider it stands in for.
pub fn search(provider: &str) -> Value {
    json!({
        "success": true,
        "results": [{
            "title": format!("Example Domain ({provider} stub result)"),
            "url": "https://example.com/",
            "snippet": "A fixed stub result: SHELLCLAW_STUB or IKIGAI_STUB is set, so no search was made.",
        }],
        "count": 1,
    })
}

/// The page web_fetch's stub answers with (before offset/limit).
pub fn page() -> Page {
    Page {
        title: "Example Domain".to_string(),
        markdown: "# Example Domain\n\n\
                   A fixed stub page: SHELLCLAW_STUB or IKIGAI_STUB is set, so nothing was fetched.\n\n\
                   [Learn more](https://www.iana.org/help/example-domains)"
            .to_string(),
    }
}
