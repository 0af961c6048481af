//! Trust against real folders: what a project ships, the question and its
//! kept answer, a change asking again, a damaged trust file, and what an
//! untrusted project's config may still do.

use super::*;
use crate::config::Located;

struct World {
    _dir: tempfile::TempDir,
    places: Places,
    store: PathBuf,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let project = base.join("proj");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::create_dir_all(base.join("home")).unwrap();
    World {
        places: Places {
            home: Some(base.join("home")),
            config_dir: Some(base.join("home/.config/ikigai")),
            project,
            trusted: false,
            secret: vec![],
            readable: vec![],
        },
        store: base.join("home/.config/ikigai/trusted.toml"),
        _dir: dir,
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn shipping(w: &World) {
    let p = &w.places.project;
    write(
        &p.join(".ikigai/config.toml"),
        "deny = [\"bash(rm *)\"]\nallow = [\"bash\"]\nsandbox = \"off\"\n",
    );
    write(
        &p.join(".mcp.json"),
        r#"{"mcpServers": {"db": {"command": "npx", "args": ["-y", "db-server"]}}}"#,
    );
    write(&p.join(".claude/commands/review.md"), "Review.");
    write(
        &p.join(".agents/skills/pdf/SKILL.md"),
        "---\nname: pdf\ndescription: d\n---\n",
    );
    write(&p.join(".agents/skills/pdf/run.sh"), "echo");
}

#[test]
fn what_a_project_ships_is_found_and_digested() {
    let w = world();
    let empty = Project::find(&w.places).unwrap();
    assert!(!empty.ships_anything());
    shipping(&w);
    let p = Project::find(&w.places).unwrap();
    assert_eq!(p.servers, ["db: npx -y db-server"]);
    assert_eq!((p.commands, p.skills, p.agents), (1, 1, 0));
    assert_eq!(
        p.files.keys().collect::<Vec<_>>(),
        [
            ".agents/skills/pdf/SKILL.md",
            ".agents/skills/pdf/run.sh",
            ".claude/commands/review.md",
            ".ikigai/config.toml",
            ".mcp.json"
        ]
    );
    assert_eq!(p.config.as_ref().unwrap().deny[0].value, "bash(rm *)");
    assert!(p
        .summary()
        .contains(&"MCP server db: npx -y db-server".to_string()));
    // A project config that cannot be read stops the start, named.
    write(&w.places.project.join(".ikigai/config.toml"), "deny = 3\n");
    let e = Project::find(&w.places).unwrap_err();
    assert!(e.contains("config.toml, line 1, key 'deny'"), "{e}");
}

#[test]
fn hooks_are_listed_by_event_and_command() {
    let text = "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"./guard.sh\"\n\n\
                [[hooks.PostToolUse]]\ncommand = \"cargo fmt\"\n";
    assert_eq!(
        hooks(text),
        ["PostToolUse: cargo fmt", "PreToolUse: ./guard.sh"]
    );
    assert!(hooks("not toml [").is_empty());
}

#[test]
fn the_answer_is_asked_once_kept_and_asked_again_on_a_change() {
    let w = world();
    shipping(&w);
    let mut asked = Vec::new();
    let mut project = Project::find(&w.places).unwrap();
    // Nobody to ask: not trusted, and the start line says why.
    let line = decide(&mut project, Some(&w.store), false, None).unwrap();
    assert!(!project.trusted);
    assert!(
        line.contains("not loaded: the project is not trusted"),
        "{line}"
    );
    assert!(line.contains("--trust"), "{line}");
    // Asked: yes is kept.
    let mut yes = |q: &str| {
        asked.push(q.to_string());
        Some(true)
    };
    decide(&mut project, Some(&w.store), false, Some(&mut yes)).unwrap();
    assert!(project.trusted);
    assert!(
        asked[0].contains("MCP server db: npx -y db-server"),
        "{}",
        asked[0]
    );
    assert!(
        asked[0].contains("1 commands, 1 skills, 0 agents"),
        "{}",
        asked[0]
    );
    // The same files: trusted without a question.
    let mut again = Project::find(&w.places).unwrap();
    assert_eq!(decide(&mut again, Some(&w.store), false, None), None);
    assert!(again.trusted);
    // A pull adds a command and changes the MCP file: asked again.
    write(&w.places.project.join(".claude/commands/new.md"), "New.");
    write(
        &w.places.project.join(".mcp.json"),
        r#"{"mcpServers": {"db": {"command": "curl", "args": ["evil"]}}}"#,
    );
    let mut changed = Project::find(&w.places).unwrap();
    let mut question = String::new();
    let mut no = |q: &str| {
        question = q.to_string();
        Some(false)
    };
    decide(&mut changed, Some(&w.store), false, Some(&mut no));
    assert!(!changed.trusted);
    for line in [
        "changed since you answered",
        "added .claude/commands/new.md",
        "changed .mcp.json",
        "now: MCP server db: curl evil",
    ] {
        assert!(question.contains(line), "{line}: {question}");
    }
    // "No" is kept too: not asked again while nothing changes.
    let mut same = Project::find(&w.places).unwrap();
    let line = decide(&mut same, Some(&w.store), false, None).unwrap();
    assert!(
        !same.trusted && line.contains("you chose not to trust it"),
        "{line}"
    );
    // --trust trusts for the run, whatever was kept.
    let line = decide(&mut same, Some(&w.store), true, None).unwrap();
    assert!(
        same.trusted && line.contains("trusted for this run"),
        "{line}"
    );
}

#[test]
fn a_damaged_trust_file_trusts_nothing_and_asks() {
    let w = world();
    shipping(&w);
    let mut project = Project::find(&w.places).unwrap();
    decide(
        &mut project,
        Some(&w.store),
        false,
        Some(&mut |_: &str| Some(true)),
    );
    std::fs::write(&w.store, "[[project]]\nroot = \"x\"\ntrusted = tru").unwrap();
    let mut again = Project::find(&w.places).unwrap();
    let line = decide(&mut again, Some(&w.store), false, None).unwrap();
    assert!(!again.trusted, "{line}");
    let mut question = String::new();
    decide(
        &mut again,
        Some(&w.store),
        false,
        Some(&mut |q: &str| {
            question = q.to_string();
            Some(true)
        }),
    );
    assert!(
        question.starts_with("The trust file cannot be used"),
        "{question}"
    );
    assert!(again.trusted);
}

#[test]
fn an_untrusted_config_narrows_but_never_widens() {
    let config = Config {
        sandbox: Some(Mode::Off),
        network: Some(true),
        allow: vec![Located {
            value: "bash".into(),
            line: 1,
        }],
        deny: vec![Located {
            value: "bash(rm *)".into(),
            line: 2,
        }],
        deny_read: vec!["secrets".into()],
        approval: Some(ApprovalMode::Auto),
        model: Some("m".into()),
        ..Config::default()
    };
    let (kept, ignored) = narrowed(&config, false, Mode::WorkspaceWrite);
    assert_eq!(kept.sandbox, None);
    assert_eq!(kept.network, None);
    assert!(kept.allow.is_empty() && kept.model.is_none() && kept.approval.is_none());
    assert_eq!(kept.deny, config.deny);
    assert_eq!(kept.deny_read, config.deny_read);
    assert_eq!(
        ignored,
        [
            "sandbox",
            "allow",
            "network",
            "approval",
            "provider and model"
        ]
    );
    let strict = Config {
        sandbox: Some(Mode::ReadOnly),
        network: Some(false),
        approval: Some(ApprovalMode::Ask),
        ..Config::default()
    };
    let (kept, ignored) = narrowed(&strict, false, Mode::WorkspaceWrite);
    assert_eq!(kept.sandbox, Some(Mode::ReadOnly));
    assert_eq!(kept.network, Some(false));
    assert_eq!(kept.approval, Some(ApprovalMode::Ask));
    assert!(ignored.is_empty());
    assert_eq!(narrowed(&config, true, Mode::ReadOnly).0, config);
}
