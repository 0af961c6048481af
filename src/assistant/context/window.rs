//! The context window (decision 62): how many tokens a model can read, when
//! the conversation must be made smaller before the next request, and how
//! a provider says that a request did not fit. Token counts are the
//! provider's own where it reports them; where it does not, a request's
//! bytes divided by four stand in (English and code average a little over
//! four bytes a token in the tokenizers of all three providers, so the
//! estimate errs towards compacting early).

use super::super::model::ModelError;

/// The window of a model the table does not know and config does not name.
pub const DEFAULT_WINDOW: u64 = 128_000;

/// The default fraction of the window at which the conversation compacts.
pub const DEFAULT_AUTO_COMPACT: f64 = 0.85;

/// The windows of the models we name, by name prefix (the first match
/// counts, so longer prefixes come first), as each provider documents them.
const KNOWN_WINDOWS: &[(&str, u64)] = &[
    // The offline stub provider reads whatever it is sent.
    ("stub", 1 << 40),
    ("claude-", 200_000),
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("gemini-3", 1_048_576),
    ("gemini-2.5", 1_048_576),
    ("gemini-2.0", 1_048_576),
    ("gemini-1.5-pro", 2_097_152),
    ("gemini-1.5", 1_048_576),
];

/// One model's window and the point at which to compact.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    pub tokens: u64,
    /// A fraction of `tokens`; 0 turns automatic compaction off.
    pub auto_compact: f64,
}

impl Window {
    /// The window of `model`: config's `context_window` when given, else
    /// the table's, else `DEFAULT_WINDOW`.
    pub fn of(model: &str, configured: Option<u64>, auto_compact: Option<f64>) -> Window {
        let name = model.rsplit('/').next().unwrap_or(model);
        let known = KNOWN_WINDOWS
            .iter()
            .find(|(prefix, _)| name.starts_with(prefix))
            .map(|(_, tokens)| *tokens);
        Window {
            tokens: configured.or(known).unwrap_or(DEFAULT_WINDOW).max(1),
            auto_compact: auto_compact.unwrap_or(DEFAULT_AUTO_COMPACT),
        }
    }

    /// The tokens at which the conversation compacts, or None when that is
    /// turned off.
    pub fn threshold(&self) -> Option<u64> {
        (self.auto_compact > 0.0).then_some((self.tokens as f64 * self.auto_compact) as u64)
    }

    /// What pruning must free for it to be enough: a fifth of the window.
    pub fn enough_freed(&self) -> u64 {
        self.tokens / 5
    }
}

/// The tokens `bytes` of request text come to, when no provider counted.
pub fn estimate(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// True when `error` is a provider saying the request did not fit its
/// context window: OpenAI's `context_length_exceeded`, Anthropic's
/// "prompt is too long", Gemini's 400 naming the input token count.
pub fn is_overflow(error: &ModelError) -> bool {
    let ModelError::Http { status, message } = error else {
        return false;
    };
    let text = message.to_ascii_lowercase();
    matches!(status, 400 | 413)
        && [
            "context_length_exceeded",
            "maximum context length",
            "prompt is too long",
            "input token count",
            "exceeds the maximum number of tokens",
            "too many tokens",
        ]
        .iter()
        .any(|sign| text.contains(sign))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_come_from_config_then_the_table_then_the_default() {
        assert_eq!(Window::of("claude-sonnet-4-5", None, None).tokens, 200_000);
        assert_eq!(Window::of("gpt-4.1-mini", None, None).tokens, 1_047_576);
        assert_eq!(
            Window::of("models/gemini-2.5-pro", None, None).tokens,
            1_048_576
        );
        assert_eq!(Window::of("llama3.2", None, None).tokens, DEFAULT_WINDOW);
        assert!(Window::of("stub", None, None).tokens > 1 << 39);
        let w = Window::of("gpt-4o", Some(32_000), Some(0.5));
        assert_eq!((w.tokens, w.threshold()), (32_000, Some(16_000)));
        assert_eq!(Window::of("x", None, None).threshold(), Some(108_800));
        assert_eq!(Window::of("x", None, Some(0.0)).threshold(), None);
        assert_eq!(Window::of("x", Some(32_000), None).enough_freed(), 6_400);
    }

    #[test]
    fn overflow_errors_of_each_provider_are_told_apart() {
        let http = |status, message: &str| ModelError::Http {
            status,
            message: message.into(),
        };
        assert!(is_overflow(&http(
            400,
            "This model's maximum context length is 128000 tokens (context_length_exceeded)"
        )));
        assert!(is_overflow(&http(
            400,
            "prompt is too long: 210000 tokens > 200000 maximum"
        )));
        assert!(is_overflow(&http(400, "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).")));
        assert!(!is_overflow(&http(400, "invalid model")));
        assert!(!is_overflow(&http(500, "prompt is too long")));
        assert!(!is_overflow(&ModelError::Network(
            "prompt is too long".into()
        )));
        assert_eq!(estimate(0), 0);
        assert_eq!(estimate(9), 3);
    }
}
