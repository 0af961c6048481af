//! Random and mutated config files (see `crate::fuzzing`): never a panic,
//! every error names the file; and a file that is right but for one value
//! (of the wrong type, out of range, a key that does not exist) is refused
//! with the file, the line and the key of that value, wherever it stands.

use proptest::prelude::*;

use super::*;
use crate::fuzzing::config;

/// Each key, a right value, and values that are wrong for it.
const KEYS: &[(&str, &str, &[&str])] = &[
    ("provider", "\"openai\"", &["3", "true", "[1]", "{ a = 1 }"]),
    ("model", "\"m\"", &["3", "false", "1.5"]),
    ("sandbox", "\"read-only\"", &["\"nope\"", "1", "[\"off\"]"]),
    ("approval", "\"auto\"", &["\"sometimes\"", "2"]),
    ("network", "true", &["\"yes\"", "1", "[]"]),
    (
        "allow",
        "[\"bash(ls*)\"]",
        &["\"bash\"", "[1]", "3", "[[\"x\"]]"],
    ),
    ("deny", "[\"bash(rm *)\"]", &["\"bash\"", "[false]"]),
    ("add_dirs", "[\"/data\"]", &["\"/data\"", "[true]"]),
    (
        "model_output",
        "\"64K\"",
        &["0", "-5", "\"lots\"", "true", "1.5", "\"\""],
    ),
    (
        "max_output_tokens",
        "4096",
        &["0", "-1", "\"x\"", "99999999999", "2.5"],
    ),
];

fn path() -> &'static Path {
    Path::new("/home/u/.config/ikigai/config.toml")
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn random_text_never_panics_and_errors_name_the_file(
        text in prop_oneof![
            ".{0,80}",
            proptest::collection::vec(
                prop_oneof![
                    proptest::sample::select(KEYS).prop_map(|k| k.0.to_string()),
                    Just(" = ".to_string()), Just("\n".to_string()), Just("[tools.".to_string()),
                    Just("]".to_string()), Just("\"".to_string()), Just("[".to_string()),
                    "[a-z0-9 ,.{}=\"-]{0,6}",
                ],
                0..30,
            ).prop_map(|p| p.concat()),
        ],
    ) {
        if let Err(e) = parse(&text, path()) {
            prop_assert_eq!(&e.path, path());
            prop_assert!(e.to_string().starts_with(path().to_str().unwrap_or_default()));
        }
    }

    #[test]
    fn one_wrong_value_is_named_by_file_line_and_key(
        order in Just((0..KEYS.len()).collect::<Vec<_>>()).prop_shuffle(),
        wrong_key in 0..KEYS.len() + 2,
        wrong_value in any::<usize>(),
        blank_lines in proptest::collection::vec(0usize..3, KEYS.len()),
    ) {
        let mut text = String::new();
        let mut expected = None;
        for (&k, &blank) in order.iter().zip(&blank_lines) {
            text.push_str(&"\n".repeat(blank));
            let (key, right, wrongs) = KEYS[k];
            let value = if k == wrong_key { wrongs[wrong_value % wrongs.len()] } else { right };
            if k == wrong_key {
                expected = Some((key.to_string(), text.lines().count() + 1));
            }
            text.push_str(&format!("{key} = {value}\n"));
        }
        text.push_str("\n[tools.bash]\n");
        let line = text.lines().count() + 1;
        // Past the top-level keys: an unknown key in a tool's table, or a
        // wrong type there.
        match wrong_key.checked_sub(KEYS.len()) {
            Some(0) => {
                text.push_str("colour = 1\n");
                expected = Some(("tools.bash.colour".into(), line));
            }
            Some(_) => {
                text.push_str("env = [1]\n");
                expected = Some(("tools.bash.env".into(), line));
            }
            None => text.push_str("env = [\"GITHUB_TOKEN\"]\n"),
        }
        let (key, line) = expected.expect("one value is wrong");
        let e = parse(&text, path()).expect_err(&text);
        prop_assert_eq!(&e.path, path());
        prop_assert_eq!(e.key.as_deref(), Some(key.as_str()), "{}\n{}", e, text);
        prop_assert_eq!(e.line, Some(line), "{}\n{}", e, text);
    }
}
