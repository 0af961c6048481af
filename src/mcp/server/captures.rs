//! Where the MCP server keeps the whole of an output it cut for the model
//! (decisions 25 and 73): `$XDG_RUNTIME_DIR/ikigai/mcp-outputs/` (else
//! `~/.ikigai/mcp-outputs/`), mode 0700, each file 0600 (they may hold
//! anything a command printed) and never overwritten. A server runs for
//! days: the directory keeps the newest `KEEP` files, the older ones going
//! as new ones come (decision 101), so it holds at most `KEEP` captures of
//! at most the capture cap each.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::tool::Env;

/// Captures kept in the directory.
pub const KEEP: usize = 200;

pub struct Captures {
    dir: Option<PathBuf>,
    /// Tells apart the captures of one millisecond.
    next: AtomicU64,
    /// One pruning at a time.
    pruning: Mutex<()>,
}

impl Captures {
    /// The captures of this user's servers.
    pub fn new(env: &Env) -> Captures {
        let dir = match env.var("XDG_RUNTIME_DIR") {
            Some(runtime) => Some(PathBuf::from(runtime).join("ikigai")),
            None => env.home().map(|h| h.join(".ikigai")),
        };
        Captures::at(dir.map(|d| d.join("mcp-outputs")))
    }

    pub fn at(dir: Option<PathBuf>) -> Captures {
        Captures {
            dir,
            next: AtomicU64::new(0),
            pruning: Mutex::new(()),
        }
    }

    /// Saves `bytes`, named after the call's tool and the output; returns
    /// the file's path.
    pub fn save(&self, tool: &str, what: &str, bytes: &[u8]) -> io::Result<PathBuf> {
        let dir = self
            .dir
            .as_deref()
            .ok_or_else(|| io::Error::other("no home directory to save it in"))?;
        let own = crate::host::files::Dir::own(dir)?;
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let tool: String = tool
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        let path = loop {
            let n = self.next.fetch_add(1, Ordering::SeqCst);
            // Zero-padded time first: names sort oldest first.
            let path = dir.join(format!(
                "{millis:015}-{}-{n}-{tool}.{what}",
                std::process::id()
            ));
            let name = path.file_name().unwrap_or_default();
            match own.create_new(name, 0o600) {
                Ok(mut file) => {
                    file.write_all(bytes)
                        .map_err(|e| crate::host::files::plain(e, dir, &path))?;
                    break path;
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        };
        self.prune(dir);
        Ok(path)
    }

    /// Removes all but the newest `KEEP` captures.
    fn prune(&self, dir: &Path) {
        let Ok(_one) = self.pruning.try_lock() else {
            // Another call prunes now; the next save catches up.
            return;
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut names: Vec<_> = entries.flatten().map(|e| e.file_name()).collect();
        if names.len() <= KEEP {
            return;
        }
        names.sort();
        for name in &names[..names.len() - KEEP] {
            let _ = std::fs::remove_file(dir.join(name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn private_named_and_bounded() {
        let root = tempfile::tempdir().unwrap();
        let captures = Captures::new(&Env::from_pairs([(
            "XDG_RUNTIME_DIR",
            root.path().to_str().unwrap(),
        )]));
        let a = captures.save("bash", "output.txt", b"one").unwrap();
        let b = captures.save("a/b", "output.txt", b"two").unwrap();
        assert_ne!(a, b);
        assert!(a.starts_with(root.path().join("ikigai/mcp-outputs")));
        assert!(b.to_str().unwrap().ends_with("-a_b.output.txt"), "{b:?}");
        assert_eq!(std::fs::read(&a).unwrap(), b"one");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&a), 0o600);
        assert_eq!(mode(a.parent().unwrap()), 0o700);
        let mut last = b;
        for _ in 0..KEEP + 10 {
            last = captures.save("t", "result.json", b"x").unwrap();
        }
        let left = std::fs::read_dir(a.parent().unwrap()).unwrap().count();
        assert_eq!(left, KEEP);
        assert!(!a.exists(), "the oldest went first");
        assert!(last.exists());
        assert!(Captures::at(None).save("t", "x", b"").is_err());
    }
}
