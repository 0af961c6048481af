//! Tokens and what they cost: the figures after each reply and behind
//! `/cost`. Token counts are the providers' own (`Usage` on each reply);
//! the price is known only for the models in `PRICES` (US dollars per
//! million tokens, as the providers list them), and no cost is shown for
//! any other model rather than a guess. Input read from a provider's
//! prompt cache is priced at its cached rate, and input written to the
//! cache at its write rate (Anthropic's is above the plain one), so `/cost`
//! can say what caching saved (decision 63).

use super::model::Usage;

/// A model's rates, in dollars per million tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Price {
    pub input: f64,
    /// Input read from the cache.
    pub cached: f64,
    /// Input written to the cache.
    pub write: f64,
    pub output: f64,
}

const fn p(input: f64, cached: f64, write: f64, output: f64) -> Price {
    Price {
        input,
        cached,
        write,
        output,
    }
}

/// The models we name and their rates: OpenAI's cached input is a quarter
/// or half of the plain rate and writing costs nothing more; Anthropic
/// reads at a tenth and writes (5-minute cache) at 1.25 times; Gemini's
/// implicit cache reads at a quarter.
const PRICES: &[(&str, Price)] = &[
    ("gpt-4.1", p(2.0, 0.5, 2.0, 8.0)),
    ("gpt-4.1-mini", p(0.4, 0.1, 0.4, 1.6)),
    ("gpt-4.1-nano", p(0.1, 0.025, 0.1, 0.4)),
    ("gpt-4o", p(2.5, 1.25, 2.5, 10.0)),
    ("gpt-4o-mini", p(0.15, 0.075, 0.15, 0.6)),
    ("claude-sonnet-4-5", p(3.0, 0.3, 3.75, 15.0)),
    ("claude-sonnet-4-0", p(3.0, 0.3, 3.75, 15.0)),
    ("claude-haiku-4-5", p(1.0, 0.1, 1.25, 5.0)),
    ("claude-opus-4-1", p(15.0, 1.5, 18.75, 75.0)),
    ("gemini-2.5-flash", p(0.3, 0.075, 0.3, 2.5)),
    ("gemini-2.5-pro", p(1.25, 0.31, 1.25, 10.0)),
    ("gemini-2.5-flash-lite", p(0.1, 0.025, 0.1, 0.4)),
];

/// The rates of `model`. A dated name (`claude-sonnet-4-5-20250929`) has
/// the price of its family.
pub fn price(model: &str) -> Option<Price> {
    PRICES
        .iter()
        .filter(|(name, _)| {
            model == *name
                || model.strip_prefix(name).is_some_and(|rest| {
                    rest.starts_with('-')
                        && rest[1..].chars().all(|c| c.is_ascii_digit() || c == '-')
                })
        })
        .map(|&(_, price)| price)
        .next()
}

/// The input that was neither read from nor written to the cache.
fn uncached(usage: Usage) -> u64 {
    usage
        .input_tokens
        .saturating_sub(usage.cached_input_tokens + usage.cache_write_tokens)
}

/// What `usage` cost on `model`, when its price is known.
pub fn cost(model: &str, usage: Usage) -> Option<f64> {
    let p = price(model)?;
    Some(
        (uncached(usage) as f64 * p.input
            + usage.cached_input_tokens as f64 * p.cached
            + usage.cache_write_tokens as f64 * p.write
            + usage.output_tokens as f64 * p.output)
            / 1e6,
    )
}

/// What caching saved on `usage` against the same input uncached (less
/// when writes cost more than they saved), when the price is known.
pub fn saved(model: &str, usage: Usage) -> Option<f64> {
    let p = price(model)?;
    Some(
        (usage.cached_input_tokens as f64 * (p.input - p.cached)
            - usage.cache_write_tokens as f64 * (p.write - p.input))
            / 1e6,
    )
}

/// The session's running totals.
#[derive(Debug, Default)]
pub struct Meter {
    pub total: Usage,
    /// The cost of the replies whose model has a price.
    pub cost: f64,
    /// What caching saved on those replies.
    pub saved: f64,
    /// Some replies came from a model without a known price.
    pub unpriced: bool,
}

impl Meter {
    /// Counts one turn's usage on `model`; returns that turn's cost.
    pub fn add(&mut self, model: &str, usage: Usage) -> Option<f64> {
        let t = &mut self.total;
        t.input_tokens += usage.input_tokens;
        t.output_tokens += usage.output_tokens;
        t.cached_input_tokens += usage.cached_input_tokens;
        t.cache_write_tokens += usage.cache_write_tokens;
        let cost = cost(model, usage);
        match cost {
            Some(c) => {
                self.cost += c;
                self.saved += saved(model, usage).unwrap_or(0.0);
            }
            None => self.unpriced = true,
        }
        cost
    }

    /// The `/cost` text.
    pub fn summary(&self, model: &str) -> String {
        let t = self.total;
        let mut text = format!(
            "Tokens since start: {} in{}, {} out.",
            count(t.input_tokens),
            cached_words(t),
            count(t.output_tokens)
        );
        if t == Usage::default() && self.cost == 0.0 {
            text = "No tokens used yet.".to_string();
        } else if self.unpriced && self.cost == 0.0 {
            text += " Cost unknown: no price is known for the model(s) used.";
        } else {
            text += &format!(" Cost: {}", dollars(self.cost));
            if self.unpriced {
                text += " (plus replies from models without a known price)";
            }
            text.push('.');
            if t.cached_input_tokens > 0 || t.cache_write_tokens > 0 {
                let share = t.cached_input_tokens as f64 * 100.0 / t.input_tokens.max(1) as f64;
                text += &format!(
                    "\nPrompt caching: {share:.0}% of input read from the cache; it saved {} \
                     against the same input uncached.",
                    dollars(self.saved)
                );
            }
        }
        match price(model) {
            Some(p) => {
                text += &format!(
                    "\n{model}: ${} in (${} cached), ${} out per million tokens.",
                    p.input, p.cached, p.output
                )
            }
            None => text += &format!("\nNo price is known for {model}."),
        }
        text
    }
}

/// ` (900 cached)`, or nothing when no input came from the cache.
pub fn cached_words(usage: Usage) -> String {
    if usage.cached_input_tokens == 0 {
        String::new()
    } else {
        format!(" ({} cached)", count(usage.cached_input_tokens))
    }
}

/// `1234567` as `1,234,567`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Dollars, with enough places that a small cost is not shown as zero.
pub fn dollars(amount: f64) -> String {
    if amount.abs() >= 1.0 {
        format!("${amount:.2}")
    } else {
        format!("${amount:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64, cached: u64, write: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cached_input_tokens: cached,
            cache_write_tokens: write,
        }
    }

    #[test]
    fn prices_of_known_models_and_their_dated_names() {
        assert_eq!(
            price("gpt-4.1").map(|p| (p.input, p.output)),
            Some((2.0, 8.0))
        );
        assert_eq!(price("gpt-4.1-mini").map(|p| p.cached), Some(0.1));
        assert_eq!(
            price("claude-sonnet-4-5-20250929").map(|p| p.write),
            Some(3.75)
        );
        assert_eq!(price("gpt-4.1-turbo"), None);
        assert_eq!(price("stub"), None);
        assert_eq!(cost("gpt-4.1", usage(1_000_000, 100_000, 0, 0)), Some(2.8));
    }

    #[test]
    fn cached_input_is_priced_at_its_rates() {
        // 1M in, of which 900k read from the cache: 100k at $3, 900k at $0.3.
        let u = usage(1_000_000, 0, 900_000, 0);
        let c = cost("claude-sonnet-4-5", u).unwrap();
        assert!((c - 0.57).abs() < 1e-9, "{c}");
        assert!((saved("claude-sonnet-4-5", u).unwrap() - 2.43).abs() < 1e-9);
        // Writing costs Anthropic's extra quarter, and saves nothing yet.
        let w = usage(100_000, 0, 0, 100_000);
        assert!((cost("claude-sonnet-4-5", w).unwrap() - 0.375).abs() < 1e-9);
        assert!(saved("claude-sonnet-4-5", w).unwrap() < 0.0);
        assert_eq!(cost("x", u), None);
    }

    #[test]
    fn meter_totals_and_summary() {
        let mut m = Meter::default();
        assert_eq!(
            m.summary("stub"),
            "No tokens used yet.\nNo price is known for stub."
        );
        let u = usage(1200, 300, 0, 0);
        assert_eq!(m.add("gpt-4.1", u), Some(0.0048));
        assert_eq!(
            m.summary("gpt-4.1"),
            "Tokens since start: 1,200 in, 300 out. Cost: $0.0048.\n\
             gpt-4.1: $2 in ($0.5 cached), $8 out per million tokens."
        );
        m.add("gpt-4.1", usage(10_000, 0, 8_000, 0));
        let text = m.summary("gpt-4.1");
        assert!(text.contains("11,200 in (8,000 cached), 300 out"), "{text}");
        assert!(
            text.contains("Prompt caching: 71% of input read from the cache; it saved $0.0120"),
            "{text}"
        );
        assert_eq!(m.add("stub", u), None);
        assert!(m
            .summary("stub")
            .contains("plus replies from models without a known price"));
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(dollars(12.345), "$12.35");
        assert_eq!(cached_words(usage(5, 1, 3, 0)), " (3 cached)");
    }
}
