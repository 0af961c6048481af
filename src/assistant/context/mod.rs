//! What the model is given besides the conversation, and how the whole is
//! kept within its window: the system prompt (`prompt`: guidance,
//! `environment`, project `instructions`, context modules), the model's
//! `window`, and `compaction` when the conversation outgrows it. The
//! conversation asks this room what to send; prompt caching (decision 63)
//! rests on what is built here staying the same bytes from one request to
//! the next.

pub mod compaction;
pub mod environment;
pub mod instructions;
pub mod prompt;
pub mod window;

use std::path::{Path, PathBuf};

use self::environment::Environment;
use self::instructions::Instructions;
use self::prompt::Prompt;
use self::window::{estimate, Window};
use super::custom::{self, commands::Commands, skills::Skills, Places};

/// What the system prompt is built from.
#[derive(Clone, Debug, Default)]
pub struct Setup {
    pub cwd: PathBuf,
    pub shell: Option<String>,
    /// The sandbox as the environment block states it.
    pub sandbox: String,
    /// The approval mode as the environment block states it.
    pub approval: String,
    /// `provider model`, or that none is configured.
    pub model: String,
    /// The person's own instructions file (docs/instructions.md).
    pub personal: Option<PathBuf>,
    pub instructions_max_bytes: usize,
    /// The context modules' directory (`~/.ikigai/context`).
    pub modules: Option<PathBuf>,
    /// The environment a resumed session's prompt stated: the prompt states
    /// it again, and the conversation notes what has changed since.
    pub stated: Option<Environment>,
    /// The fence git runs in for the environment block's facts (None: git
    /// is not run).
    pub git: Option<crate::host::call::ReadOnly>,
    /// Where skills and commands are looked for (none: not looked for).
    pub places: Option<Places>,
}

/// The system prompt of a session and what it holds.
#[derive(Clone, Debug, Default)]
pub struct Context {
    pub prompt: Prompt,
    /// The environment as the prompt states it.
    pub environment: Environment,
    /// The environment as it is now (the same, unless resumed).
    pub current: Environment,
    pub instructions: Instructions,
    /// The skills the prompt names (decision 85).
    pub skills: Skills,
    /// The person's and the trusted project's slash commands (decision 84).
    pub commands: Commands,
}

impl Context {
    /// Builds the prompt for `setup`; the warnings are for the person
    /// (instruction files cut or left out, unreadable context modules).
    pub fn build(setup: &Setup) -> (Context, Vec<String>) {
        let current = Environment::here(
            &setup.cwd,
            setup.shell.as_deref(),
            setup.sandbox.clone(),
            setup.approval.clone(),
            setup.model.clone(),
            setup.git.as_ref(),
        );
        let instructions = instructions::read(
            setup.personal.as_deref(),
            &setup.cwd,
            setup.instructions_max_bytes,
        );
        let (modules, mut warnings) = prompt::modules(setup.modules.as_deref());
        warnings.splice(0..0, instructions.warnings.iter().cloned());
        let (skills, commands) = match &setup.places {
            Some(places) => {
                let (skills, skipped) = custom::skills::load(places);
                let (commands, passed) = custom::commands::load(places);
                warnings.extend(skipped.iter().chain(&passed).map(|w| w.to_string()));
                (skills, commands)
            }
            None => Default::default(),
        };
        let environment = setup.stated.clone().unwrap_or_else(|| current.clone());
        let prompt = prompt::assemble(
            &environment.block(),
            &instructions.text,
            &skills.section,
            &modules,
        );
        (
            Context {
                prompt,
                environment,
                current,
                instructions,
                skills,
                commands,
            },
            warnings,
        )
    }

    /// A prompt of `text` alone, for tests of the loop.
    #[cfg(test)]
    pub fn plain(text: &str) -> Context {
        Context {
            prompt: Prompt {
                text: text.to_string(),
                parts: vec![prompt::Part {
                    name: "prompt".into(),
                    bytes: text.len(),
                }],
            },
            ..Context::default()
        }
    }

    pub fn system(&self) -> &str {
        &self.prompt.text
    }

    /// The instruction files read, for the start line (each path and
    /// size), or None when there were none.
    pub fn files_line(&self, cwd: &Path) -> Option<String> {
        let files = &self.instructions.files;
        (!files.is_empty()).then(|| {
            let names: Vec<String> = files
                .iter()
                .map(|f| {
                    let shown = f.path.strip_prefix(cwd).unwrap_or(&f.path);
                    format!("{} ({})", shown.display(), size(f.bytes))
                })
                .collect();
            format!("Instructions: {}", names.join(", "))
        })
    }

    /// The `/context` text: each part of the prompt and each instruction
    /// file with its size and tokens, then the conversation and the window.
    pub fn report(&self, conversation_tokens: u64, window: &Window, measured: bool) -> String {
        let mut lines = vec!["System prompt:".to_string()];
        for part in &self.prompt.parts {
            lines.push(format!(
                "  {:<40} {:>9}  ~{} tokens",
                part.name,
                size(part.bytes as u64),
                count(estimate(part.bytes))
            ));
        }
        if !self.instructions.files.is_empty() {
            lines.push("Project instructions:".into());
            for f in &self.instructions.files {
                let cut = if (f.kept as u64) < f.bytes {
                    format!(", cut to {}", size(f.kept as u64))
                } else {
                    String::new()
                };
                lines.push(format!(
                    "  {} ({}{cut}, ~{} tokens)",
                    f.path.display(),
                    size(f.bytes),
                    count(estimate(f.kept))
                ));
            }
        }
        let prompt_tokens = estimate(self.prompt.text.len());
        lines.push(format!("Prompt in all: ~{} tokens", count(prompt_tokens)));
        let how = if measured {
            "as the provider counted the last request"
        } else {
            "estimated"
        };
        let auto = match window.threshold() {
            Some(t) => format!("compacts at {} tokens", count(t)),
            None => "auto_compact is off".into(),
        };
        lines.push(format!(
            "Context window: {} of {} tokens in use ({how}); {auto}.",
            count(conversation_tokens),
            count(window.tokens),
        ));
        lines.join("\n")
    }
}

/// `1.2 KB`, `340 B`.
fn size(bytes: u64) -> String {
    match bytes {
        0..1000 => format!("{bytes} B"),
        1000..1_000_000 => format!("{:.1} KB", bytes as f64 / 1e3),
        _ => format!("{:.1} MB", bytes as f64 / 1e6),
    }
}

/// `12,345`.
fn count(n: u64) -> String {
    super::cost::count(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_holds_guidance_environment_and_instructions_in_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(instructions::FILE), "Run make test.").unwrap();
        let (context, warnings) = Context::build(&Setup {
            cwd: dir.path().to_path_buf(),
            shell: Some("/bin/zsh".into()),
            sandbox: "read-only".into(),
            approval: "ask".into(),
            model: "openai gpt-4.1".into(),
            instructions_max_bytes: instructions::DEFAULT_MAX_BYTES,
            ..Setup::default()
        });
        assert!(warnings.is_empty());
        let text = context.system();
        let at = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s}: {text}"));
        assert!(at("You are ikigai") < at("# Environment"));
        assert!(at("- Shell: /bin/zsh") < at("# Project instructions"));
        assert!(at("# Project instructions") < at("Run make test."));
        assert_eq!(
            context.files_line(dir.path()).unwrap(),
            format!("Instructions: {} (14 B)", instructions::FILE)
        );
        let report = context.report(1234, &Window::of("gpt-4o", None, None), true);
        assert!(report.contains("built-in guidance"), "{report}");
        assert!(
            report.contains(&format!("{} (14 B, ~4 tokens)", instructions::FILE)),
            "{report}"
        );
        assert!(
            report.contains("1,234 of 128,000 tokens in use"),
            "{report}"
        );
    }
}
