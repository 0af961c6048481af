//! The HTTP side every provider shares: one POST of a JSON body whose reply
//! is a server-sent-event stream (or, from servers that do not stream, one
//! JSON object), with provider errors turned into a `ModelError` a person
//! can act on (the provider's own message, not a status line alone).
//!
//! Requests are retried as the providers' own SDKs retry them: a status of
//! 408, 409, 429, 500, 502, 503, 504 or 529, or a connection that failed
//! before any reply, is tried again up to four times, waiting 0.5 s, 1 s,
//! 2 s, 4 s (each shortened by up to a quarter at random, so many clients
//! do not come back at once), or what the reply's `retry-after-ms` or
//! `retry-after` asks, up to 60 s. A reply that says `x-should-retry:
//! false` is not retried; `true` is retried whatever its status. A stream
//! that breaks off is retried the same way (`streamed`) as long as none of
//! its text has reached the person; once some has, it is not, as a second
//! answer would not match what is on the screen. Each wait is reported
//! through the notice callback of the request's thread, and setting its
//! stop flag ends the wait at once.
//! `IKIGAI_RETRY_BASE_MS` replaces the first wait of 500 ms (tests make it
//! small).

use std::cell::RefCell;
use std::io::{BufReader, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::sse::{self, Event};
use super::ModelError;

/// At most this much of an error body is read and shown.
const ERROR_BODY_LIMIT: u64 = 64 * 1024;
/// The most a whole (non-streamed) JSON reply may hold.
const WHOLE_BODY_LIMIT: u64 = 64 << 20;
/// Retries after the first attempt.
pub const MAX_RETRIES: u32 = 4;
/// The first backoff wait, doubled for each further retry.
const BASE_WAIT: Duration = Duration::from_millis(500);
/// The longest backoff wait of our own.
const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// The longest wait a provider may ask for.
const MAX_WAIT: Duration = Duration::from_secs(60);
/// Statuses the providers document as worth another try: timeout,
/// conflict (a lock), rate limit, server errors and Anthropic's overload.
const RETRYABLE: &[u16] = &[408, 409, 429, 500, 502, 503, 504, 529];

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

type Notify = Box<dyn FnMut(String)>;

thread_local! {
    /// Set on a request's own thread (`stream_cancellable`): once the flag is
    /// true, the person has given up on the reply, so reading it stops and
    /// the connection is dropped instead of being read to its end.
    static STOP: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
    /// Where this thread's retry waits are reported.
    static NOTIFY: RefCell<Option<Notify>> = const { RefCell::new(None) };
}

/// Makes every request on this thread stop reading once `flag` is set.
pub fn stop_when(flag: Arc<AtomicBool>) {
    STOP.with(|s| *s.borrow_mut() = Some(flag));
}

/// Reports this thread's retry waits to `notify`, one line each.
pub fn notify_with(notify: Notify) {
    NOTIFY.with(|n| *n.borrow_mut() = Some(notify));
}

fn notify(text: String) {
    NOTIFY.with(|n| {
        if let Some(notify) = n.borrow_mut().as_mut() {
            notify(text);
        }
    });
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

/// One piece of a reply: an event of a stream, or the whole reply of a
/// server that answered with plain JSON instead of streaming.
pub enum Part {
    Event(Event),
    Whole(Value),
}

/// POSTs `body` to `url`, retrying as the module says, and feeds each part
/// of the reply to `on_part`, which returns Ok(false) to stop reading. No
/// key the host holds survives in an error (see `redact`).
pub fn post(
    url: &str,
    headers: &[(&str, &str)],
    body: &Value,
    on_part: &mut dyn FnMut(Part) -> Result<bool, ModelError>,
) -> Result<(), ModelError> {
    exchange(url, headers, body, on_part).map_err(|e| redact(e, &held_secrets(url, headers)))
}

fn exchange(
    url: &str,
    headers: &[(&str, &str)],
    body: &Value,
    on_part: &mut dyn FnMut(Part) -> Result<bool, ModelError>,
) -> Result<(), ModelError> {
    let body = body.to_string();
    let mut retries = 0;
    let response = loop {
        let mut request = agent()
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let (error, retry) = match request.send(&body) {
            Err(_) if stopped() => return Err(ModelError::Cancelled),
            Err(e) => {
                let retry = retryable_transport(&e);
                let error = ModelError::Network(format!("{url}: {e}"));
                (
                    error,
                    retry.then(|| (None, "connection failed".to_string())),
                )
            }
            Ok(response) if response.status().is_success() => break response,
            Ok(response) => {
                let status = response.status().as_u16();
                let asked = asked_wait(response.headers());
                let decision = match header(response.headers(), "x-should-retry") {
                    Some("true") => true,
                    Some("false") => false,
                    _ => RETRYABLE.contains(&status),
                };
                let mut text = Vec::new();
                let _ = response
                    .into_body()
                    .into_reader()
                    .take(ERROR_BODY_LIMIT)
                    .read_to_end(&mut text);
                let error = ModelError::Http {
                    status,
                    message: error_message(&String::from_utf8_lossy(&text)),
                };
                (error, decision.then(|| (asked, reason(status))))
            }
        };
        match retry {
            Some((asked, why)) if retries < MAX_RETRIES => {
                retries += 1;
                let wait = asked.unwrap_or_else(|| backoff(retries));
                notify(format!(
                    "{why}, retrying in {} ({retries}/{MAX_RETRIES})",
                    seconds(wait)
                ));
                pause(wait)?;
            }
            Some(_) => return Err(gave_up(error, retries)),
            None => return Err(error),
        }
    };
    let is_json = header(response.headers(), "content-type")
        .is_some_and(|t| t.trim_start().starts_with("application/json"));
    let reader = response.into_body().into_reader();
    if is_json {
        let mut text = Vec::new();
        Stoppable(reader)
            .take(WHOLE_BODY_LIMIT)
            .read_to_end(&mut text)
            .map_err(|e| ModelError::Broken(format!("connection lost mid-reply: {e}")))?;
        if stopped() {
            return Err(ModelError::Cancelled);
        }
        let whole = serde_json::from_slice(&text).map_err(|e| {
            ModelError::Malformed(format!(
                "the reply is not JSON ({e}): {}",
                shorten(&String::from_utf8_lossy(&text), 200)
            ))
        })?;
        return on_part(Part::Whole(whole)).map(|_| ());
    }
    let mut failure = None;
    let read = sse::read_events(
        &mut BufReader::new(Stoppable(reader)),
        &mut |event| match on_part(Part::Event(event)) {
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
        sse::ReadError::Io(e) => ModelError::Broken(format!("connection lost mid-reply: {e}")),
        sse::ReadError::TooBig(why) => ModelError::Malformed(why),
    })
}

/// Runs `attempt` (one request, its reply read to the end) and runs it
/// again, as `post` retries, when its stream broke off before any of its
/// text reached `on_text`.
pub fn streamed<T>(
    on_text: &mut dyn FnMut(&str),
    attempt: impl FnMut(&mut dyn FnMut(&str)) -> Result<T, ModelError>,
) -> Result<T, ModelError> {
    retrying_broken(on_text, attempt, backoff)
}

/// `streamed`, waiting `wait(n)` before retry n.
fn retrying_broken<T>(
    on_text: &mut dyn FnMut(&str),
    mut attempt: impl FnMut(&mut dyn FnMut(&str)) -> Result<T, ModelError>,
    wait: fn(u32) -> Duration,
) -> Result<T, ModelError> {
    let mut retries = 0;
    loop {
        let mut shown = false;
        let result = attempt(&mut |text: &str| {
            shown = true;
            on_text(text);
        });
        match result {
            Err(ModelError::Broken(why)) if !shown && !stopped() => {
                if retries == MAX_RETRIES {
                    return Err(gave_up(ModelError::Broken(why), retries));
                }
                retries += 1;
                let wait = wait(retries);
                notify(format!(
                    "the reply broke off, retrying in {} ({retries}/{MAX_RETRIES})",
                    seconds(wait)
                ));
                pause(wait)?;
            }
            other => return other,
        }
    }
}

/// The last of a run of retried failures, saying how many retries it took.
fn gave_up(error: ModelError, retries: u32) -> ModelError {
    let after = format!(" (gave up after {retries} retries)");
    match error {
        ModelError::Http { status, message } => ModelError::Http {
            status,
            message: message + &after,
        },
        ModelError::Network(m) => ModelError::Network(m + &after),
        ModelError::Broken(m) => ModelError::Broken(m + &after),
        other => other,
    }
}

/// Failures of the connection itself, which a new attempt may not meet;
/// a malformed URL or a TLS setup problem would only fail again.
fn retryable_transport(e: &ureq::Error) -> bool {
    matches!(
        e,
        ureq::Error::Io(_)
            | ureq::Error::Timeout(_)
            | ureq::Error::HostNotFound
            | ureq::Error::ConnectionFailed
            | ureq::Error::Protocol(_)
            | ureq::Error::BodyStalled
    )
}

/// Why a status is retried, in the person's words.
fn reason(status: u16) -> String {
    match status {
        429 => "rate limited".into(),
        529 => "overloaded".into(),
        503 => "service unavailable".into(),
        408 => "request timed out".into(),
        409 => "conflict".into(),
        s @ 500..=599 => format!("server error {s}"),
        // Any other status the provider said to retry (x-should-retry).
        s => format!("HTTP {s}"),
    }
}

fn header<'h>(headers: &'h ureq::http::HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The wait a reply asks for: `retry-after-ms`, else `retry-after` in
/// seconds or as an HTTP date; capped at `MAX_WAIT`. None when it asks for
/// nothing usable (then our own backoff applies).
fn asked_wait(headers: &ureq::http::HeaderMap) -> Option<Duration> {
    let ms = header(headers, "retry-after-ms")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
        .map(|ms| Duration::from_secs_f64(ms.min(MAX_WAIT.as_millis() as f64) / 1000.0));
    ms.or_else(|| header(headers, "retry-after").and_then(retry_after))
        .map(|d| d.min(MAX_WAIT))
}

/// `retry-after`: seconds (fractions allowed) or an IMF-fixdate.
fn retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::from_secs_f64(secs.min(MAX_WAIT.as_secs_f64())));
    }
    let when = http_date(value)?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(when.saturating_sub(now)))
}

/// Seconds since the epoch of an HTTP date (`Wed, 21 Oct 2015 07:28:00 GMT`).
fn http_date(value: &str) -> Option<u64> {
    let mut words = value.split_whitespace().skip(1);
    let day: u64 = words.next()?.parse().ok()?;
    let month = words.next()?;
    let year: i64 = words.next()?.parse().ok()?;
    let mut clock = words.next()?.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, s) = (clock.next()??, clock.next()??, clock.next()??);
    if words.next()? != "GMT" || !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| *m == month)? as i64 + 1;
    // Days from 1970-01-01 to the date (Howard Hinnant's days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days)
        .ok()
        .map(|d| d * 86_400 + h * 3600 + m * 60 + s)
}

/// The first wait: `IKIGAI_RETRY_BASE_MS` when set, else 500 ms.
fn base_wait() -> Duration {
    static BASE: OnceLock<Duration> = OnceLock::new();
    *BASE.get_or_init(|| {
        std::env::var("IKIGAI_RETRY_BASE_MS")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_millis)
            .unwrap_or(BASE_WAIT)
    })
}

/// Our own wait before retry `n` (1-based): the base doubled n-1 times, at
/// most `MAX_BACKOFF`, less up to a quarter at random.
fn backoff(n: u32) -> Duration {
    let full = base_wait()
        .saturating_mul(1 << (n - 1).min(16))
        .min(MAX_BACKOFF);
    let noise = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    // A cheap scramble of the clock's nanoseconds: spread, not secrecy.
    let unit = (noise.wrapping_mul(2_654_435_761) >> 8) as f64 / (1u32 << 24) as f64;
    full.mul_f64(1.0 - 0.25 * unit)
}

/// A wait as people read it: "4 s", "0.5 s".
fn seconds(wait: Duration) -> String {
    let s = wait.as_secs_f64();
    if s >= 10.0 || (s - s.round()).abs() < 0.05 {
        format!("{} s", s.round())
    } else {
        format!("{s:.1} s")
    }
}

/// Sleeps `wait`, or until the request is given up.
fn pause(wait: Duration) -> Result<(), ModelError> {
    let end = Instant::now() + wait;
    loop {
        if stopped() {
            return Err(ModelError::Cancelled);
        }
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        std::thread::sleep(left.min(Duration::from_millis(20)));
    }
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
        ModelError::Broken(m) => ModelError::Broken(clean(m)),
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
///
/// A server that cuts its text into events by UTF-16 units may end one
/// event with the first half of a surrogate pair (`\uD83D`) and begin the
/// next with the second, which no JSON parser accepts alone. Such halves
/// are kept as their escape text (`\\uD83D`): inside tool-call arguments,
/// which are JSON text themselves, the two halves meet again as one escape
/// when the pieces are joined and parsed.
pub fn event_json(provider: &str, data: &str) -> Result<Value, ModelError> {
    serde_json::from_str(data)
        .or_else(|e| match escape_lone_surrogates(data) {
            Some(fixed) => serde_json::from_str(&fixed).map_err(|_| e),
            None => Err(e),
        })
        .map_err(|e| {
            ModelError::Malformed(format!(
                "{provider} sent an event that is not JSON ({e}): {}",
                shorten(data, 200)
            ))
        })
}

/// `data` with every `\uXXXX` escape of an unpaired surrogate escaped once
/// more, or None when there is none.
fn escape_lone_surrogates(data: &str) -> Option<String> {
    let bytes = data.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        let hex = data.get(at + 2..at + 6)?;
        (bytes.get(at) == Some(&b'\\') && bytes.get(at + 1) == Some(&b'u'))
            .then(|| u16::from_str_radix(hex, 16).ok())
            .flatten()
    };
    let mut out = String::with_capacity(data.len() + 8);
    let mut changed = false;
    let mut i = 0;
    let mut last = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        let Some(u) = unit(i) else {
            // Any other escape, an escaped backslash among them: skipped whole.
            i += 2;
            continue;
        };
        let high = (0xD800..0xDC00).contains(&u);
        let low = (0xDC00..0xE000).contains(&u);
        let paired = high && unit(i + 6).is_some_and(|n| (0xDC00..0xE000).contains(&n));
        if paired {
            i += 12;
            continue;
        }
        if high || low {
            out.push_str(&data[last..i]);
            out.push('\\');
            last = i;
            changed = true;
        }
        i += 6;
    }
    out.push_str(&data[last..]);
    changed.then_some(out)
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
        let result = post(&url, &[], &serde_json::json!({}), &mut |_| {
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
    fn a_broken_stream_is_tried_again_only_while_nothing_was_shown() {
        fn no_wait(_: u32) -> Duration {
            Duration::ZERO
        }
        let mut attempts = 0;
        let mut seen = String::new();
        let result = retrying_broken(
            &mut |t| seen += t,
            |_| {
                attempts += 1;
                if attempts < 3 {
                    Err(ModelError::Broken("lost".into()))
                } else {
                    Ok(attempts)
                }
            },
            no_wait,
        );
        assert_eq!(result, Ok(3));

        let mut attempts = 0;
        let result: Result<(), _> = retrying_broken(
            &mut |t| seen += t,
            |on_text| {
                attempts += 1;
                on_text("Half");
                Err(ModelError::Broken("lost".into()))
            },
            no_wait,
        );
        assert_eq!(result, Err(ModelError::Broken("lost".into())));
        assert_eq!((attempts, seen.as_str()), (1, "Half"));

        let mut attempts = 0;
        let result: Result<(), _> = retrying_broken(
            &mut |_| {},
            |_| {
                attempts += 1;
                Err(ModelError::Broken("lost".into()))
            },
            no_wait,
        );
        assert_eq!(
            result,
            Err(ModelError::Broken("lost (gave up after 4 retries)".into()))
        );
        assert_eq!(attempts, 5);
    }

    #[test]
    fn waits_asked_for_in_every_form() {
        let headers = |pairs: &[(&'static str, &str)]| {
            let mut map = ureq::http::HeaderMap::new();
            for (k, v) in pairs {
                map.insert(*k, v.parse().unwrap());
            }
            map
        };
        let ms = |d: Option<Duration>| d.map(|d| d.as_millis());
        assert_eq!(
            ms(asked_wait(&headers(&[("retry-after-ms", "250")]))),
            Some(250)
        );
        assert_eq!(
            ms(asked_wait(&headers(&[
                ("retry-after-ms", "40"),
                ("retry-after", "9")
            ]))),
            Some(40)
        );
        assert_eq!(
            ms(asked_wait(&headers(&[("retry-after", "2")]))),
            Some(2000)
        );
        assert_eq!(
            ms(asked_wait(&headers(&[("retry-after", "3600")]))),
            Some(60_000)
        );
        assert_eq!(ms(asked_wait(&headers(&[("retry-after", "soon")]))), None);
        assert_eq!(ms(asked_wait(&headers(&[]))), None);
        assert_eq!(
            http_date("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(1_445_412_480)
        );
        assert_eq!(http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(http_date("Wed, 21 Oct 2015 07:28:00 PST"), None);
        // A date in the past asks for no wait.
        assert_eq!(ms(retry_after("Thu, 01 Jan 1970 00:00:00 GMT")), Some(0));
    }

    #[test]
    fn backoff_doubles_with_jitter_and_reads_as_seconds() {
        for n in 1..=4 {
            let full = base_wait() * (1 << (n - 1));
            let wait = backoff(n);
            assert!(wait <= full && wait >= full.mul_f64(0.75), "{n}: {wait:?}");
        }
        assert!(backoff(30) <= MAX_BACKOFF);
        assert_eq!(seconds(Duration::from_millis(500)), "0.5 s");
        assert_eq!(seconds(Duration::from_secs(4)), "4 s");
        assert_eq!(seconds(Duration::from_millis(3_960)), "4 s");
        assert_eq!(seconds(Duration::from_millis(12_400)), "12 s");
        assert_eq!(reason(429), "rate limited");
        assert_eq!(reason(502), "server error 502");
        assert_eq!(reason(400), "HTTP 400");
    }

    #[test]
    fn lone_surrogates_become_text_pairs_stay() {
        assert_eq!(escape_lone_surrogates(r#"{"a":"\uD83D\uDE00"}"#), None);
        assert_eq!(
            escape_lone_surrogates(r#"{"a":"x\uD83D"}"#).as_deref(),
            Some(r#"{"a":"x\\uD83D"}"#)
        );
        assert_eq!(
            escape_lone_surrogates(r#"{"a":"\uDE00y"}"#).as_deref(),
            Some(r#"{"a":"\\uDE00y"}"#)
        );
        // An escaped backslash before `u` is text, not an escape.
        assert_eq!(escape_lone_surrogates(r#"{"a":"\\uD83D"}"#), None);
        assert!(event_json("p", r#"{"a":"\uD83D"}"#).is_ok());
        assert!(event_json("p", r#"{"a":"#).is_err());
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
