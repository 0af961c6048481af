//! Tokens and what they cost: the figures after each reply and behind
//! `/cost`. Token counts are the providers' own (`Usage` on each reply);
//! the price is known only for the models in `PRICES` (US dollars per
//! million tokens, as the providers list them), and no cost is shown for
//! any other model rather than a guess.

use super::model::Usage;

/// (model, input, output): dollars per million tokens.
const PRICES: &[(&str, f64, f64)] = &[
    ("gpt-4.1", 2.0, 8.0),
    ("gpt-4.1-mini", 0.4, 1.6),
    ("gpt-4.1-nano", 0.1, 0.4),
    ("gpt-4o", 2.5, 10.0),
    ("gpt-4o-mini", 0.15, 0.6),
    ("claude-sonnet-4-5", 3.0, 15.0),
    ("claude-sonnet-4-0", 3.0, 15.0),
    ("claude-haiku-4-5", 1.0, 5.0),
    ("claude-opus-4-1", 15.0, 75.0),
    ("gemini-2.5-flash", 0.3, 2.5),
    ("gemini-2.5-pro", 1.25, 10.0),
    ("gemini-2.5-flash-lite", 0.1, 0.4),
];

/// The price of `model` per million tokens, in and out. A dated name
/// (`claude-sonnet-4-5-20250929`) has the price of its family.
pub fn price(model: &str) -> Option<(f64, f64)> {
    PRICES
        .iter()
        .filter(|(name, ..)| {
            model == *name
                || model.strip_prefix(name).is_some_and(|rest| {
                    rest.starts_with('-')
                        && rest[1..].chars().all(|c| c.is_ascii_digit() || c == '-')
                })
        })
        .map(|&(_, input, output)| (input, output))
        .next()
}

/// What `usage` cost on `model`, when its price is known.
pub fn cost(model: &str, usage: Usage) -> Option<f64> {
    let (input, output) = price(model)?;
    Some((usage.input_tokens as f64 * input + usage.output_tokens as f64 * output) / 1e6)
}

/// The session's running totals.
#[derive(Debug, Default)]
pub struct Meter {
    pub total: Usage,
    /// The cost of the replies whose model has a price.
    pub cost: f64,
    /// Some replies came from a model without a known price.
    pub unpriced: bool,
}

impl Meter {
    /// Counts one turn's usage on `model`; returns that turn's cost.
    pub fn add(&mut self, model: &str, usage: Usage) -> Option<f64> {
        self.total.input_tokens += usage.input_tokens;
        self.total.output_tokens += usage.output_tokens;
        let cost = cost(model, usage);
        match cost {
            Some(c) => self.cost += c,
            None => self.unpriced = true,
        }
        cost
    }

    /// The `/cost` text.
    pub fn summary(&self, model: &str) -> String {
        let mut text = format!(
            "Tokens since start: {} in, {} out.",
            count(self.total.input_tokens),
            count(self.total.output_tokens)
        );
        if self.total == Usage::default() && self.cost == 0.0 {
            text = "No tokens used yet.".to_string();
        } else if self.unpriced && self.cost == 0.0 {
            text += " Cost unknown: no price is known for the model(s) used.";
        } else {
            text += &format!(" Cost: {}", dollars(self.cost));
            if self.unpriced {
                text += " (plus replies from models without a known price)";
            }
            text.push('.');
        }
        match price(model) {
            Some((i, o)) => text += &format!("\n{model}: ${i} in, ${o} out per million tokens."),
            None => text += &format!("\nNo price is known for {model}."),
        }
        text
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
    if amount >= 1.0 {
        format!("${amount:.2}")
    } else {
        format!("${amount:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_of_known_models_and_their_dated_names() {
        assert_eq!(price("gpt-4.1"), Some((2.0, 8.0)));
        assert_eq!(price("gpt-4.1-mini"), Some((0.4, 1.6)));
        assert_eq!(price("claude-sonnet-4-5-20250929"), Some((3.0, 15.0)));
        assert_eq!(price("gpt-4.1-turbo"), None);
        assert_eq!(price("stub"), None);
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
        };
        assert_eq!(cost("gpt-4.1", usage), Some(2.8));
    }

    #[test]
    fn meter_totals_and_summary() {
        let mut m = Meter::default();
        assert_eq!(
            m.summary("stub"),
            "No tokens used yet.\nNo price is known for stub."
        );
        let u = Usage {
            input_tokens: 1200,
            output_tokens: 300,
        };
        assert_eq!(m.add("gpt-4.1", u), Some(0.0048));
        assert_eq!(
            m.summary("gpt-4.1"),
            "Tokens since start: 1,200 in, 300 out. Cost: $0.0048.\n\
             gpt-4.1: $2 in, $8 out per million tokens."
        );
        assert_eq!(m.add("stub", u), None);
        assert!(m
            .summary("stub")
            .contains("plus replies from models without a known price"));
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(dollars(12.345), "$12.35");
    }
}
