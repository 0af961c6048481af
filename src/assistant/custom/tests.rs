//! The loader against real folders: precedence, trust, nesting, and every
//! file that must be passed over or cut.

use super::read::file_name as md;
use super::*;
use std::os::unix::fs::symlink;

struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let home = base.join("home");
        let project = base.join("proj");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(project.join(".git")).unwrap();
        World {
            _dir: dir,
            home,
            project,
        }
    }

    fn places(&self, trusted: bool) -> Places {
        Places {
            home: Some(self.home.clone()),
            config_dir: Some(self.home.join(".config/ikigai")),
            project: self.project.clone(),
            trusted,
            secret: vec![self.home.join(".ssh")],
            readable: vec![],
        }
    }

    fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn names(listing: &Listing) -> Vec<(String, Origin)> {
    listing
        .docs
        .iter()
        .map(|d| (d.name.clone(), d.origin))
        .collect()
}

#[test]
fn folders_come_in_precedence_order_and_the_project_only_when_trusted() {
    let w = World::new();
    let folders: Vec<Origin> = w
        .places(true)
        .folders(Kind::Skills)
        .into_iter()
        .map(|f| f.0)
        .collect();
    assert_eq!(
        folders,
        [
            Origin::Project,
            Origin::ClaudeProject,
            Origin::AgentsProject,
            Origin::Personal,
            Origin::ClaudeHome,
            Origin::CodexHome
        ]
    );
    let untrusted = w.places(false).folders(Kind::Commands);
    assert!(untrusted.iter().all(|(o, _)| !o.in_project()));
    assert_eq!(untrusted.last().unwrap().1, w.home.join(".codex/prompts"));
    // A project at the home directory: its .claude is the person's.
    let mut at_home = w.places(false);
    at_home.project = w.home.clone();
    let folders = at_home.all_folders(Kind::Agents);
    assert_eq!(
        folders
            .iter()
            .filter(|(_, f)| f == &w.home.join(".claude/agents"))
            .map(|f| f.0)
            .collect::<Vec<_>>(),
        [Origin::ClaudeHome]
    );
}

#[test]
fn commands_nest_the_project_wins_and_both_are_known() {
    let w = World::new();
    w.write(
        &w.home.join(".config/ikigai/commands").join(md("review")),
        "mine",
    );
    w.write(
        &w.home.join(".claude/commands/git").join(md("commit")),
        "---\ndescription: Commit\n---\nDo it",
    );
    w.write(
        &w.project.join(".ikigai/commands").join(md("review")),
        "theirs",
    );
    w.write(&w.home.join(".codex/prompts/notes.txt"), "not markdown");
    let listing = list(Kind::Commands, &w.places(true));
    assert_eq!(
        names(&listing),
        [
            ("git:commit".to_string(), Origin::ClaudeHome),
            ("review".to_string(), Origin::Project)
        ]
    );
    assert_eq!(
        listing.docs[0].field("description").as_deref(),
        Some("Commit")
    );
    assert_eq!(listing.docs[0].body, "Do it");
    assert_eq!(listing.docs[1].body, "theirs");
    assert_eq!(listing.overridden.len(), 1);
    assert_eq!(listing.overridden[0].0.origin, Origin::Personal);
    assert!(listing.warnings.is_empty(), "{:?}", listing.warnings);
    let untrusted = list(Kind::Commands, &w.places(false));
    assert_eq!(untrusted.docs[1].body, "mine");
    assert_eq!(count_in_project(Kind::Commands, &w.places(false)), 1);
}

#[test]
fn links_are_followed_only_within_the_folder_and_never_to_a_secret() {
    let w = World::new();
    let commands = w.project.join(".claude/commands");
    w.write(&commands.join(md("real")), "real");
    symlink(commands.join(md("real")), commands.join(md("alias"))).unwrap();
    w.write(&w.project.join(md("README")), "outside the folder");
    symlink(w.project.join(md("README")), commands.join(md("out"))).unwrap();
    w.write(&w.home.join(".ssh/id_rsa"), "KEY");
    let personal = w.home.join(".claude/commands");
    std::fs::create_dir_all(&personal).unwrap();
    symlink(w.home.join(".ssh/id_rsa"), personal.join(md("key"))).unwrap();
    symlink(w.home.join(".ssh"), personal.join("ssh")).unwrap();
    symlink(commands.join(md("loop")), commands.join(md("loop"))).unwrap();
    let listing = list(Kind::Commands, &w.places(true));
    assert_eq!(
        names(&listing),
        [
            ("alias".to_string(), Origin::ClaudeProject),
            ("real".to_string(), Origin::ClaudeProject)
        ]
    );
    let said: Vec<String> = listing.warnings.iter().map(|w| w.to_string()).collect();
    let about = |name: &str| {
        said.iter()
            .find(|s| s.contains(name))
            .unwrap_or_else(|| panic!("{name}: {said:?}"))
            .clone()
    };
    assert!(about("out.md").contains("outside"), "{said:?}");
    assert!(about("key.md").contains("outside"), "{said:?}");
    assert!(about("loop.md").contains("cannot resolve"), "{said:?}");
    // A personal folder that is itself a link to a secret is not read.
    std::fs::remove_dir_all(&personal).unwrap();
    symlink(w.home.join(".ssh"), &personal).unwrap();
    w.write(&w.home.join(".ssh/x.md"), "secret");
    let listing = list(Kind::Commands, &w.places(false));
    assert!(listing.docs.is_empty());
    assert!(
        listing.warnings[0].what.contains("a secret path"),
        "{:?}",
        listing.warnings
    );
    // A project folder that leads out of the project is not read.
    std::fs::remove_dir_all(&commands).unwrap();
    symlink(&w.home, &commands).unwrap();
    let listing = list(Kind::Commands, &w.places(true));
    assert!(listing
        .warnings
        .iter()
        .any(|w| w.what.contains("outside the project")));
}

#[test]
fn broken_front_matter_a_huge_body_and_odd_files_are_warnings() {
    let w = World::new();
    let dir = w.home.join(".config/ikigai/commands");
    w.write(
        &dir.join(md("broken")),
        "---\ndescription: \"open\n---\nbody",
    );
    w.write(&dir.join(md("huge")), &"x".repeat(5 << 20));
    std::fs::write(dir.join(md("binary")), b"\xff\xfe").unwrap();
    std::fs::create_dir_all(dir.join(md("folder"))).unwrap();
    let fifo = dir.join(md("pipe"));
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path and a mode; mkfifo touches nothing else.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let listing = list(Kind::Commands, &w.places(false));
    assert_eq!(names(&listing), [("huge".to_string(), Origin::Personal)]);
    assert_eq!(listing.docs[0].body.len(), read::MAX_BYTES);
    let said: Vec<String> = listing.warnings.iter().map(|w| w.to_string()).collect();
    assert!(
        said.iter().any(|s| s.contains(&format!(
            "{}: skipped: front matter, line 2, field 'description'",
            md("broken")
        ))),
        "{said:?}"
    );
    assert!(
        said.iter()
            .any(|s| s.contains(&format!("{}: cut to its first 256 KB", md("huge")))),
        "{said:?}"
    );
    assert!(
        said.iter()
            .any(|s| s.contains(&format!("{}: skipped: it is not UTF-8", md("binary")))),
        "{said:?}"
    );
    assert!(
        said.iter().any(|s| s.contains(&format!(
            "{}: skipped: it is not a regular file",
            md("pipe")
        ))),
        "{said:?}"
    );
}

#[test]
fn skills_are_folders_holding_skill_md() {
    let w = World::new();
    let skills = w.project.join(".agents/skills");
    w.write(
        &skills.join("pdf/SKILL.md"),
        "---\nname: pdf\ndescription: PDFs\n---\nSteps",
    );
    w.write(&skills.join("pdf/scripts/fill.py"), "print()");
    std::fs::create_dir_all(skills.join("empty")).unwrap();
    w.write(
        &w.home.join(".codex/skills/notes/SKILL.md"),
        "---\nname: notes\ndescription: n\n---\n",
    );
    let listing = list(Kind::Skills, &w.places(true));
    assert_eq!(
        names(&listing),
        [
            ("notes".to_string(), Origin::CodexHome),
            ("pdf".to_string(), Origin::AgentsProject)
        ]
    );
    assert_eq!(listing.docs[1].path, skills.join("pdf/SKILL.md"));
    assert_eq!(
        listing.docs[1].field("description").as_deref(),
        Some("PDFs")
    );
    assert_eq!(count_in_project(Kind::Skills, &w.places(false)), 1);
    assert_eq!(list(Kind::Skills, &w.places(false)).docs.len(), 1);
}

#[test]
fn list_fields_take_both_spellings() {
    let doc = |meta: Value| Doc {
        name: "x".into(),
        path: "/x".into(),
        origin: Origin::Personal,
        meta: meta.as_object().unwrap().clone(),
        body: String::new(),
    };
    let d = doc(
        serde_json::json!({"a": ["Read", "Grep"], "b": "Bash(git add:*), Read", "c": "Read Bash(git status *)", "n": 3}),
    );
    assert_eq!(d.list("a").unwrap(), ["Read", "Grep"]);
    assert_eq!(d.list("b").unwrap(), ["Bash(git add:*)", "Read"]);
    assert_eq!(d.list("c").unwrap(), ["Read", "Bash(git status *)"]);
    assert_eq!(d.field("n").as_deref(), Some("3"));
    assert_eq!(d.list("missing"), None);
}
