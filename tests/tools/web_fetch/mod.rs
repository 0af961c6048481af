//! web-fetch against pages served on 127.0.0.1: HTML to markdown, charsets,
//! text and binary types, redirects, limits, every error code, offset/limit
//! stub mode, the markdown rules and the output cap; the public-internet
//! guard in `addresses`; what of a page is its article in `extraction`.

use std::io::Write;
use std::net::TcpListener;
use std::time::Duration;

use serde_json::{json, Value};

use super::web_support::{failure, fixture_bytes, success, Sandbox};
use crate::common::http::{closed_port, Reply, Server};
use crate::common::Output;

const TOOL: &str = "web-fetch";

fn fetch(args: Value) -> Output {
    Sandbox::new().run_fetch().json_in(&args).output()
}

fn fetch_url(url: &str) -> Output {
    fetch(json!({"url": url}))
}

/// A server with one page at every path.
fn serve(reply: Reply) -> Server {
    Server::start(move |_| reply.clone())
}

#[test]
fn html_becomes_markdown_with_title_and_no_hidden_text() {
    let server = serve(Reply::html(fixture_bytes("article.html")));
    let url = server.url("/guide");
    let out = fetch_url(&url);
    let answer = success(&out);
    let content = answer["content"].as_str().unwrap();
    // The heading that repeats the title is left out: the title is given
    // beside the content (below).
    assert_eq!(
        content,
        "This guide explains **async**/*await* in [Rust](https://www.rust-lang.org/).\n\
         \n\
         ## Getting started\n\
         \n\
         Add an executor such as `tokio` to your project:\n\
         \n\
         ```toml\n\
         [dependencies]\n\
         tokio = { version = \"1\", features = [\"full\"] }\n\
         ```\n\
         \n\
         ### Why async?\n\
         \n\
         * Many tasks on few threads\n\
         * No callback pyramids\n\
         \n\
         1. Write an `async fn`\n\
         2. Call `.await`\n\
         \n\
         Spaced out paragraph."
    );
    // The page marks its main content: the footer outside it is left out.
    assert!(!content.contains("2024 The Async Book authors"));
    for hidden in [
        "STYLE-TEXT",
        "SCRIPT_TEXT",
        "JSONLD_TEXT",
        "COMMENT_TEXT",
        "NAV_TEXT",
        "NOSCRIPT_TEXT",
        "enable JavaScript",
        "INLINE_SCRIPT_TEXT",
    ] {
        assert!(!out.stdout.contains(hidden), "{hidden} leaked: {content}");
    }
    assert!(!content.contains("\n\n\n"));
    assert!(content.lines().all(|l| l == l.trim_end()));
    // The documented fields, in their order (docs/web-fetch.md).
    let keys: Vec<&String> = answer.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["success", "url", "title", "content"]);
    assert_eq!(answer["url"], url);
    assert_eq!(answer["title"], "Asynchronous Programming in Rust");

    let req = &server.requests()[0];
    assert_eq!(req.method, "GET");
    assert!(req.header("Accept").unwrap().starts_with("text/html"));
    assert!(req
        .header("User-Agent")
        .unwrap()
        .starts_with("ikigai-tools/"));
}

#[test]
fn xhtml_is_html() {
    let server = serve(Reply::typed(
        "application/xhtml+xml",
        "<?xml version=\"1.0\"?><html xmlns=\"http://www.w3.org/1999/xhtml\"><head><title>X</title></head><body><h2>Strict</h2></body></html>",
    ));
    let answer = success(&fetch_url(&server.url("/")));
    assert_eq!(answer["title"], "X");
    assert!(answer["content"].as_str().unwrap().ends_with("## Strict"));
}

#[test]
fn offset_is_a_one_based_line_and_limit_counts_lines() {
    let page = "<title>Lines</title><h1>One</h1><p>Two</p><p>Three</p>";
    // Markdown lines: "# One", "", "Two", "", "Three".
    let server = serve(Reply::html(page));
    let url = server.url("/");
    let content = |args: Value| success(&fetch(args))["content"].clone();
    assert_eq!(content(json!({"url": url})), "# One\n\nTwo\n\nThree");
    assert_eq!(content(json!({"url": url, "offset": 3})), "Two\n\nThree");
    assert_eq!(content(json!({"url": url, "offset": 3, "limit": 1})), "Two");
    assert_eq!(content(json!({"url": url, "limit": 2})), "# One\n");
    assert_eq!(
        content(json!({"url": url, "offset": 5, "limit": 100})),
        "Three"
    );
    assert_eq!(content(json!({"url": url, "offset": 6})), "");
    assert_eq!(
        success(&fetch(json!({"url": url, "offset": 99})))["title"],
        "Lines"
    );

    for (args, message) in [
        (
            json!({"url": url, "offset": 0}),
            "parameter 'offset' must be at least 1, got 0",
        ),
        (
            json!({"url": url, "limit": 0}),
            "parameter 'limit' must be at least 1, got 0",
        ),
        (
            json!({"url": url, "limit": "5"}),
            "parameter 'limit' must be an integer, got a string",
        ),
    ] {
        assert_eq!(failure(&fetch(args), "INVALID_ARG"), message);
    }
}

#[test]
fn redirects_are_followed_and_the_final_url_reported() {
    let server = Server::start(|req| {
        let path = req.path.as_str();
        if let Some(n) = path.strip_prefix("/hop/") {
            let n: u32 = n.parse().unwrap();
            return if n == 0 {
                Reply::html("<title>Landed</title><p>here</p>")
            } else {
                let status = [301, 302, 303, 307, 308][n as usize % 5];
                Reply::redirect(status, &format!("/hop/{}", n - 1))
            };
        }
        if let Some(n) = path.strip_prefix("/loop/") {
            let n: u32 = n.parse().unwrap();
            return Reply::redirect(302, &format!("/loop/{}", (n + 1) % 2));
        }
        Reply::status(404)
    });

    let answer = success(&fetch_url(&server.url("/hop/3")));
    assert_eq!(answer["url"], server.url("/hop/0"));
    assert_eq!(answer["title"], "Landed");

    // Ten redirects are allowed...
    let answer = success(&fetch_url(&server.url("/hop/10")));
    assert_eq!(answer["url"], server.url("/hop/0"));
    // ...eleven are not, nor is a loop.
    for start in ["/hop/11", "/loop/0"] {
        let out = fetch_url(&server.url(start));
        assert_eq!(
            failure(&out, "NETWORK_ERROR"),
            "Failed to fetch URL: more than 10 redirects (a redirect loop?)"
        );
    }
}

#[test]
fn error_statuses_are_http_errors_with_the_status_line() {
    let server = Server::start(|req| match req.path.as_str() {
        "/missing" => Reply::status(404).body("<h1>Not here</h1>"),
        "/broken" => Reply::status(500),
        "/gone-after-redirect" => Reply::redirect(301, "/missing"),
        _ => Reply::status(418),
    });
    let cases = [
        ("/missing", "HTTP 404: Not Found"),
        ("/broken", "HTTP 500: Internal Server Error"),
        ("/gone-after-redirect", "HTTP 404: Not Found"),
        ("/teapot", "HTTP 418: I'm a teapot"),
    ];
    for (path, message) in cases {
        assert_eq!(
            failure(&fetch_url(&server.url(path)), "HTTP_ERROR"),
            message
        );
    }
}

#[test]
fn latin1_pages_come_out_as_utf8() {
    let body = |meta: &str| {
        let mut page = format!("<html><head>{meta}<title>Caf").into_bytes();
        page.extend_from_slice(
            b"\xe9</title></head><body><p>Cr\xe8me br\xfbl\xe9e \x80 5</p></body></html>",
        );
        page
    };
    let server = Server::start(move |req| match req.path.as_str() {
        "/header" => Reply::typed("text/html; charset=ISO-8859-1", body("")),
        "/meta" => Reply::typed("text/html", body("<meta charset=\"windows-1252\">")),
        "/http-equiv" => Reply::typed(
            "text/html",
            body("<meta http-equiv=\"Content-Type\" content=\"text/html; charset=iso-8859-1\">"),
        ),
        "/text" => Reply::typed("text/plain; charset=latin1", b"na\xefve".to_vec()),
        _ => Reply::status(404),
    });
    for path in ["/header", "/meta", "/http-equiv"] {
        let answer = success(&fetch_url(&server.url(path)));
        assert_eq!(answer["title"], "Café", "{path}");
        // ISO-8859-1 is decoded as windows-1252, as browsers do: 0x80 is €.
        assert_eq!(answer["content"], "Crème brûlée € 5", "{path}");
    }
    let answer = success(&fetch_url(&server.url("/text")));
    assert_eq!(answer["content"], "naïve");
}

#[test]
fn undeclared_bad_bytes_become_replacement_characters() {
    let server = serve(Reply::typed("text/plain", b"ok \xff\xfe end".to_vec()));
    let answer = success(&fetch_url(&server.url("/")));
    assert_eq!(answer["content"], "ok \u{fffd}\u{fffd} end");
}

#[test]
fn text_types_are_returned_as_text_with_an_empty_title() {
    let markdown = "# Notes\n\n\n\n  indented\r\nend\n";
    let json_body = r#"{"name": "ikigai", "tools": [1, 2]}"#;
    let server = Server::start(move |req| match req.path.as_str() {
        "/notes.md" => Reply::typed("text/markdown; charset=utf-8", markdown),
        "/data.json" => Reply::typed("application/json", json_body),
        "/feed" => Reply::typed("application/atom+xml", "<feed><title>F</title></feed>"),
        "/plain" => Reply::typed("text/plain", "<b>not html</b>"),
        "/untyped" => Reply::ok().body("just words"),
        "/untyped-html" => Reply::ok().body("<!DOCTYPE html><title>Sniffed</title><p>yes</p>"),
        _ => Reply::status(404),
    });
    let get = |path: &str| success(&fetch_url(&server.url(path)));
    let answer = get("/notes.md");
    assert_eq!(answer["title"], "");
    assert_eq!(answer["content"], "# Notes\n\n\n\n  indented\nend\n");
    assert_eq!(get("/data.json")["content"], json_body);
    assert_eq!(get("/feed")["content"], "<feed><title>F</title></feed>");
    assert_eq!(get("/plain")["content"], "<b>not html</b>");
    assert_eq!(get("/untyped")["content"], "just words");
    let sniffed = get("/untyped-html");
    assert_eq!(
        (&sniffed["title"], &sniffed["content"]),
        (&json!("Sniffed"), &json!("yes"))
    );

    let lines = success(&fetch(
        json!({"url": server.url("/notes.md"), "offset": 5, "limit": 2}),
    ));
    assert_eq!(lines["content"], "  indented\nend");
}

#[test]
fn binary_types_are_unsupported_content_naming_the_type() {
    let server = Server::start(|req| match req.path.as_str() {
        "/logo.png" => Reply::typed("image/png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR".to_vec()),
        "/paper.pdf" => Reply::typed("application/pdf", "%PDF-1.7\n%\u{e2}\u{e3}"),
        "/src.zip" => Reply::typed("application/zip", b"PK\x03\x04\x14\x00".to_vec()),
        "/blob" => Reply::typed("application/octet-stream", b"\x00\x01\x02\xff".to_vec()),
        _ => Reply::ok().body(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03".to_vec()),
    });
    for (path, mime) in [
        ("/logo.png", "image/png"),
        ("/paper.pdf", "application/pdf"),
        ("/src.zip", "application/zip"),
    ] {
        assert_eq!(
            failure(&fetch_url(&server.url(path)), "UNSUPPORTED_CONTENT"),
            format!("Unsupported content type: {mime} is binary; web_fetch reads HTML and text (plain, markdown, JSON, XML, ...) only")
        );
    }
    assert_eq!(
        failure(&fetch_url(&server.url("/blob")), "UNSUPPORTED_CONTENT"),
        "Unsupported content: the response has Content-Type application/octet-stream and its body is binary; web_fetch reads HTML and text only"
    );
    assert_eq!(
        failure(&fetch_url(&server.url("/untyped")), "UNSUPPORTED_CONTENT"),
        "Unsupported content: the response has no Content-Type and its body is binary; web_fetch reads HTML and text only"
    );
}

#[test]
fn a_body_over_10_mib_is_cut_and_says_so() {
    const MIB: usize = 1024 * 1024;
    // 11 MiB of 16-byte lines.
    let line = "0123456789abcde\n";
    let body = line.repeat(11 * MIB / line.len());
    let server = serve(Reply::typed("text/plain", body));
    let out = fetch_url(&server.url("/huge.txt"));
    let answer = success(&out);
    let content = answer["content"].as_str().unwrap();
    let note =
        "[Content truncated: the response is larger than 10 MiB; only its first 10 MiB were read.]";
    assert!(
        content.ends_with(&format!("0123456789abcde\n\n\n{note}")),
        "{}",
        &content[content.len() - 200..]
    );
    assert_eq!(content.len(), 10 * MIB + 2 + note.len());

    // The note is a line of its own, reachable by offset.
    let lines = 10 * MIB / line.len();
    let tail = success(&fetch(
        json!({"url": server.url("/huge.txt"), "offset": lines}),
    ));
    assert_eq!(tail["content"], format!("0123456789abcde\n\n\n{note}"));
}

#[test]
fn a_huge_html_page_is_cut_and_still_converted() {
    let paragraph = "<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>\n";
    let body = format!(
        "<html><head><title>Big</title></head><body>{}",
        paragraph.repeat(11 * 1024 * 1024 / paragraph.len())
    );
    let server = serve(Reply::html(body));
    let answer = success(&fetch_url(&server.url("/big.html")));
    assert_eq!(answer["title"], "Big");
    let content = answer["content"].as_str().unwrap();
    let lorem = "Lorem ipsum dolor sit amet, consectetur adipiscing elit.";
    assert!(content.starts_with(&format!("{lorem}\n\n{lorem}\n\n")));
    assert!(content.ends_with(
        "\n\n[Content truncated: the response is larger than 10 MiB; only its first 10 MiB were read.]"
    ));
}

#[test]
fn gzip_bodies_are_decoded_and_corrupt_ones_are_parse_errors() {
    let server = Server::start(|req| match req.path.as_str() {
        "/good" => {
            Reply::html(fixture_bytes("compressed.html.gz")).header("Content-Encoding", "gzip")
        }
        _ => Reply::html(b"\x1f\x8b\x08\x00 this is not deflate data at all".to_vec())
            .header("Content-Encoding", "gzip"),
    });
    let answer = success(&fetch_url(&server.url("/good")));
    assert_eq!(answer["title"], "Compressed");
    assert_eq!(answer["content"], "# Gzip works\n\nDecoded by the client.");
    let message = failure(&fetch_url(&server.url("/bad")), "PARSE_ERROR");
    assert!(
        message.starts_with("Failed to parse response: the gzip-encoded body is corrupt"),
        "{message}"
    );
}

#[test]
fn html_nested_deeper_than_512_is_flattened_not_refused() {
    // 2000 levels of div and bold: the outer 512 elements count, the rest
    // are flattened into them; bold inside bold is bold once.
    let page = format!(
        "<title>Deep</title>{}deep <b>text</b>{}",
        "<div><b>".repeat(1000),
        "</b></div>".repeat(1000)
    );
    let answer = success(&fetch_url(&serve(Reply::html(page)).url("/")));
    assert_eq!(answer["content"], "**deep text**");
    let page = format!("<title>Deep</title>{}x", "<div>".repeat(100_000));
    let answer = success(&fetch_url(&serve(Reply::html(page)).url("/")));
    assert_eq!(answer["content"], "x");
}

#[test]
fn invalid_urls_are_invalid_url() {
    let cases = [
        ("ftp://example.com/file", "Invalid URL 'ftp://example.com/file': scheme 'ftp' is not supported (only http and https)"),
        ("file:///etc/passwd", "Invalid URL 'file:///etc/passwd': scheme 'file' is not supported (only http and https)"),
        ("example.com", "Invalid URL 'example.com': it must start with http:// or https://"),
        ("http://", "Invalid URL 'http://': it has no host"),
        ("https://exa mple.com/", "Invalid URL 'https://exa mple.com/': the host name 'exa mple.com' holds ' '"),
        ("http://127.0.0.1:99999/", "Invalid URL 'http://127.0.0.1:99999/': port 99999 is not a port number (1-65535)"),
    ];
    for (url, message) in cases {
        assert_eq!(failure(&fetch_url(url), "INVALID_URL"), message);
    }
}

#[test]
fn unreachable_servers_are_network_errors() {
    let port = closed_port();
    assert_eq!(
        failure(
            &fetch_url(&format!("http://127.0.0.1:{port}/")),
            "NETWORK_ERROR"
        ),
        "Failed to fetch URL: connection refused"
    );

    let server = Server::start(|req| match req.path.as_str() {
        "/hang-up" => Reply::hang_up(),
        _ => Reply::raw("this is not HTTP\r\n\r\n"),
    });
    for path in ["/hang-up", "/garbage"] {
        let message = failure(&fetch_url(&server.url(path)), "NETWORK_ERROR");
        assert!(message.starts_with("Failed to fetch URL: "), "{message}");
    }
}

#[test]
fn a_stalled_response_times_out() {
    let server = serve(Reply::stall(Duration::from_secs(8)).body("<p>partial"));
    let out = Sandbox::new()
        .run_fetch()
        .env("IKIGAI_WEB_TIMEOUT", "1")
        .json_in(&json!({"url": server.url("/slow")}))
        .output();
    assert_eq!(
        failure(&out, "NETWORK_ERROR"),
        "Failed to fetch URL: timeout: no complete response within 1 s"
    );

    let out = Sandbox::new()
        .run_fetch()
        .env("IKIGAI_WEB_TIMEOUT", "60")
        .json_in(&json!({"url": server.url("/slow")}))
        .output();
    assert_eq!(
        failure(&out, "INVALID_ARG"),
        "IKIGAI_WEB_TIMEOUT must be a whole number of seconds from 1 to 20, got '60'"
    );
}

#[test]
fn https_goes_through_tls() {
    // A plain-text server on the https port: the TLS handshake must be
    // attempted (and fail), which shows TLS support is built in.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        if let Ok((mut stream, _)) = listener.accept() {
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let message = failure(
        &fetch_url(&format!("https://127.0.0.1:{port}/")),
        "NETWORK_ERROR",
    );
    // Should the tool not have connected, this lets the accept return.
    let _ = std::net::TcpStream::connect(("127.0.0.1", port));
    server.join().unwrap();
    assert!(
        message.starts_with("Failed to fetch URL: TLS error: "),
        "{message}"
    );
}

#[test]
fn stub_mode_answers_without_network() {
    let port = closed_port();
    let url = format!("http://127.0.0.1:{port}/never");
    for flag in ["SHELLCLAW_STUB", "IKIGAI_STUB"] {
        let run = |args: Value| {
            Sandbox::new()
                .run_fetch()
                .env(flag, "1")
                .json_in(&args)
                .output()
        };
        let answer = success(&run(json!({"url": url})));
        assert_eq!(
            answer,
            json!({
                "success": true,
                "url": url,
                "title": "Example Domain",
                "content": "# Example Domain\n\nA fixed stub page: SHELLCLAW_STUB or IKIGAI_STUB is set, so nothing was fetched.\n\n[Learn more](https://www.iana.org/help/example-domains)"
            })
        );
        assert_eq!(
            success(&run(json!({"url": url, "offset": 5})))["content"],
            "[Learn more](https://www.iana.org/help/example-domains)"
        );
        assert_eq!(
            failure(&run(json!({"url": url, "offset": 0})), "INVALID_ARG"),
            "parameter 'offset' must be at least 1, got 0"
        );
        assert_eq!(
            failure(&run(json!({"url": 42})), "INVALID_ARG"),
            "parameter 'url' must be a string, got 42"
        );
        failure(&run(json!({"url": "gopher://x"})), "INVALID_URL");
    }
}

#[test]
fn shellclaw_protocol_takes_the_url_in_dollar_one() {
    let server = serve(Reply::html("<title>T</title><p>from $1</p>"));
    let out = Sandbox::new()
        .run("web_fetch")
        .env(super::web_support::ALLOW_PRIVATE, "1")
        .arg(json!({"url": server.url("/")}).to_string())
        .output();
    assert_eq!(success(&out)["content"], "from $1");

    let out = Sandbox::new()
        .run("web_fetch")
        .arg(json!({"url": server.url("/").replace("http", "ftp")}).to_string())
        .output();
    let message = failure(&out, "INVALID_URL");
    assert_eq!(out.stderr, format!("web_fetch: {message}\n"));
}

#[test]
fn the_answer_fits_the_hosts_output_cap() {
    // Quotes and non-ASCII count as printed: escapes take more bytes.
    let body: String = (0..2000)
        .map(|i| format!("<p>Paragraph {i}: \"quoted\" text, café, \u{1}.</p>"))
        .collect();
    let server = serve(Reply::html(format!("<title>Long</title>{body}")));
    for cap in [1024usize, 4096, 65536] {
        let out = Sandbox::new()
            .run_fetch()
            .env("IKIGAI_MAX_OUTPUT", cap.to_string())
            .json_in(&json!({ "url": server.url("/") }))
            .output();
        assert!(out.stdout.len() <= cap, "{} > {cap}", out.stdout.len());
        let answer = success(&out);
        assert_eq!(answer["title"], "Long");
        let content = answer["content"].as_str().unwrap();
        assert!(
            content.starts_with("Paragraph 0: \"quoted\" text, café, \u{1}."),
            "{content}"
        );
        assert!(content.contains("bytes omitted"), "{content}");
        assert!(content.ends_with("Paragraph 1999: \"quoted\" text, café, \u{1}."));
    }
    // Without a cap the answer is whole.
    let answer = success(&fetch_url(&server.url("/")));
    assert_eq!(
        answer["content"]
            .as_str()
            .unwrap()
            .lines()
            .filter(|l| !l.is_empty())
            .count(),
        2000
    );
}

#[test]
fn markdown_rules_on_a_served_page() {
    let server = serve(Reply::html(fixture_bytes("rules.html")));
    let answer = success(&fetch_url(&server.url("/dir/rules.html")));
    let base = server.url("/base/");
    let root = server.url("");
    assert_eq!(answer["title"], "Rules page");
    assert_eq!(
        answer["content"],
        format!(
            "Anchor text, a script link, [a relative link]({base}page%20two.html?q=a%2Fb&x=1), \
             [an absolute one](https://example.org/abs).\n\n\
             Line one\\\nline two\n\n\
             ![A picture]({base}pic.png) Inline pixel\n\n\
             ## [A card]({root}/posts/1)\n\n\
             Its summary.\n\n\
             **Term**\n: Definition\n\n\
             Block one\n\n\
             Block two\n\n\
             E = mc2\n\n\
             Summary\n\n\
             Details text\n\n\
             [A talk](https://www.youtube.com/embed/1)\n\n\
             ```python\nprint(\"hi\")\n```"
        )
    );
    for outside in [
        "SITE_HEADER",
        "COOKIE_BANNER",
        "ASIDE_TEXT",
        "SITE_FOOTER",
        "<",
        "base64",
    ] {
        assert!(
            !answer["content"].as_str().unwrap().contains(outside),
            "{outside}"
        );
    }
}

#[test]
fn undeclared_non_utf8_pages_are_windows_1252() {
    let server = serve(Reply::typed(
        "text/html",
        b"<title>Caf\xe9</title><p>na\xefve \x93quotes\x94 \x80 5</p>".to_vec(),
    ));
    let answer = success(&fetch_url(&server.url("/")));
    assert_eq!(answer["title"], "Café");
    assert_eq!(answer["content"], "naïve “quotes” € 5");
}

#[test]
fn a_written_answer_is_the_same_bytes_as_a_capped_one_that_fits() {
    // Without a cap the answer is written as the markdown is made; under a
    // cap it fits, it is the value the runner prints. Long enough to be
    // handed on in many pieces, with links around blocks and code spans
    // (rewritten when they close) across piece boundaries.
    let section = |i: usize| {
        format!(
            "<h2>Section {i}</h2><p>Text with \"quotes\", a\ttab, café and <code>a`b</code>.</p>\
             <a href=\"/post/{i}\"><h3>Card {i}</h3><p>Summary</p></a>\
             <blockquote><p>Quoted<br>twice</p></blockquote><ul><li>one<li>two</ul>"
        )
    };
    let body: String = (0..1000).map(section).collect();
    let server = serve(Reply::html(format!(
        "<title>Pieces</title><main>{body}</main>"
    )));
    let url = server.url("/pieces");
    for args in [
        json!({"url": url}),
        json!({"url": url, "offset": 7}),
        json!({"url": url, "offset": 100, "limit": 250}),
        json!({"url": url, "limit": 1}),
        json!({"url": url, "offset": 1_000_000}),
    ] {
        let written = fetch(args.clone());
        let capped = Sandbox::new()
            .run_fetch()
            .env("IKIGAI_MAX_OUTPUT", "100000000")
            .json_in(&args)
            .output();
        assert_eq!(written.code, capped.code);
        assert!(written.stdout == capped.stdout, "{args}");
        success(&written);
    }
    let whole = success(&fetch_url(&url));
    let content = whole["content"].as_str().unwrap();
    assert!(content.len() > 4 * 32 * 1024, "{}", content.len());
    assert!(content.contains("\n\n### [Card 999](http://127.0.0.1:"));
    assert!(content.ends_with("* one\n* two"));
}

#[test]
fn a_capped_answer_is_the_whole_answer_s_head_and_tail() {
    // Under a cap the content is cut as it is made, keeping only what the
    // cut shows: what is shown is still the whole content's head and tail,
    // and the count is of the whole.
    let section = |i: usize| {
        format!(
            "<h2>Section {i} é</h2><p>\"Quoted\", \u{1}, a\ttab, € and 𝄞 {}</p>",
            "word ".repeat(i % 50)
        )
    };
    let body: String = (0..3000).map(section).collect();
    let server = serve(Reply::html(format!(
        "<title>Cut</title><main>{body}</main>"
    )));
    let url = server.url("/cut");
    let long_url = server.url(&format!("/{}", "u".repeat(3000)));
    for (args, caps) in [
        (
            json!({"url": url}),
            &[300usize, 1024, 4097, 65536, 1 << 20][..],
        ),
        (
            json!({"url": url, "offset": 11, "limit": 2000}),
            &[1000, 30_000][..],
        ),
        (json!({"url": long_url}), &[2048, 4096][..]),
    ] {
        let whole = success(&fetch(args.clone()));
        let whole_content = whole["content"].as_str().unwrap();
        for &cap in caps {
            let out = Sandbox::new()
                .run_fetch()
                .env("IKIGAI_MAX_OUTPUT", cap.to_string())
                .json_in(&args)
                .output();
            assert!(out.stdout.len() <= cap, "{} > {cap}", out.stdout.len());
            let answer = success(&out);
            assert_eq!(answer["title"], "Cut");
            let content = answer["content"].as_str().unwrap();
            if content == whole_content {
                assert!(cap >= 1 << 20, "{cap}: nothing was cut");
                continue;
            }
            let start = content.find("[... ").expect("a marker");
            let end = start + content[start..].find("...]\n").unwrap() + "...]\n".len();
            let words: Vec<&str> = content[start + 5..end].split(' ').collect();
            let omitted: usize = words[0].parse().unwrap();
            assert_eq!(words[2].parse::<usize>().unwrap(), whole_content.len());
            let tail = &content[end..];
            // A line end sets the marker apart from a head that lacks one.
            let mut head = &content[..start];
            if head.len() + omitted + tail.len() > whole_content.len() {
                head = head.strip_suffix('\n').unwrap();
            }
            assert!(whole_content.starts_with(head), "{cap}: {head:?}");
            assert!(whole_content.ends_with(tail), "{cap}: {tail:?}");
            assert_eq!(head.len() + omitted + tail.len(), whole_content.len());
            assert!(
                cap < 1000 || args["url"] == long_url || head.len() + tail.len() > cap / 3,
                "{cap}: room was left unused"
            );
        }
    }
}

#[test]
fn link_boxes_in_the_main_content_are_left_out_and_data_stays() {
    // Decision 74 on a served page: the table of contents, the share bar,
    // the navigation box and the tag line go; the data table of download
    // links stays; in-page links are their text; a link around a heading
    // keeps it a heading.
    let server = serve(Reply::html(fixture_bytes("link-dense.html")));
    let answer = success(&fetch_url(&server.url("/post")));
    let root = server.url("");
    assert_eq!(answer["title"], "Link boxes");
    assert_eq!(
        answer["content"],
        format!(
            "## [A card's title]({root}/posts/card)\n\n\
             ## One\n\n\
             The article's first paragraph says what the page is about, in words of its own, \
             at some length, with a [source](https://example.org/source) and a footnote.[1]\n\n\
             ## Releases\n\n\
             | Version | Download |\n| --- | --- |\n\
             | 2.0 | [tar.gz]({root}/dl/2.0.tar.gz) |\n\
             | 1.9 | [tar.gz]({root}/dl/1.9.tar.gz) |\n\
             | 1.8 | [tar.gz]({root}/dl/1.8.tar.gz) |\n\
             | 1.7 | [tar.gz]({root}/dl/1.7.tar.gz) |\n\
             | 1.6 | [tar.gz]({root}/dl/1.6.tar.gz) |\n\n\
             The second paragraph goes on in the article's own words, long enough that the \
             article, not its boxes of links, is the page.\n\n\
             [1] The footnote."
        )
    );
}

#[test]
fn a_sitemap_keeps_its_links() {
    // All links: leaving them out would leave the page nothing, so the
    // rule stands down and every link is kept, nested lists included.
    let items: String = (0..30)
        .map(|i| {
            format!(
                "<li><a href=\"/s/{i}\">Section {i}</a><ul><li><a href=\"/s/{i}/a\">Page {i}a</a>\
                 </li><li><a href=\"/s/{i}/b\">Page {i}b</a></li></ul></li>"
            )
        })
        .collect();
    let server = serve(Reply::html(format!(
        "<title>Sitemap</title><main><h1>Sitemap</h1><ul>{items}</ul></main>"
    )));
    let answer = success(&fetch_url(&server.url("/sitemap")));
    let content = answer["content"].as_str().unwrap();
    let root = server.url("");
    assert!(content.starts_with(&format!(
        "# Sitemap\n\n* [Section 0]({root}/s/0)\n  * [Page 0a]({root}/s/0/a)\n"
    )));
    assert!(content.ends_with(&format!("  * [Page 29b]({root}/s/29/b)")));
    assert_eq!(content.matches("](").count(), 90);
}

#[test]
fn a_page_that_marks_no_main_content_gives_its_article() {
    // No <main>, no role="main", no single <article>: the article is where
    // Readability finds it (decision 107). The site's header and menu, the
    // sidebar's prose, the share bar, the byline (a box, decision 90), the
    // comments and the footer go; the article's heading, paragraphs and
    // figure stay, in order.
    let server = serve(Reply::html(fixture_bytes("no-main.html")));
    let answer = success(&fetch_url(&server.url("/story")));
    let content = answer["content"].as_str().unwrap();
    assert_eq!(answer["title"], "A page that marks no main content");
    assert!(
        content.starts_with(
            "# Glaciers in the valley are retreating faster than expected\n\n\
             The glaciers above the valley"
        ),
        "{content}"
    );
    assert!(
        content.ends_with("because the ice responds slowly."),
        "{content}"
    );
    assert!(content.contains(&format!(
        "![The glacier's tongue in 2024]({})",
        server.url("/img/glacier.jpg")
    )));
    for gone in [
        "Daily Example",
        "Home",
        "Popular",
        "newsletter",
        "Mail",
        "comments",
        "hiked",
        "Copyright",
    ] {
        assert!(!content.contains(gone), "{gone}: {content}");
    }
}

mod addresses;
mod extraction;
