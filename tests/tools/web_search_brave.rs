//! web-search-brave against a loopback server playing Brave's API from
//! recorded-style fixtures: the request it sends, the answer it maps, every
//! error code, credentials precedence and stub mode (README, "web_search_brave").

use std::time::Duration;

use serde_json::{json, Value};

use super::web_support::{failure, fixture_json, success, Sandbox};
use crate::common::http::{closed_port, Reply, Server};

const TOOL: &str = "web-search-brave";
const KEY: &str = "BSA-test-key-0123456789";

const AUTH_MISSING: &str = "Web search requires API key configuration.\n\nBrave Search offers 2,000 free searches/month.\nGet your key: https://brave.com/search/api/\nAdd to: ~/.config/ikigai/credentials.json as 'web_search.brave.api_key'";

/// A Brave stand-in answering every request with `reply`.
fn brave(reply: Reply) -> Server {
    Server::start(move |_| reply.clone())
}

/// The tool in a sandbox, pointed at `server`, with the key in the env.
fn search(sandbox: &Sandbox, server: &Server, args: Value) -> crate::common::Output {
    sandbox
        .run(TOOL)
        .env("IKIGAI_BRAVE_URL", server.url("/search"))
        .env("BRAVE_API_KEY", KEY)
        .json_in(&args)
        .output()
}

#[test]
fn sends_the_documented_request_and_maps_the_answer() {
    let server = brave(Reply::json(200, &fixture_json("brave_results.json")));
    let sandbox = Sandbox::new();
    let out = search(
        &sandbox,
        &server,
        json!({"query": "rust async & more +1 ü"}),
    );
    let answer = success(&out);

    let first = json!({
        "title": "Asynchronous Programming in Rust",
        "url": "https://rust-lang.github.io/async-book/",
        "snippet": "This book aims to be a comprehensive, up-to-date guide to using Rust's async language features & libraries."
    });
    assert_eq!(answer["results"][0], first);
    assert_eq!(answer["count"], 6);
    assert_eq!(answer["results"].as_array().unwrap().len(), 6);
    assert_eq!(
        answer["results"][1]["title"],
        "The Rust Programming Language - The Rust Programming Language"
    );
    // The spec's field order, exactly.
    let text = out.stdout.as_str();
    assert!(
        text.starts_with(r#"{"success":true,"results":[{"title":"#),
        "{text}"
    );
    assert!(text.ends_with(r#"],"count":6}"#), "{text}");

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let req = &requests[0];
    assert_eq!(req.method, "GET");
    assert_eq!(req.path, "/search");
    assert_eq!(req.param("q"), Some("rust async & more +1 ü"));
    assert_eq!(req.param("count"), Some("10"));
    assert_eq!(req.param("offset"), Some("0"));
    assert_eq!(req.query.len(), 3, "{:?}", req.query);
    assert_eq!(req.header("X-Subscription-Token"), Some(KEY));
    assert_eq!(req.header("Accept"), Some("application/json"));
}

#[test]
fn count_and_offset_are_passed_through() {
    let server = brave(Reply::json(200, &fixture_json("brave_results.json")));
    let out = search(
        &Sandbox::new(),
        &server,
        json!({"query": "rust", "count": 20, "offset": 3}),
    );
    success(&out);
    let req = &server.requests()[0];
    assert_eq!(req.param("count"), Some("20"));
    assert_eq!(req.param("offset"), Some("3"));
}

#[test]
fn domain_filters_match_subdomains_not_lookalikes() {
    let server = brave(Reply::json(200, &fixture_json("brave_results.json")));
    let sandbox = Sandbox::new();
    let urls = |answer: &Value| -> Vec<String> {
        answer["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["url"].as_str().unwrap().to_string())
            .collect()
    };

    let answer = success(&search(
        &sandbox,
        &server,
        json!({"query": "rust", "allowed_domains": ["rust-lang.org"]}),
    ));
    assert_eq!(
        urls(&answer),
        [
            "https://doc.rust-lang.org/book/",
            "https://blog.rust-lang.org/2024/08/12/async-closures.html",
            "https://www.rust-lang.org/",
        ]
    );
    assert_eq!(answer["count"], 3);

    let answer = success(&search(
        &sandbox,
        &server,
        json!({"query": "rust", "allowed_domains": ["https://rust-lang.org/"],
               "blocked_domains": ["blog.rust-lang.org"]}),
    ));
    assert_eq!(
        urls(&answer),
        [
            "https://doc.rust-lang.org/book/",
            "https://www.rust-lang.org/"
        ]
    );
    assert_eq!(answer["count"], 2);

    let answer = success(&search(
        &sandbox,
        &server,
        json!({"query": "rust", "blocked_domains": ["rust-lang.org", "github.io"]}),
    ));
    assert_eq!(
        urls(&answer),
        [
            "https://badrust-lang.org/async",
            "https://rust-lang.org.evil.example/async"
        ]
    );
    // Brave has no domain parameters: the query went out unchanged.
    for req in server.requests() {
        assert_eq!(req.param("q"), Some("rust"));
        assert_eq!(req.query.len(), 3);
    }

    let out = search(
        &sandbox,
        &server,
        json!({"query": "rust", "blocked_domains": ["ok.org", ""]}),
    );
    let answer = out.json();
    assert_eq!(answer["error_code"], "INVALID_ARG");
    assert_eq!(
        answer["error"],
        "parameter 'blocked_domains[1]' must be a domain such as example.com, got ''"
    );
}

#[test]
fn no_web_section_is_zero_results() {
    let server = brave(Reply::json(200, &fixture_json("brave_no_web.json")));
    let out = search(
        &Sandbox::new(),
        &server,
        json!({"query": "qwxzptl vrrmbnk"}),
    );
    assert_eq!(
        success(&out),
        json!({"success": true, "results": [], "count": 0})
    );
}

#[test]
fn missing_key_is_auth_missing_with_the_config_required_event() {
    let server = brave(Reply::json(200, &fixture_json("brave_results.json")));
    let sandbox = Sandbox::new();
    for run in [sandbox.run(TOOL), sandbox.run_xdg(TOOL)] {
        let out = run
            .env("IKIGAI_BRAVE_URL", server.url("/"))
            .json_in(&json!({"query": "rust"}))
            .output();
        assert_eq!(failure(&out, "AUTH_MISSING"), AUTH_MISSING);
        assert_eq!(
            out.stdout,
            json!({"success": false, "error": AUTH_MISSING, "error_code": "AUTH_MISSING"})
                .to_string()
        );
        // Exactly one line on stderr: the event, as docs/protocols.md shows it.
        assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
        let event: Value = serde_json::from_str(&out.stderr).unwrap();
        let expected = json!({
            "kind": "config_required",
            "content": "⚠ Configuration Required\n\nWeb search needs an API key. Brave Search offers 2,000 free searches/month.\n\nGet your key: https://brave.com/search/api/\nAdd to: ~/.config/ikigai/credentials.json\n\nExample:\n{\n  \"web_search\": {\n    \"brave\": {\n      \"api_key\": \"your-api-key-here\"\n    }\n  }\n}",
            "data_json": "{\"tool\": \"web_search_brave\", \"credential\": \"api_key\", \"signup_url\": \"https://brave.com/search/api/\"}"
        });
        assert_eq!(event, expected);
        assert_eq!(
            serde_json::to_string(&event).unwrap(),
            serde_json::to_string(&expected).unwrap()
        );
    }
    assert!(server.requests().is_empty(), "no request without a key");
}

#[test]
fn key_from_the_credentials_file_and_environment_first() {
    let server = brave(Reply::json(200, &fixture_json("brave_no_web.json")));
    let sandbox = Sandbox::new();
    let token = |n: usize| {
        server.requests()[n]
            .header("X-Subscription-Token")
            .map(str::to_string)
    };
    sandbox.home_credentials(r#"{"web_search": {"brave": {"api_key": "from-home"}}}"#);
    sandbox.xdg_credentials(r#"{"web_search": {"brave": {"api_key": "from-xdg"}}}"#);
    let args = json!({"query": "rust"});
    let url = server.url("/");

    success(
        &sandbox
            .run(TOOL)
            .env("IKIGAI_BRAVE_URL", &url)
            .json_in(&args)
            .output(),
    );
    assert_eq!(token(0).as_deref(), Some("from-home"));
    success(
        &sandbox
            .run_xdg(TOOL)
            .env("IKIGAI_BRAVE_URL", &url)
            .json_in(&args)
            .output(),
    );
    assert_eq!(token(1).as_deref(), Some("from-xdg"));
    let out = sandbox
        .run_xdg(TOOL)
        .env("IKIGAI_BRAVE_URL", &url)
        .env("BRAVE_API_KEY", "from-env")
        .json_in(&args)
        .output();
    success(&out);
    assert_eq!(token(2).as_deref(), Some("from-env"));
}

#[test]
fn broken_credentials_file_is_a_clear_error_naming_it() {
    let server = brave(Reply::json(200, &fixture_json("brave_no_web.json")));
    let sandbox = Sandbox::new();
    let file = sandbox.xdg_credentials("{\"web_search\": {\"brave\": ");
    let out = sandbox
        .run_xdg(TOOL)
        .env("IKIGAI_BRAVE_URL", server.url("/"))
        .json_in(&json!({"query": "rust"}))
        .output();
    let message = failure(&out, "AUTH_MISSING");
    assert_eq!(
        message,
        format!(
            "credentials file {} is not valid JSON (EOF while parsing a value at line 1 column 25); fix it or remove it",
            file.display()
        )
    );
    assert_eq!(out.stderr, "");

    // The environment answers first: the broken file is not even read.
    let out = sandbox
        .run_xdg(TOOL)
        .env("IKIGAI_BRAVE_URL", server.url("/"))
        .env("BRAVE_API_KEY", KEY)
        .json_in(&json!({"query": "rust"}))
        .output();
    success(&out);
}

#[test]
fn rejected_key_is_auth_invalid_and_never_shown() {
    for status in [401, 403] {
        let server = brave(Reply::json(status, &fixture_json("brave_error_401.json")));
        let out = search(&Sandbox::new(), &server, json!({"query": "rust"}));
        let message = failure(&out, "AUTH_INVALID");
        let reason = if status == 401 {
            "Unauthorized"
        } else {
            "Forbidden"
        };
        assert_eq!(
            message,
            format!(
                "Brave Search rejected the API key (HTTP {status}: {reason}). Check the key in the environment variable BRAVE_API_KEY."
            )
        );
        assert!(!out.stdout.contains(KEY) && !out.stderr.contains(KEY));
    }
}

#[test]
fn status_429_is_rate_limit_with_the_spec_text() {
    let server = brave(Reply::json(429, &fixture_json("brave_error_429.json")));
    let out = search(&Sandbox::new(), &server, json!({"query": "rust"}));
    assert_eq!(
        failure(&out, "RATE_LIMIT"),
        "Rate limit exceeded. You've used your free search quota (2,000/month)."
    );
}

#[test]
fn other_statuses_are_api_errors_with_the_providers_detail() {
    let server = brave(Reply::json(422, &fixture_json("brave_error_422.json")));
    let out = search(
        &Sandbox::new(),
        &server,
        json!({"query": "rust", "offset": 12}),
    );
    assert_eq!(
        failure(&out, "API_ERROR"),
        "Brave Search API error: HTTP 422: Unprocessable Entity: Unable to validate request parameter(s)."
    );

    let server = brave(Reply::status(502).body("<html>upstream down</html>"));
    let out = search(&Sandbox::new(), &server, json!({"query": "rust"}));
    assert_eq!(
        failure(&out, "API_ERROR"),
        "Brave Search API error: HTTP 502: Bad Gateway: <html>upstream down</html>"
    );

    let server = brave(Reply::status(500));
    let out = search(&Sandbox::new(), &server, json!({"query": "rust"}));
    assert_eq!(
        failure(&out, "API_ERROR"),
        "Brave Search API error: HTTP 500: Internal Server Error"
    );
}

#[test]
fn redirects_are_not_followed_so_the_key_stays_with_brave() {
    let server = Server::start(|req| match req.path.as_str() {
        "/search" => Reply::redirect(302, "/elsewhere"),
        _ => Reply::json(200, &fixture_json("brave_no_web.json")),
    });
    let out = search(&Sandbox::new(), &server, json!({"query": "rust"}));
    assert_eq!(
        failure(&out, "API_ERROR"),
        "Brave Search API error: HTTP 302: Found"
    );
    let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, ["/search"]);
}

#[test]
fn a_200_that_is_not_the_expected_json_is_an_api_error_saying_why() {
    let server = brave(Reply::typed("text/html", "<html>captive portal</html>"));
    let out = search(&Sandbox::new(), &server, json!({"query": "rust"}));
    assert_eq!(
        failure(&out, "API_ERROR"),
        "Brave Search API error: HTTP 200: OK with a body that is not JSON (expected value at line 1 column 1)"
    );

    let server = brave(Reply::json(
        200,
        &json!({"type": "search", "web": {"results": "none"}}),
    ));
    let out = search(&Sandbox::new(), &server, json!({"query": "rust"}));
    assert_eq!(
        failure(&out, "API_ERROR"),
        "Brave Search API error: unexpected answer: 'web.results' is not an array"
    );

    let server = brave(Reply::ok());
    let out = search(&Sandbox::new(), &server, json!({"query": "rust"}));
    assert_eq!(
        failure(&out, "API_ERROR"),
        "Brave Search API error: HTTP 200: OK with an empty body"
    );
}

#[test]
fn unreachable_server_is_a_network_error() {
    let sandbox = Sandbox::new();
    let port = closed_port();
    let out = sandbox
        .run(TOOL)
        .env(
            "IKIGAI_BRAVE_URL",
            format!("http://127.0.0.1:{port}/search"),
        )
        .env("BRAVE_API_KEY", KEY)
        .json_in(&json!({"query": "rust"}))
        .output();
    assert_eq!(
        failure(&out, "NETWORK_ERROR"),
        format!("Could not reach Brave Search at 127.0.0.1:{port}: connection refused")
    );

    let server = brave(Reply::hang_up());
    let out = search(&sandbox, &server, json!({"query": "rust"}));
    let message = failure(&out, "NETWORK_ERROR");
    assert!(
        message.starts_with(&format!(
            "Could not reach Brave Search at {}: ",
            server.addr()
        )),
        "{message}"
    );
    assert!(!message.contains(KEY));
}

#[test]
fn a_server_that_stalls_times_out() {
    let server = brave(Reply::stall(Duration::from_secs(8)));
    let out = Sandbox::new()
        .run(TOOL)
        .env("IKIGAI_BRAVE_URL", server.url("/"))
        .env("BRAVE_API_KEY", KEY)
        .env("IKIGAI_WEB_TIMEOUT", "1")
        .json_in(&json!({"query": "rust"}))
        .output();
    assert_eq!(
        failure(&out, "NETWORK_ERROR"),
        format!(
            "Could not reach Brave Search at {}: timeout: no complete response within 1 s",
            server.addr()
        )
    );
}

#[test]
fn stub_mode_answers_without_network_or_key() {
    let server = brave(Reply::status(500));
    let sandbox = Sandbox::new();
    let expected = json!({"success": true, "results": [{
        "title": "Example Domain (Brave Search stub result)",
        "url": "https://example.com/",
        "snippet": "A fixed stub result: SHELLCLAW_STUB or IKIGAI_STUB is set, so no search was made."
    }], "count": 1});
    for flag in ["SHELLCLAW_STUB", "IKIGAI_STUB"] {
        for args in [
            json!({"query": "anything"}),
            json!({"query": "other", "count": 3, "blocked_domains": ["example.com"]}),
        ] {
            let out = sandbox
                .run(TOOL)
                .env(flag, "1")
                .env("IKIGAI_BRAVE_URL", server.url("/"))
                .json_in(&args)
                .output();
            assert_eq!(success(&out), expected);
        }
        let out = sandbox
            .run(TOOL)
            .env(flag, "1")
            .json_in(&json!({"query": "x"}))
            .output();
        assert_eq!(
            failure(&out, "INVALID_ARG"),
            "parameter 'query' must be at least 2 characters long, got 1"
        );
        let out = sandbox
            .run(TOOL)
            .env(flag, "1")
            .json_in(&json!({"query": "rust", "count": 21}))
            .output();
        assert_eq!(
            failure(&out, "INVALID_ARG"),
            "parameter 'count' must be at most 20, got 21"
        );
    }
    assert!(server.requests().is_empty());
}

#[test]
fn shellclaw_protocol_failure_repeats_the_message_on_stderr() {
    let sandbox = Sandbox::new();
    let out = sandbox
        .run("web_search_brave")
        .arg(json!({"query": "rust"}).to_string())
        .output();
    assert_eq!(failure(&out, "AUTH_MISSING"), AUTH_MISSING);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{out:?}");
    assert!(lines[0].starts_with(r#"{"kind":"config_required""#));
    assert_eq!(
        lines[1],
        format!("web_search_brave: {}", AUTH_MISSING.replace('\n', " "))
    );
}
