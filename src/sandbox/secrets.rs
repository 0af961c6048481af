//! What a tool may see of the host's environment. The host holds the keys
//! of the model providers and perhaps other credentials; a tool that runs
//! `env` must not see them. So the environment a tool gets is the host's
//! minus every variable that looks like a secret by name, plus the few a
//! tool needs by name: the search tools their own keys, and whatever the
//! user passes to a tool on purpose (config `[tools.NAME] env`).

use std::ffi::{OsStr, OsString};

/// The provider keys, named in full (they match the words below too; the
/// list documents intent).
pub const PROVIDER_KEYS: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
];

/// A variable whose name contains one of these, in any case, is a secret.
const SECRET_WORDS: &[&str] = &[
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "AUTH",
];

/// Names that match the words but hold no secret: paths to an agent's
/// socket and to the X authority file, which programs need.
const NOT_SECRETS: &[&str] = &["SSH_AUTH_SOCK", "XAUTHORITY"];

/// The variables each of our tools needs by name.
const TOOL_NEEDS: &[(&str, &[&str])] = &[
    ("web_search_brave", &["BRAVE_API_KEY"]),
    (
        "web_search_google",
        &["GOOGLE_SEARCH_API_KEY", "GOOGLE_SEARCH_ENGINE_ID"],
    ),
];

/// Whether a variable of this name is kept from tools by default.
pub fn is_secret(name: &OsStr) -> bool {
    let name = name.to_string_lossy();
    if NOT_SECRETS.contains(&name.as_ref()) {
        return false;
    }
    let upper = name.to_ascii_uppercase();
    PROVIDER_KEYS.contains(&upper.as_str()) || SECRET_WORDS.iter().any(|w| upper.contains(w))
}

/// The environment for tool `tool`: `vars` without the secrets, except the
/// ones the tool needs and the ones in `pass` (named by the user for it).
pub fn tool_env<I>(vars: I, tool: &str, pass: &[String]) -> Vec<(OsString, OsString)>
where
    I: IntoIterator<Item = (OsString, OsString)>,
{
    let needs: &[&str] = TOOL_NEEDS
        .iter()
        .find(|(name, _)| *name == tool)
        .map_or(&[], |(_, vars)| vars);
    vars.into_iter()
        .filter(|(name, _)| {
            !is_secret(name)
                || needs.iter().any(|n| name == n)
                || pass.iter().any(|n| name == n.as_str())
        })
        .collect()
}

/// The environment for a process that is not a named tool call (a probe
/// for a schema): no secrets at all.
pub fn base_env<I>(vars: I) -> Vec<(OsString, OsString)>
where
    I: IntoIterator<Item = (OsString, OsString)>,
{
    tool_env(vars, "", &[])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(names: &[&str]) -> Vec<(OsString, OsString)> {
        names
            .iter()
            .map(|n| (OsString::from(n), OsString::from("v")))
            .collect()
    }

    fn names(env: Vec<(OsString, OsString)>) -> Vec<String> {
        env.into_iter()
            .map(|(n, _)| n.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn secrets_by_name_in_any_case() {
        for secret in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "GITHUB_TOKEN",
            "aws_secret_access_key",
            "PgPassword",
            "MYSQL_PASSWD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "NPM_AUTH",
            "oauth_client",
            "BRAVE_API_KEY",
        ] {
            assert!(is_secret(OsStr::new(secret)), "{secret}");
        }
        for plain in [
            "PATH",
            "HOME",
            "SSH_AUTH_SOCK",
            "XAUTHORITY",
            "GOOGLE_SEARCH_ENGINE_ID",
            "IKIGAI_MAX_OUTPUT",
            "LANG",
        ] {
            assert!(!is_secret(OsStr::new(plain)), "{plain}");
        }
    }

    #[test]
    fn each_tool_gets_its_own_keys_and_what_the_user_passes() {
        let all = vars(&[
            "PATH",
            "OPENAI_API_KEY",
            "BRAVE_API_KEY",
            "GOOGLE_SEARCH_API_KEY",
            "GOOGLE_SEARCH_ENGINE_ID",
            "GITHUB_TOKEN",
        ]);
        assert_eq!(
            names(tool_env(all.clone(), "bash", &[])),
            ["PATH", "GOOGLE_SEARCH_ENGINE_ID"]
        );
        assert_eq!(
            names(tool_env(all.clone(), "web_search_brave", &[])),
            ["PATH", "BRAVE_API_KEY", "GOOGLE_SEARCH_ENGINE_ID"]
        );
        assert_eq!(
            names(tool_env(all.clone(), "web_search_google", &[])),
            ["PATH", "GOOGLE_SEARCH_API_KEY", "GOOGLE_SEARCH_ENGINE_ID"]
        );
        assert_eq!(
            names(tool_env(all.clone(), "bash", &["GITHUB_TOKEN".into()])),
            ["PATH", "GOOGLE_SEARCH_ENGINE_ID", "GITHUB_TOKEN"]
        );
        assert_eq!(names(base_env(all)), ["PATH", "GOOGLE_SEARCH_ENGINE_ID"]);
    }
}
