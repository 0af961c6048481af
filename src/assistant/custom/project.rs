//! A project's own `.ikigai/config.toml` put to work (decision 87): its
//! rules join the person's, each named by the project file's line; its
//! sandbox, network, approval and paths change the settings the tools run
//! with. `trust::narrowed` has already taken out what an untrusted project
//! may not widen; what is left here applies as written, a stricter setting
//! always, a looser one only where the person gave no option for it.

use crate::assistant::approval::rules::Rule;
use crate::assistant::approval::{Mode as Approval, Sourced};
use crate::assistant::Policy;
use crate::config::{ApprovalMode, Config};
use crate::host::settings::{self, Settings};
use crate::sandbox::Support;
use crate::tool::Env;

use super::trust::strictness;

/// What the person set on the command line or in the environment, which a
/// project's looser setting never overrides.
pub struct Given {
    pub sandbox: bool,
    pub approval: bool,
}

/// Applies `project` (the part of the project's config that holds) to the
/// settings and the policy; Err names a rule or path
/// of the project's file that is wrong.
pub fn apply(
    project: &Config,
    given: &Given,
    settings: &mut Settings,
    policy: &mut Policy,
    env: &Env,
) -> Result<(), String> {
    let file = project
        .path
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    for (rules, into) in [
        (&project.deny, &mut policy.deny),
        (&project.allow, &mut policy.allow),
    ] {
        for text in rules {
            let from = format!("{file}, line {}", text.line);
            let rule = Rule::parse(&text.value).map_err(|e| format!("{from}: {e}"))?;
            into.push(Sourced { rule, from });
        }
    }
    if let Some(mode) = project.sandbox {
        let current = settings.sandbox.mode;
        if strictness(mode) > strictness(current) || !given.sandbox {
            settings.sandbox.mode = mode;
            *settings = settings.clone().with_kernel_support(Support::detect());
        }
    }
    if let Some(network) = project.network {
        settings.sandbox.network = network;
    }
    match project.approval {
        Some(ApprovalMode::Ask) => policy.approval = Some(Approval::Ask),
        Some(ApprovalMode::Auto) if !given.approval => policy.approval = Some(Approval::Auto),
        _ => {}
    }
    settings::add_guard_paths(&mut settings.sandbox.guard, project, &[], &[], env)
        .map_err(|e| format!("{file}: {e}"))?;
    for dir in &project.add_dirs {
        let dir = settings::parse_dir(&dir.value.to_string_lossy())
            .map_err(|e| project.error("add_dirs", Some(dir.line), &e))?;
        settings.sandbox.add_dirs.push(dir);
    }
    for (tool, table) in &project.tools {
        settings
            .tool_env
            .entry(tool.clone())
            .or_default()
            .extend(table.env.iter().cloned());
    }
    Ok(())
}

/// The project's choices of model and limits over the person's config
/// file's (options and the environment still beat both).
pub fn choices(project: &Config, config: &mut Config) {
    macro_rules! over {
        ($($field:ident),*) => {$(
            if project.$field.is_some() {
                config.$field = project.$field.clone();
            }
        )*};
    }
    over!(
        provider,
        model,
        model_output,
        max_output_tokens,
        context_window,
        auto_compact,
        instructions_max_bytes
    );
}
