//! What `/help` adds of the custom commands and what `/skills` shows: each
//! by name, with where it came from, and every file not used with why.

use super::commands::Commands;
use super::skills::Skills;

/// The custom commands for `/help`, then the files skipped.
pub fn commands(commands: &Commands) -> String {
    let rows: Vec<(String, String)> = commands
        .menu()
        .into_iter()
        .zip(&commands.list)
        .map(|((name, description, hint), c)| {
            let usage = format!("/{name} {hint}").trim_end().to_string();
            (usage, format!("{description} ({})", c.origin.label()))
        })
        .collect();
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let mut text = String::from("Custom commands:");
    if rows.is_empty() {
        text += "\n  (none)";
    }
    for (usage, what) in rows {
        text += &format!("\n  {usage:width$}  {what}");
    }
    if !commands.skipped.is_empty() {
        text += "\nSkipped:";
        for (path, why) in &commands.skipped {
            text += &format!("\n  {}: {why}", path.display());
        }
    }
    text
}

/// `/skills`.
pub fn skills(skills: &Skills) -> String {
    if skills.skills.is_empty() {
        return "No skills found (folders holding SKILL.md in ~/.config/ikigai/skills, \
                ~/.claude/skills, ~/.codex/skills, or a trusted project's .ikigai/skills, \
                .claude/skills, .agents/skills)."
            .into();
    }
    let width = skills
        .skills
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(0);
    let mut text = format!("Skills ({}):", skills.skills.len());
    for skill in &skills.skills {
        let left = if skills.left_out.contains(&skill.name) {
            " [left out of the prompt: over its budget]"
        } else {
            ""
        };
        text += &format!(
            "\n  {:width$}  {} ({}){left}\n  {:width$}  {}",
            skill.name,
            crate::host::text::clip(&skill.description, 70),
            skill.origin.label(),
            "",
            skill.path.display()
        );
    }
    for (skill, by) in &skills.overridden {
        text += &format!(
            "\n  not used: {} (its name is taken by {})",
            skill.path.display(),
            by.display()
        );
    }
    text
}
