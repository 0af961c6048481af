//! What the property tests of every parser that reads outside data share:
//! how many cases a run makes, and random JSON. Each parser's own `fuzz`
//! module (beside it) states what must hold of it on random and mutated
//! input: no panic, memory bounded, an error rather than a wrong success.
//!
//! `cargo test` makes a fixed, small number of cases per target, seconds in
//! all; `PROPTEST_CASES=N` asks every target for N instead (the long run,
//! README "Testing"). Failures are not written into the source tree
//! (proptest's default): each bug found gets a regression test of its own.

use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{Map, Value};

/// The config of a target: `cases` cases, unless `PROPTEST_CASES` says.
pub fn config(cases: u32) -> Config {
    let mut config = Config::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = cases;
    }
    config.failure_persistence = None;
    config
}

/// Short strings, often the words a parser looks for.
pub fn word(words: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(words).prop_map(str::to_string),
        1 => ".{0,12}",
    ]
}

/// Any JSON value, a few levels deep, its strings and keys often `words`.
pub fn json(words: &'static [&'static str]) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        (-3i64..300).prop_map(Value::from),
        word(words).prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((word(words), inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// `value` with one place in it replaced by `new` (a walk down from the
/// top, `path` choosing the member or item at each level).
pub fn mutate(value: &Value, path: &[usize], new: Value) -> Value {
    let mut value = value.clone();
    replace(&mut value, path, new);
    value
}

fn replace(at: &mut Value, path: &[usize], new: Value) {
    match (path.split_first(), at) {
        (Some((step, rest)), Value::Object(map)) if !map.is_empty() => {
            let n = map.len();
            if let Some((_, next)) = map.iter_mut().nth(step % n) {
                replace(next, rest, new);
            }
        }
        (Some((step, rest)), Value::Array(items)) if !items.is_empty() => {
            let n = items.len();
            replace(&mut items[step % n], rest, new);
        }
        (_, at) => *at = new,
    }
}

/// A stream of a provider's events: mostly `templates` (the shapes it
/// sends), some with one place changed to random JSON, some random whole.
pub fn events(
    templates: Vec<Value>,
    words: &'static [&'static str],
) -> impl Strategy<Value = Vec<Value>> {
    let one = (
        proptest::sample::select(templates),
        0..4u8,
        proptest::collection::vec(any::<usize>(), 0..5),
        json(words),
    )
        .prop_map(|(template, how, path, new)| match how {
            0 | 1 => template,
            2 => mutate(&template, &path, new),
            _ => new,
        });
    proptest::collection::vec(one, 0..12)
}
