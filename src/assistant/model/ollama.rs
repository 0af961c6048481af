//! Ollama, a local model server (decision 66): its OpenAI-compatible
//! endpoint (`{OLLAMA_HOST}/v1/chat/completions`) spoken by the OpenAI
//! client, with no key, under the provider name `ollama`; and its own
//! `GET /api/tags`, which lists the models pulled on that machine, for
//! choosing one when none is named and for finding a server at all when no
//! provider key is configured. The address comes from `OLLAMA_HOST`, written
//! as Ollama itself accepts it (`127.0.0.1:11434`, `http://host:port`, a
//! bare host), by default `http://127.0.0.1:11434`.

use std::io::Read;
use std::time::Duration;

use serde_json::Value;

use super::openai::OpenAi;
use super::{ModelClient, ModelError, Reply, Request, ToolFormat};

/// Where Ollama listens unless `OLLAMA_HOST` says otherwise.
pub const DEFAULT_HOST: &str = "http://127.0.0.1:11434";
const DEFAULT_PORT: u16 = 11434;
/// The most of a `/api/tags` answer read: a list of names, never large.
const TAGS_LIMIT: u64 = 4 << 20;
/// A local server answers at once; one that does not is not there. This
/// bounds what the search costs a start without any key.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The server's base URL (scheme, host, port; no path) from the value of
/// `OLLAMA_HOST`, read as Ollama reads it: no scheme means http, no port
/// means 11434.
pub fn base_url(ollama_host: Option<&str>) -> String {
    let text = ollama_host.map(str::trim).unwrap_or("");
    if text.is_empty() {
        return DEFAULT_HOST.to_string();
    }
    let (scheme, rest) = match text.split_once("://") {
        Some((scheme, rest)) => (scheme.to_ascii_lowercase(), rest),
        None => ("http".to_string(), text),
    };
    let authority = rest.split('/').next().unwrap_or(rest);
    // A port follows the last colon, outside an IPv6 address's brackets.
    let has_port = match authority.rfind(':') {
        Some(colon) => !authority[colon..].contains(']'),
        None => false,
    };
    if has_port {
        format!("{scheme}://{authority}")
    } else {
        format!("{scheme}://{authority}:{DEFAULT_PORT}")
    }
}

/// The models the server at `base` lists, in its order. Err says what went
/// wrong in words (nothing listening, an error status, an answer that is not
/// Ollama's).
pub fn models(base: &str) -> Result<Vec<String>, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(PROBE_TIMEOUT))
        .build()
        .into();
    let url = format!("{base}/api/tags");
    let response = agent
        .get(&url)
        .call()
        .map_err(|e| format!("no Ollama server answered at {base} ({e})"))?;
    let status = response.status().as_u16();
    let mut body = Vec::new();
    response
        .into_body()
        .into_reader()
        .take(TAGS_LIMIT)
        .read_to_end(&mut body)
        .map_err(|e| format!("{url}: {e}"))?;
    if status != 200 {
        return Err(format!(
            "{url} answered HTTP {status}: {}",
            super::http::shorten(&String::from_utf8_lossy(&body), 200)
        ));
    }
    let tags: Value = serde_json::from_slice(&body)
        .map_err(|e| format!("{url} did not answer Ollama's model list ({e})"))?;
    let list = tags["models"]
        .as_array()
        .ok_or_else(|| format!("{url} did not answer Ollama's model list (no \"models\")"))?;
    Ok(list
        .iter()
        .filter_map(|m| m["name"].as_str().or_else(|| m["model"].as_str()))
        .map(str::to_string)
        .collect())
}

/// The first model the server at `base` lists; Err when it lists none or
/// cannot be asked.
pub fn first_model(base: &str) -> Result<String, String> {
    models(base)?.into_iter().next().ok_or_else(|| {
        format!("the Ollama server at {base} has no model yet (`ollama pull llama3.2` fetches one)")
    })
}

/// Ollama's OpenAI-compatible endpoint, named as Ollama.
pub struct Ollama(OpenAi);

impl Ollama {
    pub fn new(base: &str, model: &str, max_output_tokens: u64) -> Self {
        Ollama(OpenAi::new(
            &format!("{base}/v1"),
            None,
            model,
            max_output_tokens,
        ))
    }
}

impl ModelClient for Ollama {
    fn provider(&self) -> &'static str {
        "ollama"
    }
    fn model(&self) -> &str {
        self.0.model()
    }
    fn tool_format(&self) -> ToolFormat {
        self.0.tool_format()
    }
    fn max_output_tokens(&self) -> Option<u64> {
        self.0.max_output_tokens()
    }
    fn stream(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, ModelError> {
        self.0.stream(request, on_text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ollama_host_as_ollama_reads_it() {
        assert_eq!(base_url(None), "http://127.0.0.1:11434");
        assert_eq!(base_url(Some(" ")), "http://127.0.0.1:11434");
        assert_eq!(base_url(Some("127.0.0.1:9999")), "http://127.0.0.1:9999");
        assert_eq!(base_url(Some("gpu-box")), "http://gpu-box:11434");
        assert_eq!(
            base_url(Some("https://ollama.example/")),
            "https://ollama.example:11434"
        );
        assert_eq!(
            base_url(Some("HTTP://10.0.0.2:8080/api")),
            "http://10.0.0.2:8080"
        );
        assert_eq!(base_url(Some("[::1]")), "http://[::1]:11434");
        assert_eq!(base_url(Some("[::1]:5")), "http://[::1]:5");
    }

    #[test]
    fn nothing_listening_is_said_in_words() {
        // Port 1 on loopback: nothing listens there, the connection is refused.
        let why = first_model("http://127.0.0.1:1").unwrap_err();
        assert!(
            why.starts_with("no Ollama server answered at http://127.0.0.1:1"),
            "{why}"
        );
    }
}
