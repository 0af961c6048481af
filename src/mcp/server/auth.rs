//! Who may use the HTTP server (decision 73): a bearer token that every
//! request carries. It comes from `--token-file FILE`, else
//! `IKIGAI_MCP_TOKEN`, else it is made at start (256 random bits), shown
//! once on stderr and written, mode 0600, to
//! `$XDG_RUNTIME_DIR/ikigai/mcp-PORT.token` (else `~/.ikigai/`), where a
//! client on this machine can read it. `--no-auth` serves without one, on a
//! loopback address only. The token is compared in a time that does not
//! depend on how much of it a guess got right. The random IDs the HTTP
//! server hands out come from here too (`random_hex`).

use std::io::Write;
use std::os::unix::fs::PermissionsExt;

use std::path::{Path, PathBuf};

use crate::tool::Env;

/// The variable that gives the token.
pub const TOKEN_VAR: &str = "IKIGAI_MCP_TOKEN";

/// How requests are let in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// Every request must carry `Authorization: Bearer TOKEN`.
    Token(String),
    /// Anyone who can reach the address (loopback only).
    Open,
}

/// The token the options and the environment give, if any: `--token-file`
/// beats `IKIGAI_MCP_TOKEN` as options beat variables (decision 29).
pub fn given(token_file: Option<&Path>, env: &Env) -> Result<Option<String>, String> {
    if let Some(path) = token_file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read --token-file {}: {e}", path.display()))?;
        let token = text.trim();
        check(token).map_err(|why| format!("--token-file {}: {why}", path.display()))?;
        if let Ok(meta) = std::fs::metadata(path) {
            if meta.permissions().mode() & 0o077 != 0 {
                eprintln!(
                    "ikigai-tools mcp: warning: {} can be read by other users (chmod 600 it)",
                    path.display()
                );
            }
        }
        return Ok(Some(token.to_string()));
    }
    match env.var(TOKEN_VAR) {
        Some(value) => {
            let token = value.trim();
            check(token).map_err(|why| format!("{TOKEN_VAR}: {why}"))?;
            Ok(Some(token.to_string()))
        }
        None => Ok(None),
    }
}

/// A token must be worth the name and fit in a header.
fn check(token: &str) -> Result<(), String> {
    if token.len() < 16 {
        return Err("the token is shorter than 16 characters".into());
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("the token holds a space or a character that is not printable ASCII".into());
    }
    Ok(())
}

/// A new token: 256 random bits as hex.
pub fn make() -> String {
    random_hex(32)
}

/// `n` random bytes from the kernel, as hex: the token, and the HTTP
/// sessions' IDs, which must be as unguessable.
pub fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    let mut filled = 0;
    while filled < n {
        // SAFETY: getrandom writes at most the length it is given, here the
        // rest of the buffer.
        let got = unsafe { libc::getrandom(bytes[filled..].as_mut_ptr().cast(), n - filled, 0) };
        if got <= 0 {
            // Interrupted by a signal: again.
            std::thread::yield_now();
            continue;
        }
        filled += got as usize;
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where a made token is written: `$XDG_RUNTIME_DIR/ikigai/mcp-PORT.token`,
/// else `~/.ikigai/mcp-PORT.token`.
pub fn token_path(env: &Env, port: u16) -> Option<PathBuf> {
    let dir = match env.var("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(runtime) => PathBuf::from(runtime).join("ikigai"),
        None => env.home()?.join(".ikigai"),
    };
    Some(dir.join(format!("mcp-{port}.token")))
}

/// Writes `token` to `path`, mode 0600 in a 0700 directory of the host's
/// own (`host::files`), replacing what was there: a new file, never one
/// opened through a link.
pub fn save(path: &Path, token: &str) -> std::io::Result<()> {
    let dir = crate::host::files::Dir::own(path.parent().unwrap_or(Path::new("/")))?;
    let name = path.file_name().unwrap_or_default();
    dir.remove_file(name)?;
    dir.create_new(name, 0o600)?
        .write_all(format!("{token}\n").as_bytes())
}

/// Whether an `Authorization` header carries `token`, in a time that
/// depends only on the token's length.
pub fn allows(header: Option<&str>, token: &str) -> bool {
    let Some(header) = header else {
        return false;
    };
    let (scheme, given) = header.trim().split_once(' ').unwrap_or((header, ""));
    let scheme_ok = scheme.eq_ignore_ascii_case("bearer");
    scheme_ok & same(given.trim().as_bytes(), token.as_bytes())
}

/// Equal bytes, every byte of `expected` looked at whatever `given` holds.
fn same(given: &[u8], expected: &[u8]) -> bool {
    let mut diff = u8::from(given.len() != expected.len());
    for (i, e) in expected.iter().enumerate() {
        diff |= e ^ given.get(i).copied().unwrap_or(!e);
    }
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "0123456789abcdef0123";

    #[test]
    fn bearer_headers() {
        assert!(allows(Some(&format!("Bearer {T}")), T));
        assert!(allows(Some(&format!("bearer  {T} ")), T));
        for bad in [
            None,
            Some(String::new()),
            Some(T.to_string()),
            Some(format!("Basic {T}")),
            Some(format!("Bearer {T}x")),
            Some(format!("Bearer {}", &T[1..])),
            Some("Bearer 0123456789abcdef0124".into()),
            Some("Bearer".into()),
        ] {
            assert!(!allows(bad.as_deref(), T), "{bad:?}");
        }
        assert!(same(b"", b""));
        assert!(!same(b"a", b""));
        assert!(!same(b"", b"a"));
    }

    #[test]
    fn tokens_given_checked_and_made() {
        let env = |pairs: &[(&str, &str)]| Env::from_pairs(pairs.iter().copied());
        assert_eq!(given(None, &env(&[])), Ok(None));
        assert_eq!(
            given(None, &env(&[(TOKEN_VAR, &format!(" {T}\n"))])),
            Ok(Some(T.to_string()))
        );
        let e = given(None, &env(&[(TOKEN_VAR, "short")])).unwrap_err();
        assert!(e.contains(TOKEN_VAR) && e.contains("16"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t");
        std::fs::write(&file, format!("{T}\n")).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        // The file beats the variable.
        let both = env(&[(TOKEN_VAR, "zzzzzzzzzzzzzzzzzzzz")]);
        assert_eq!(given(Some(&file), &both), Ok(Some(T.to_string())));
        std::fs::write(&file, "has a space in it ......").unwrap();
        assert!(given(Some(&file), &both).unwrap_err().contains("space"));
        assert!(given(Some(&dir.path().join("none")), &both)
            .unwrap_err()
            .contains("cannot read --token-file"));
        let (a, b) = (make(), make());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(check(&a).is_ok());
    }

    #[test]
    fn made_tokens_are_saved_privately() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        let env = Env::from_pairs([("XDG_RUNTIME_DIR", run.to_str().unwrap())]);
        let path = token_path(&env, 8080).unwrap();
        assert_eq!(path, run.join("ikigai/mcp-8080.token"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        save(&path, T).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{T}\n"));
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        let home = Env::from_pairs([("HOME", "/h")]);
        assert_eq!(
            token_path(&home, 9),
            Some(PathBuf::from("/h/.ikigai/mcp-9.token"))
        );
    }
}
