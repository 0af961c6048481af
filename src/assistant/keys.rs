//! Which model to talk to, and with what key (docs/assistant.md, "Keys"): the
//! provider from `--provider` or `IKIGAI_PROVIDER`, else the first of
//! OpenAI, Anthropic, Google that has a key; keys from the environment
//! (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`), else from
//! `$XDG_CONFIG_HOME/ikigai/credentials.json` (`~/.config/...`); endpoints
//! from the variables of decision 12. Without a key the assistant still
//! runs: a message is answered with how to configure one. The reply limit
//! comes from `--max-output-tokens` or `IKIGAI_MAX_OUTPUT_TOKENS`, else from
//! what the model is known to allow (8192 for a model we do not know).
//! With no key and no provider configured, a local Ollama server is looked
//! for (decision 66) before the assistant gives up.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::model::ollama::{self, Ollama};
use super::model::responses::Responses;
use super::model::{anthropic::Anthropic, gemini::Gemini, openai::OpenAi, stub::Stub, ModelClient};
use crate::host::cli::parse_max_output_tokens;
use crate::tool::Env;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    OpenAi,
    /// OpenAI's Responses API: the same key and base URL as `OpenAi`.
    OpenAiResponses,
    Anthropic,
    Google,
    /// A local Ollama server: no key, the model from its list.
    Ollama,
    Stub,
}

/// The providers tried, in order, when none is chosen.
const BY_KEY: [Provider; 3] = [Provider::OpenAi, Provider::Anthropic, Provider::Google];

impl Provider {
    pub fn parse(name: &str) -> Option<Provider> {
        let name = crate::host::format::canonical_name(name);
        [
            Provider::OpenAi,
            Provider::OpenAiResponses,
            Provider::Anthropic,
            Provider::Google,
            Provider::Ollama,
            Provider::Stub,
        ]
        .into_iter()
        .find(|p| p.name() == name)
    }

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::OpenAiResponses => "openai-responses",
            Provider::Anthropic => "anthropic",
            Provider::Google => "google",
            Provider::Ollama => "ollama",
            Provider::Stub => "stub",
        }
    }

    /// The provider's key in credentials.json: the Responses API uses
    /// OpenAI's.
    fn key_name(self) -> &'static str {
        match self {
            Provider::OpenAiResponses => Provider::OpenAi.name(),
            other => other.name(),
        }
    }

    fn key_var(self) -> &'static str {
        match self {
            Provider::OpenAi | Provider::OpenAiResponses => "OPENAI_API_KEY",
            Provider::Anthropic => "ANTHROPIC_API_KEY",
            Provider::Google => "GEMINI_API_KEY",
            Provider::Ollama | Provider::Stub => "",
        }
    }

    fn default_model(self) -> &'static str {
        match self {
            Provider::OpenAi | Provider::OpenAiResponses => "gpt-4.1",
            Provider::Anthropic => "claude-sonnet-4-5",
            Provider::Google => "gemini-2.5-flash",
            // Never used: Ollama's model comes from its own list.
            Provider::Ollama => "",
            Provider::Stub => "stub",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The outcome of choosing: a client, or why there is none (shown when a
/// message is sent), plus warnings for the person (a broken credentials file).
pub struct Choice {
    pub client: Result<Arc<dyn ModelClient>, String>,
    pub warnings: Vec<String>,
    /// How the model was found when nobody named it (a local Ollama
    /// server's first model), for the start line.
    pub found: Option<String>,
}

/// The reply limit of models we know, by name prefix (the first match
/// counts, so longer prefixes come first): what each provider documents as
/// the model's most output tokens.
const KNOWN_LIMITS: &[(&str, u64)] = &[
    ("claude-opus-4-5", 64_000),
    ("claude-opus-4", 32_000),
    ("claude-sonnet-4", 64_000),
    ("claude-haiku-4", 64_000),
    ("claude-3-7-sonnet", 64_000),
    ("claude-3-5", 8_192),
    ("claude-3", 4_096),
    ("gpt-5", 128_000),
    ("gpt-4.1", 32_768),
    ("gpt-4o", 16_384),
    ("o1", 100_000),
    ("o3", 100_000),
    ("o4-mini", 100_000),
    ("gemini-3", 65_536),
    ("gemini-2.5", 65_536),
    ("gemini-2.0", 8_192),
    ("gemini-1.5", 8_192),
];

/// The reply limit when none is set for a model we do not know.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 8192;

/// The most output tokens `model` may write, as far as we know.
pub fn model_max_output_tokens(model: &str) -> u64 {
    // Providers may name a model under a folder (`models/gemini-2.5-pro`,
    // `openai/gpt-4.1` on a router).
    let name = model.rsplit('/').next().unwrap_or(model);
    KNOWN_LIMITS
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map_or(DEFAULT_MAX_OUTPUT_TOKENS, |(_, limit)| *limit)
}

/// Chooses the provider, model and reply limit. Err only for a provider
/// name that does not exist or a limit that is not a number (usage errors
/// the caller reports at once).
pub fn choose(
    provider: Option<&str>,
    model: Option<&str>,
    max_output_tokens: Option<u64>,
    env: &Env,
) -> Result<Choice, String> {
    let chosen = match provider.or_else(|| env.var("IKIGAI_PROVIDER")) {
        Some(name) => Some(Provider::parse(name).ok_or_else(|| {
            format!(
                "unknown provider '{name}' (choose openai, openai-responses, anthropic, google, ollama or stub)"
            )
        })?),
        None => None,
    };
    let max_output_tokens = match max_output_tokens {
        Some(n) => Some(n),
        None => match env.var("IKIGAI_MAX_OUTPUT_TOKENS") {
            Some(text) => Some(
                parse_max_output_tokens(text)
                    .map_err(|e| format!("IKIGAI_MAX_OUTPUT_TOKENS: {e}"))?,
            ),
            None => None,
        },
    };
    let path = crate::credentials::path(env);
    let mut warnings = Vec::new();
    let file = match read_credentials(env) {
        Ok(file) => file,
        Err(e) => {
            warnings.push(e);
            Value::Null
        }
    };
    let key_of = |p: Provider| -> Option<String> {
        env.var(p.key_var()).map(str::to_string).or_else(|| {
            file[p.key_name()]["api_key"]
                .as_str()
                .filter(|k| !k.is_empty())
                .map(str::to_string)
        })
    };
    // OPENAI_BASE_URL alone configures OpenAI: a local compatible server
    // may want no key.
    let configured = |p: Provider| {
        key_of(p).is_some() || (p == Provider::OpenAi && env.var("OPENAI_BASE_URL").is_some())
    };
    let model = model.or_else(|| env.var("IKIGAI_MODEL"));
    let provider = match chosen.or_else(|| BY_KEY.into_iter().find(|p| configured(*p))) {
        Some(Provider::Ollama) => {
            let (client, found) = local(model, max_output_tokens, env, true);
            return Ok(Choice {
                client,
                warnings,
                found,
            });
        }
        Some(p) => p,
        None => {
            // Decision 66: nothing configured, so a local server, if one
            // answers, rather than a message that cannot be sent.
            let (client, found) = local(model, max_output_tokens, env, false);
            return Ok(Choice {
                client: client.map_err(|why| {
                    format!(
                        "{} A local model server was looked for too: {why}.",
                        no_key_at_all(path.as_ref())
                    )
                }),
                warnings,
                found,
            });
        }
    };
    let model = model.unwrap_or(provider.default_model());
    let key = key_of(provider);
    let limit = max_output_tokens.unwrap_or_else(|| model_max_output_tokens(model));
    let client: Result<Arc<dyn ModelClient>, String> = match (provider, key) {
        (Provider::Stub, _) => Ok(Arc::new(Stub)),
        (Provider::OpenAi | Provider::OpenAiResponses, key) => {
            let base = env.var("OPENAI_BASE_URL");
            match (key, base) {
                // A local server that speaks the API may want no key.
                (None, None) => Err(no_key(provider, path.as_ref())),
                (key, base) => {
                    let base = base.unwrap_or(super::model::openai::DEFAULT_BASE_URL);
                    if provider == Provider::OpenAi {
                        Ok(Arc::new(OpenAi::new(base, key, model, limit)))
                    } else {
                        Ok(Arc::new(Responses::new(base, key, model, limit)))
                    }
                }
            }
        }
        (Provider::Anthropic, Some(key)) => Ok(Arc::new(Anthropic::new(
            env.var("ANTHROPIC_BASE_URL")
                .unwrap_or(super::model::anthropic::DEFAULT_BASE_URL),
            key,
            model,
            limit,
        ))),
        (Provider::Google, Some(key)) => Ok(Arc::new(Gemini::new(
            env.var("IKIGAI_GOOGLE_AI_URL")
                .unwrap_or(super::model::gemini::DEFAULT_BASE_URL),
            key,
            model,
            limit,
        ))),
        // Chosen above, with how its model was found; the same client.
        (Provider::Ollama, _) => local(Some(model), max_output_tokens, env, true).0,
        (_, None) => Err(no_key(provider, path.as_ref())),
    };
    Ok(Choice {
        client,
        warnings,
        found: None,
    })
}

/// The Ollama server of `OLLAMA_HOST` (decision 66), with `model` or the
/// first it lists, and how that was found when it was not asked for by
/// name (`asked`: `--provider ollama`).
fn local(
    model: Option<&str>,
    max_output_tokens: Option<u64>,
    env: &Env,
    asked: bool,
) -> (Result<Arc<dyn ModelClient>, String>, Option<String>) {
    let base = ollama::base_url(env.var("OLLAMA_HOST"));
    // Asked for by name with its model, the server is not asked first: a
    // request will say soon enough whether it is there.
    let listed = match model {
        Some(model) if asked => Ok(model.to_string()),
        Some(model) => ollama::models(&base).map(|_| model.to_string()),
        None => ollama::first_model(&base),
    };
    let chosen = match listed {
        Ok(chosen) => chosen,
        Err(why) => return (Err(why), None),
    };
    let how = match (asked, model.is_some()) {
        (true, true) => None,
        (true, false) => Some(format!(
            "ollama at {base}: {chosen}, the first model it lists"
        )),
        (false, _) => Some(format!(
            "no provider key is configured: using the Ollama server at {base}, model {chosen}"
        )),
    };
    let model = chosen;
    let limit = max_output_tokens.unwrap_or_else(|| model_max_output_tokens(&model));
    (Ok(Arc::new(Ollama::new(&base, &model, limit))), how)
}

/// The credentials file as JSON; a missing file is an empty one.
fn read_credentials(env: &Env) -> Result<Value, String> {
    match crate::credentials::read(env)? {
        None => Ok(Value::Null),
        Some((_, v)) if v.is_object() => Ok(v),
        Some((path, _)) => Err(format!(
            "credentials file {} is not a JSON object; ignored",
            path.display()
        )),
    }
}

fn shown(path: Option<&PathBuf>) -> String {
    path.map(|p| p.display().to_string())
        .unwrap_or_else(|| "~/.config/ikigai/credentials.json".into())
}

fn no_key_at_all(path: Option<&PathBuf>) -> String {
    format!(
        "No model is configured, so this message was not sent. Set OPENAI_API_KEY, \
         ANTHROPIC_API_KEY or GEMINI_API_KEY, or write {} as \
         {{\"openai\": {{\"api_key\": \"...\"}}}} (or \"anthropic\", \"google\"), then start \
         ikigai again. `ikigai --provider stub` answers offline. /tool and /refresh work without a key.",
        shown(path)
    )
}

fn no_key(provider: Provider, path: Option<&PathBuf>) -> String {
    format!(
        "No API key for {provider}, so this message was not sent. Set {} or add \
         {{\"{}\": {{\"api_key\": \"...\"}}}} to {}, then start ikigai again.",
        provider.key_var(),
        provider.key_name(),
        shown(path)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The environment of `pairs`; Ollama's address is one where nothing
    /// listens (port 1) unless a test names one, so no test depends on
    /// whether this machine runs Ollama.
    fn env(pairs: &[(&str, &str)]) -> Env {
        let nowhere = ("OLLAMA_HOST", "127.0.0.1:1");
        let given = pairs.iter().any(|(k, _)| *k == nowhere.0);
        Env::from_pairs(pairs.iter().copied().chain((!given).then_some(nowhere)))
    }

    fn provider_of(choice: &Choice) -> (&'static str, String) {
        let client = choice.client.as_ref().expect("a client");
        (client.provider(), client.model().to_string())
    }

    #[test]
    fn first_provider_with_a_key_wins_unless_chosen() {
        let e = env(&[
            ("HOME", "/nonexistent"),
            ("ANTHROPIC_API_KEY", "a"),
            ("GEMINI_API_KEY", "g"),
        ]);
        let c = choose(None, None, None, &e).unwrap();
        assert_eq!(provider_of(&c), ("anthropic", "claude-sonnet-4-5".into()));
        let c = choose(Some("google"), Some("gemini-x"), None, &e).unwrap();
        assert_eq!(provider_of(&c), ("google", "gemini-x".into()));
        let e = env(&[
            ("HOME", "/nonexistent"),
            ("GEMINI_API_KEY", "g"),
            ("IKIGAI_PROVIDER", "gemini"),
            ("IKIGAI_MODEL", "m"),
        ]);
        assert_eq!(
            provider_of(&choose(None, None, None, &e).unwrap()),
            ("google", "m".into())
        );
    }

    #[test]
    fn credentials_file_under_xdg_config_home() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ikigai")).unwrap();
        std::fs::write(
            dir.path().join("ikigai/credentials.json"),
            r#"{"google": {"api_key": "from-file"}}"#,
        )
        .unwrap();
        let xdg = dir.path().to_str().unwrap();
        let c = choose(
            None,
            None,
            None,
            &env(&[("HOME", "/nonexistent"), ("XDG_CONFIG_HOME", xdg)]),
        )
        .unwrap();
        assert_eq!(provider_of(&c).0, "google");
        assert!(c.warnings.is_empty());
        std::fs::write(dir.path().join("ikigai/credentials.json"), "{oops").unwrap();
        let c = choose(
            None,
            None,
            None,
            &env(&[("HOME", "/nonexistent"), ("XDG_CONFIG_HOME", xdg)]),
        )
        .unwrap();
        let file = dir.path().join("ikigai/credentials.json");
        assert!(
            c.warnings[0].starts_with(&format!(
                "credentials file {} is not valid JSON",
                file.display()
            )),
            "{:?}",
            c.warnings
        );
        assert!(c.client.is_err());
    }

    #[test]
    fn limits_from_the_option_the_environment_or_the_model() {
        assert_eq!(model_max_output_tokens("claude-sonnet-4-5"), 64_000);
        assert_eq!(model_max_output_tokens("claude-opus-4-1-20250805"), 32_000);
        assert_eq!(model_max_output_tokens("models/gemini-2.5-pro"), 65_536);
        assert_eq!(model_max_output_tokens("gpt-4.1-mini"), 32_768);
        assert_eq!(
            model_max_output_tokens("llama3.1:8b"),
            DEFAULT_MAX_OUTPUT_TOKENS
        );
        assert_eq!(parse_max_output_tokens(" 300 "), Ok(300));
        assert!(parse_max_output_tokens("0").is_err());
        assert!(parse_max_output_tokens("lots").is_err());
        let e = env(&[("HOME", "/h"), ("IKIGAI_MAX_OUTPUT_TOKENS", "many")]);
        let why = choose(Some("stub"), None, None, &e).err().unwrap();
        assert!(why.starts_with("IKIGAI_MAX_OUTPUT_TOKENS: "), "{why}");
        assert!(choose(Some("stub"), None, Some(5), &e).is_ok());
    }

    #[test]
    fn the_responses_api_uses_the_openai_key() {
        let e = env(&[("HOME", "/h"), ("OPENAI_API_KEY", "k")]);
        let c = choose(Some("openai-responses"), None, None, &e).unwrap();
        assert_eq!(provider_of(&c), ("openai-responses", "gpt-4.1".into()));
        let why = choose(
            Some("openai-responses"),
            None,
            None,
            &env(&[("HOME", "/h")]),
        )
        .unwrap()
        .client
        .err()
        .unwrap();
        assert!(
            why.contains("OPENAI_API_KEY") && why.contains("\"openai\""),
            "{why}"
        );
    }

    #[test]
    fn a_base_url_alone_chooses_openai() {
        let e = env(&[
            ("HOME", "/nonexistent"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1"),
            ("ANTHROPIC_API_KEY", "a"),
        ]);
        assert_eq!(
            provider_of(&choose(None, None, None, &e).unwrap()).0,
            "openai"
        );
    }

    fn c_without_ollama(e: &Env) -> String {
        choose(None, None, None, e).unwrap().client.err().unwrap()
    }

    #[test]
    fn ollama_by_name_takes_the_named_model_without_asking() {
        let e = env(&[("HOME", "/h"), ("OLLAMA_HOST", "127.0.0.1:1")]);
        let c = choose(Some("ollama"), Some("qwen3:4b"), None, &e).unwrap();
        assert_eq!(provider_of(&c), ("ollama", "qwen3:4b".into()));
        assert_eq!(c.found, None);
        // Without a model it must ask the server, which is not there.
        let why = choose(Some("ollama"), None, None, &e)
            .unwrap()
            .client
            .err()
            .unwrap();
        assert!(why.starts_with("no Ollama server answered"), "{why}");
    }

    #[test]
    fn missing_keys_explain_themselves() {
        let e = env(&[("HOME", "/h")]);
        let c = choose(None, None, None, &e).unwrap();
        let why = c.client.err().unwrap();
        assert!(
            why.contains("OPENAI_API_KEY") && why.contains("/h/.config/ikigai/credentials.json"),
            "{why}"
        );
        let why = choose(Some("anthropic"), None, None, &e)
            .unwrap()
            .client
            .err()
            .unwrap();
        assert!(
            why.starts_with("No API key for anthropic") && why.contains("ANTHROPIC_API_KEY"),
            "{why}"
        );
        assert!(choose(Some("nope"), None, None, &e).is_err());
        assert_eq!(
            provider_of(&choose(Some("stub"), None, None, &e).unwrap()).0,
            "stub"
        );
        let local = env(&[("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")]);
        let why = c_without_ollama(&e);
        assert!(
            why.contains("no Ollama server answered at http://127.0.0.1:1"),
            "{why}"
        );
        assert_eq!(
            provider_of(&choose(Some("openai"), None, None, &local).unwrap()).0,
            "openai"
        );
    }
}
