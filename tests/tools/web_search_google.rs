//! web-search-google against a loopback server playing Google's Custom
//! Search API from recorded-style fixtures: the request (key, cx, q, num,
//! start, siteSearch), the answer, every error reason, credentials and stub
//! mode (README, "web_search_google").

use std::time::Duration;

use serde_json::{json, Value};

use super::web_support::{failure, fixture_json, success, Sandbox};
use crate::common::http::{closed_port, Reply, Server};
use crate::common::Output;

const TOOL: &str = "web-search-google";
const KEY: &str = "AIza-test-key-0123456789";
const CX: &str = "0123456789abcdef0";

const AUTH_MISSING: &str = "Web search requires API key configuration.\n\nGoogle Custom Search offers 100 free searches/day.\nGet API key: https://developers.google.com/custom-search/v1/overview\nGet Search Engine ID: https://programmablesearchengine.google.com/controlpanel/create\nAdd to: ~/.config/ikigai/credentials.json as 'web_search.google.api_key' and 'web_search.google.engine_id'";

fn google(reply: Reply) -> Server {
    Server::start(move |_| reply.clone())
}

/// The tool in a sandbox, pointed at `server`, with both credentials set.
fn search(server: &Server, args: Value) -> Output {
    Sandbox::new()
        .run(TOOL)
        .env("IKIGAI_GOOGLE_URL", server.url("/customsearch/v1"))
        .env("GOOGLE_SEARCH_API_KEY", KEY)
        .env("GOOGLE_SEARCH_ENGINE_ID", CX)
        .json_in(&args)
        .output()
}

fn error_reply(fixture: &str) -> Reply {
    let body = fixture_json(fixture);
    let status = body["error"]["code"].as_u64().unwrap() as u16;
    Reply::json(status, &body)
}

#[test]
fn sends_the_documented_request_and_maps_the_answer() {
    let server = google(Reply::json(200, &fixture_json("google_results.json")));
    let out = search(&server, json!({"query": "rust async & more +1 ü"}));
    let answer = success(&out);
    assert_eq!(
        answer["results"][0],
        json!({
            "title": "Asynchronous Programming in Rust",
            "url": "https://rust-lang.github.io/async-book/",
            "snippet": "This book aims to be a comprehensive, up-to-date guide to using Rust's async language features and libraries."
        })
    );
    assert_eq!(answer["count"], 4);
    assert!(out
        .stdout
        .starts_with(r#"{"success":true,"results":[{"title":"#));
    assert!(out.stdout.ends_with(r#"],"count":4}"#));

    let req = &server.requests()[0];
    assert_eq!(req.path, "/customsearch/v1");
    assert_eq!(req.param("key"), Some(KEY));
    assert_eq!(req.param("cx"), Some(CX));
    assert_eq!(req.param("q"), Some("rust async & more +1 ü"));
    assert_eq!(req.param("num"), Some("10"));
    assert_eq!(req.param("start"), Some("1"));
    assert_eq!(req.param("siteSearch"), None);
    assert_eq!(req.query.len(), 5, "{:?}", req.query);
}

#[test]
fn num_and_start_are_passed_and_kept_within_100_results() {
    let server = google(Reply::json(200, &fixture_json("google_no_items.json")));
    success(&search(
        &server,
        json!({"query": "rust", "num": 5, "start": 11}),
    ));
    success(&search(&server, json!({"query": "rust", "start": 91})));
    let requests = server.requests();
    assert_eq!(requests[0].param("num"), Some("5"));
    assert_eq!(requests[0].param("start"), Some("11"));
    // start + num may not pass 100: 91 + 10 would be refused by Google.
    assert_eq!(requests[1].param("num"), Some("9"));
    assert_eq!(requests[1].param("start"), Some("91"));

    let out = search(&server, json!({"query": "rust", "start": 92}));
    assert_eq!(
        failure(&out, "INVALID_ARG"),
        "parameter 'start' must be at most 91, got 92"
    );
}

#[test]
fn one_domain_goes_to_site_search_the_rest_is_filtered_after() {
    let server = google(Reply::json(200, &fixture_json("google_results.json")));
    let urls = |answer: &Value| -> Vec<String> {
        answer["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["url"].as_str().unwrap().to_string())
            .collect()
    };

    // One allowed domain: an include filter at Google, and checked after
    // (the fixture's server ignores it, as a stand-in cannot filter).
    let answer = success(&search(
        &server,
        json!({"query": "rust", "allowed_domains": ["rust-lang.org"]}),
    ));
    assert_eq!(
        urls(&answer),
        [
            "https://doc.rust-lang.org/book/",
            "https://blog.rust-lang.org/2024/08/12/async-closures.html"
        ]
    );
    assert_eq!(answer["count"], 2);
    let req = &server.requests()[0];
    assert_eq!(req.param("siteSearch"), Some("rust-lang.org"));
    assert_eq!(req.param("siteSearchFilter"), Some("i"));

    // Blocked domains: the first as an exclude filter, all checked after.
    let answer = success(&search(
        &server,
        json!({"query": "rust", "blocked_domains": ["blog.rust-lang.org", "github.io"]}),
    ));
    assert_eq!(
        urls(&answer),
        [
            "https://doc.rust-lang.org/book/",
            "https://badrust-lang.org/async"
        ]
    );
    let req = &server.requests()[1];
    assert_eq!(req.param("siteSearch"), Some("blog.rust-lang.org"));
    assert_eq!(req.param("siteSearchFilter"), Some("e"));

    // Two allowed domains: Google cannot say that; only the results filter.
    let answer = success(&search(
        &server,
        json!({"query": "rust", "allowed_domains": ["github.io", "badrust-lang.org"]}),
    ));
    assert_eq!(
        urls(&answer),
        [
            "https://rust-lang.github.io/async-book/",
            "https://badrust-lang.org/async"
        ]
    );
    let req = &server.requests()[2];
    assert_eq!(req.param("siteSearch"), None);
    assert_eq!(req.param("siteSearchFilter"), None);
}

#[test]
fn no_items_is_zero_results() {
    let server = google(Reply::json(200, &fixture_json("google_no_items.json")));
    let out = search(&server, json!({"query": "qwxzptl vrrmbnk"}));
    assert_eq!(
        success(&out),
        json!({"success": true, "results": [], "count": 0})
    );
}

#[test]
fn missing_credentials_are_auth_missing_with_the_config_required_event() {
    let server = google(Reply::json(200, &fixture_json("google_no_items.json")));
    let sandbox = Sandbox::new();
    let runs = [
        sandbox.run(TOOL),
        sandbox.run(TOOL).env("GOOGLE_SEARCH_API_KEY", KEY),
        sandbox.run(TOOL).env("GOOGLE_SEARCH_ENGINE_ID", CX),
    ];
    for run in runs {
        let out = run
            .env("IKIGAI_GOOGLE_URL", server.url("/"))
            .json_in(&json!({"query": "rust"}))
            .output();
        assert_eq!(failure(&out, "AUTH_MISSING"), AUTH_MISSING);
        assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
        let event: Value = serde_json::from_str(&out.stderr).unwrap();
        let expected = json!({
            "kind": "config_required",
            "content": "⚠ Configuration Required\n\nWeb search needs an API key and Search Engine ID. Google Custom Search offers 100 free searches/day.\n\nGet API key: https://developers.google.com/custom-search/v1/overview\nGet Search Engine ID: https://programmablesearchengine.google.com/controlpanel/create\nAdd to: ~/.config/ikigai/credentials.json\n\nExample:\n{\n  \"web_search\": {\n    \"google\": {\n      \"api_key\": \"your-api-key-here\",\n      \"engine_id\": \"your-search-engine-id\"\n    }\n  }\n}",
            "data_json": "{\"tool\": \"web_search_google\", \"credentials\": [\"api_key\", \"engine_id\"]}"
        });
        assert_eq!(
            serde_json::to_string(&event).unwrap(),
            serde_json::to_string(&expected).unwrap()
        );
        assert!(!out.stdout.contains(KEY) && !out.stderr.contains(KEY));
    }
    assert!(server.requests().is_empty());
}

#[test]
fn credentials_per_field_environment_over_file() {
    let server = google(Reply::json(200, &fixture_json("google_no_items.json")));
    let sandbox = Sandbox::new();
    sandbox.xdg_credentials(
        r#"{"web_search": {"google": {"api_key": "file-key", "engine_id": "file-cx"}}}"#,
    );
    let url = server.url("/");
    let args = json!({"query": "rust"});
    success(
        &sandbox
            .run_xdg(TOOL)
            .env("IKIGAI_GOOGLE_URL", &url)
            .json_in(&args)
            .output(),
    );
    success(
        &sandbox
            .run_xdg(TOOL)
            .env("IKIGAI_GOOGLE_URL", &url)
            .env("GOOGLE_SEARCH_API_KEY", "env-key")
            .json_in(&args)
            .output(),
    );
    // Without XDG_CONFIG_HOME the file under HOME is the one read: none.
    let out = sandbox
        .run(TOOL)
        .env("IKIGAI_GOOGLE_URL", &url)
        .json_in(&args)
        .output();
    failure(&out, "AUTH_MISSING");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].param("key"), Some("file-key"));
    assert_eq!(requests[0].param("cx"), Some("file-cx"));
    assert_eq!(requests[1].param("key"), Some("env-key"));
    assert_eq!(requests[1].param("cx"), Some("file-cx"));
}

#[test]
fn broken_credentials_file_is_a_clear_error_naming_it() {
    let sandbox = Sandbox::new();
    let file = sandbox.home_credentials("web_search:\n  google: {}\n");
    let out = sandbox
        .run(TOOL)
        .json_in(&json!({"query": "rust"}))
        .output();
    assert_eq!(
        failure(&out, "AUTH_MISSING"),
        format!(
            "credentials file {} is not valid JSON (expected value at line 1 column 1); fix it or remove it",
            file.display()
        )
    );
    assert_eq!(out.stderr, "");
}

#[test]
fn rejected_credentials_are_auth_invalid() {
    let cases = [
        ("google_error_key_invalid.json", "HTTP 400: Bad Request: API key not valid. Please pass a valid API key."),
        ("google_error_api_key_invalid_details.json", "HTTP 400: Bad Request: API key not valid. Please pass a valid API key."),
        ("google_error_forbidden.json", "HTTP 403: Forbidden: The caller does not have permission"),
        ("google_error_access_not_configured.json", "HTTP 403: Forbidden: Custom Search API has not been used in project 123456789012 before or it is disabled. Enable it by visiting https://console.developers.google.com/apis/api/customsearch.googleapis.com/overview?project=123456789012 then retry."),
    ];
    for (fixture, said) in cases {
        let server = google(error_reply(fixture));
        let out = search(&server, json!({"query": "rust"}));
        assert_eq!(
            failure(&out, "AUTH_INVALID"),
            format!(
                "Google Custom Search rejected the credentials ({said}). Check the API key in the environment variable GOOGLE_SEARCH_API_KEY and the engine id in the environment variable GOOGLE_SEARCH_ENGINE_ID."
            ),
            "{fixture}"
        );
    }
}

#[test]
fn quota_reasons_are_rate_limit() {
    let server = google(error_reply("google_error_daily_limit.json"));
    let out = search(&server, json!({"query": "rust"}));
    assert_eq!(
        failure(&out, "RATE_LIMIT"),
        "Rate limit exceeded. You've used your free search quota (100/day)."
    );

    let server = google(error_reply("google_error_rate_limit.json"));
    let out = search(&server, json!({"query": "rust"}));
    assert_eq!(
        failure(&out, "RATE_LIMIT"),
        "Rate limit exceeded. Google Custom Search refused the search (HTTP 429: Too Many Requests: Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service 'customsearch.googleapis.com' for consumer 'project_number:123456789012'.)."
    );

    let mut body = fixture_json("google_error_rate_limit.json");
    body["error"]["code"] = json!(403);
    body["error"]["errors"][0]["reason"] = json!("userRateLimitExceeded");
    let server = google(Reply::json(403, &body));
    failure(&search(&server, json!({"query": "rust"})), "RATE_LIMIT");

    let server = google(Reply::status(429).body("slow down"));
    let out = search(&server, json!({"query": "rust"}));
    assert_eq!(
        failure(&out, "RATE_LIMIT"),
        "Rate limit exceeded. Google Custom Search refused the search (HTTP 429: Too Many Requests: slow down)."
    );
}

#[test]
fn other_errors_are_api_errors_without_the_key() {
    let server = google(error_reply("google_error_bad_request.json"));
    let out = search(&server, json!({"query": "rust"}));
    assert_eq!(
        failure(&out, "API_ERROR"),
        "Google Custom Search API error: HTTP 400: Bad Request: Request contains an invalid argument."
    );

    // A message quoting the request URL, key included, as Google's may.
    let server = Server::start(|req| {
        let quoted = format!(
            "Invalid value for start: https://www.googleapis.com/customsearch/v1?key={}&cx={}",
            req.param("key").unwrap_or(""),
            req.param("cx").unwrap_or("")
        );
        Reply::json(
            400,
            &json!({"error": {"code": 400, "message": quoted, "errors": [{"reason": "invalid"}]}}),
        )
    });
    let out = search(&server, json!({"query": "rust"}));
    assert_eq!(
        failure(&out, "API_ERROR"),
        format!("Google Custom Search API error: HTTP 400: Bad Request: Invalid value for start: https://www.googleapis.com/customsearch/v1?key=[REDACTED]&cx={CX}")
    );
    assert!(!out.stdout.contains(KEY) && !out.stderr.contains(KEY));

    // A 403 whose reason is not about the key is not AUTH_INVALID.
    let server = google(Reply::json(
        403,
        &json!({"error": {"code": 403, "message": "Blocked region", "errors": [{"reason": "regionBlocked"}]}}),
    ));
    assert_eq!(
        failure(&search(&server, json!({"query": "rust"})), "API_ERROR"),
        "Google Custom Search API error: HTTP 403: Forbidden: Blocked region"
    );

    let server = google(Reply::status(503));
    assert_eq!(
        failure(&search(&server, json!({"query": "rust"})), "API_ERROR"),
        "Google Custom Search API error: HTTP 503: Service Unavailable"
    );

    let server = google(Reply::json(
        200,
        &json!({"kind": "customsearch#search", "items": [{"title": "no link"}]}),
    ));
    assert_eq!(
        failure(&search(&server, json!({"query": "rust"})), "API_ERROR"),
        "Google Custom Search API error: unexpected answer: 'items[0].link' is missing"
    );
}

#[test]
fn network_failures_never_show_the_url_with_its_key() {
    let port = closed_port();
    let out = Sandbox::new()
        .run(TOOL)
        .env(
            "IKIGAI_GOOGLE_URL",
            format!("http://127.0.0.1:{port}/customsearch/v1"),
        )
        .env("GOOGLE_SEARCH_API_KEY", KEY)
        .env("GOOGLE_SEARCH_ENGINE_ID", CX)
        .json_in(&json!({"query": "rust"}))
        .output();
    assert_eq!(
        failure(&out, "NETWORK_ERROR"),
        format!("Could not reach Google Custom Search at 127.0.0.1:{port}: connection refused")
    );

    let server = google(Reply::stall(Duration::from_secs(8)));
    let out = Sandbox::new()
        .run(TOOL)
        .env("IKIGAI_GOOGLE_URL", server.url("/customsearch/v1"))
        .env("GOOGLE_SEARCH_API_KEY", KEY)
        .env("GOOGLE_SEARCH_ENGINE_ID", CX)
        .env("IKIGAI_WEB_TIMEOUT", "1")
        .json_in(&json!({"query": "rust"}))
        .output();
    assert_eq!(
        failure(&out, "NETWORK_ERROR"),
        format!(
            "Could not reach Google Custom Search at {}: timeout: no complete response within 1 s",
            server.addr()
        )
    );
    assert!(!out.stdout.contains(KEY) && !out.stderr.contains(KEY));
}

#[test]
fn stub_mode_answers_without_network_or_credentials() {
    let server = google(Reply::status(500));
    let sandbox = Sandbox::new();
    for flag in ["SHELLCLAW_STUB", "IKIGAI_STUB"] {
        let out = sandbox
            .run(TOOL)
            .env(flag, "1")
            .env("IKIGAI_GOOGLE_URL", server.url("/"))
            .json_in(&json!({"query": "anything", "num": 3, "start": 4}))
            .output();
        assert_eq!(
            success(&out),
            json!({"success": true, "results": [{
                "title": "Example Domain (Google Custom Search stub result)",
                "url": "https://example.com/",
                "snippet": "A fixed stub result: SHELLCLAW_STUB or IKIGAI_STUB is set, so no search was made."
            }], "count": 1})
        );
        let out = sandbox
            .run(TOOL)
            .env(flag, "1")
            .json_in(&json!({"query": "rust", "num": 0}))
            .output();
        assert_eq!(
            failure(&out, "INVALID_ARG"),
            "parameter 'num' must be at least 1, got 0"
        );
    }
    assert!(server.requests().is_empty());
}
