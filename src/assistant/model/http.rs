//! The HTTP side every provider shares: one POST of a JSON body whose reply
//! is a server-sent-event stream, with provider errors turned into a
//! `ModelError` a person can act on (the provider's own message, not a
//! status line alone).

use std::cell::RefCell;
use std::io::{BufReader, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;

use super::sse::{self, Event};
use super::ModelError;

/// At most this much of an error body is read and shown.
const ERROR_BODY_LIMIT: u64 = 64 * 1024;

fn agent() -> &'static ureq::Agent {
    static AGENT: OnceLock<ureq::Agent> = OnceLock::new();
    AGENT.get_or_init(|| {
        ureq::Agent::config_builder()
            // Error statuses carry the provider's explanation in the body.
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(30)))
            // A model may think silently for a while, but a connection that
            // says nothing for five minutes is dead.
            .timeout_per_read(Some(Duration::from_secs(300)))
            .build()
            .into()
    })
}

thread_local! {
    /// Set on a request's own thread (`stream_cancellable`): once the flag is
    /// true, the person has given up on the reply, so reading it stops and
    /// the connection is dropped instead of being read to its end.
    static STOP: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Makes every request on this thread stop reading once `flag` is set.
pub fn stop_when(flag: Arc<AtomicBool>) {
    STOP.with(|s| *s.borrow_mut() = Some(flag));
}

fn stopped() -> bool {
    STOP.with(|s| {
        s.borrow()
            .as_ref()
            .is_some_and(|f| f.load(Ordering::SeqCst))
    })
}

/// A reply body that ends (as if closed) once the request is given up.
struct Stoppable<R>(R);

impl<R: Read> Read for Stoppable<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if stopped() {
            return Ok(0);
        }
        self.0.read(buf)
    }
}

/// POSTs `body` to `url` and feeds each server-sent event of the reply to
/// `on_event`, which returns Ok(false) to stop reading. No key the host
/// holds survives in an error (see `redact`).
pub fn post_sse(
    url: &str,
    headers: &[(&str, &str)],
    body: &Value,
    on_event: &mut dyn FnMut(Event) -> Result<bool, ModelError>,
) -> Result<(), ModelError> {
    exchange(url, headers, body, on_event).map_err(|e| redact(e, &held_secrets(url, headers)))
}

fn exchange(
    url: &str,
    headers: &[(&str, &str)],
    body: &Value,
    on_event: &mut dyn FnMut(Event) -> Result<bool, ModelError>,
) -> Result<(), ModelError> {
    let mut request = agent()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request
        .send(body.to_string())
        .map_err(|e| ModelError::Network(format!("{url}: {e}")))?;
    let status = response.status().as_u16();
    let mut reader = response.into_body().into_reader();
    if !(200..300).contains(&status) {
        let mut text = Vec::new();
        let _ = (&mut reader).take(ERROR_BODY_LIMIT).read_to_end(&mut text);
        return Err(ModelError::Http {
            status,
            message: error_message(&String::from_utf8_lossy(&text)),
        });
    }
    let mut failure = None;
    let read = sse::read_events(
        &mut BufReader::new(Stoppable(reader)),
        &mut |event| match on_event(event) {
            Ok(go_on) => go_on,
            Err(e) => {
                failure = Some(e);
                false
            }
        },
    );
    if let Some(e) = failure {
        return Err(e);
    }
    if stopped() {
        return Err(ModelError::Cancelled);
    }
    read.map_err(|e| match e {
        sse::ReadError::Io(e) => ModelError::Network(format!("connection lost mid-reply: {e}")),
        sse::ReadError::TooBig(why) => ModelError::Malformed(why),
    })
}

/// Every secret the host holds for this request: the values of its headers
/// named like secrets (`authorization`, `x-api-key`; a bearer token also
/// bare), `key=` values in its URL, and every variable of the host's
/// environment named like a secret. Values shorter than 8 bytes are left
/// alone: too short to be keys, too common to cut.
fn held_secrets(url: &str, headers: &[(&str, &str)]) -> Vec<String> {
    use crate::sandbox::secrets::is_secret;
    let mut secrets: Vec<String> = Vec::new();
    for (_, value) in headers.iter().filter(|(name, _)| is_secret(name.as_ref())) {
        secrets.push(value.to_string());
        if let Some(token) = value.strip_prefix("Bearer ") {
            secrets.push(token.to_string());
        }
    }
    if let Some((_, query)) = url.split_once('?') {
        secrets.extend(
            query
                .split('&')
                .filter_map(|pair| pair.strip_prefix("key="))
                .map(str::to_string),
        );
    }
    for (name, value) in std::env::vars_os() {
        if crate::sandbox::secrets::is_secret(&name) {
            secrets.push(value.to_string_lossy().into_owned());
        }
    }
    secrets.retain(|s| s.len() >= 8);
    // Longest first, so a key that contains another is cut whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets
}

/// The error with each of `secrets` replaced by `[redacted]` in its text,
/// before anyone shows or stores it: providers echo a wrong key back ("Incorrect API key provided: sk-...").
pub fn redact(error: ModelError, secrets: &[String]) -> ModelError {
    let clean = |text: String| {
        secrets.iter().fold(text, |text, secret| {
            text.replace(secret.as_str(), "[redacted]")
        })
    };
    match error {
        ModelError::Http { status, message } => ModelError::Http {
            status,
            message: clean(message),
        },
        ModelError::Network(m) => ModelError::Network(clean(m)),
        ModelError::Malformed(m) => ModelError::Malformed(clean(m)),
        ModelError::Reported(m) => ModelError::Reported(clean(m)),
        other => other,
    }
}

/// The provider's explanation in an error body: `error.message` (all three
/// providers), `message`, or the body itself, shortened.
pub fn error_message(body: &str) -> String {
    if let Ok(json) = serde_json::from_str::<Value>(body) {
        let error = &json["error"];
        for found in [&error["message"], error, &json["message"]] {
            if let Some(text) = found.as_str() {
                return text.to_string();
            }
        }
    }
    let body = body.trim();
    if body.is_empty() {
        return "(no explanation in the reply)".into();
    }
    shorten(body, 500)
}

/// `text` cut to at most `max` characters, saying how much was cut.
pub fn shorten(text: &str, max: usize) -> String {
    match crate::host::text::split_chars(text, max) {
        (kept, "") => kept.to_string(),
        (kept, cut) => format!("{kept}... ({} more bytes)", cut.len()),
    }
}

/// Parses one event's data as JSON, or says which provider sent what.
pub fn event_json(provider: &str, data: &str) -> Result<Value, ModelError> {
    serde_json::from_str(data).map_err(|e| {
        ModelError::Malformed(format!(
            "{provider} sent an event that is not JSON ({e}): {}",
            shorten(data, 200)
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_up_request_stops_reading_an_endless_stream() {
        use std::io::Write;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n");
            for _ in 0..100_000 {
                if conn.write_all(b"data: {}\n\n").is_err() {
                    break;
                }
            }
        });
        let flag = Arc::new(AtomicBool::new(false));
        stop_when(Arc::clone(&flag));
        let mut seen = 0;
        // Without the stop, all 100000 events are read.
        let result = post_sse(&url, &[], &serde_json::json!({}), &mut |_| {
            seen += 1;
            if seen == 3 {
                flag.store(true, Ordering::SeqCst);
            }
            Ok(true)
        });
        assert_eq!(result, Err(ModelError::Cancelled));
        assert!(seen < 1000, "{seen} events read after the stop");
    }

    #[test]
    fn keys_are_redacted_from_errors() {
        let headers = [("authorization", "Bearer sk-live-123456789")];
        let secrets = held_secrets("https://x/v1?alt=sse&key=AIzaKEY12345", &headers);
        let error = ModelError::Http {
            status: 401,
            message: "Incorrect API key provided: sk-live-123456789 (or AIzaKEY12345)".into(),
        };
        assert_eq!(
            redact(error, &secrets),
            ModelError::Http {
                status: 401,
                message: "Incorrect API key provided: [redacted] (or [redacted])".into()
            }
        );
        let short = held_secrets("https://x/", &[("x-api-key", "abc")]);
        assert!(!short.contains(&"abc".to_string()));
        let plain = held_secrets("https://x/", &[("anthropic-version", "2023-06-01")]);
        assert!(!plain.contains(&"2023-06-01".to_string()));
        assert_eq!(
            redact(ModelError::Cancelled, &secrets),
            ModelError::Cancelled
        );
    }

    #[test]
    fn error_messages_from_each_provider_shape() {
        assert_eq!(
            error_message(r#"{"error":{"message":"Incorrect API key","type":"x"}}"#),
            "Incorrect API key"
        );
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(error_message(r#"{"error":"plain"}"#), "plain");
        assert_eq!(error_message("  Bad Gateway \n"), "Bad Gateway");
        assert_eq!(error_message(""), "(no explanation in the reply)");
        assert!(error_message(&"x".repeat(600)).ends_with("(100 more bytes)"));
    }
}
