//! Skills (decision 85): folders of instructions in the Agent Skills
//! format. The system prompt names each skill, what it is for and where
//! its `SKILL.md` lies, and nothing more; the model reads the file when a
//! task calls for it. The section is held to a budget (100 tokens a skill,
//! 4,000 in all) and built once, in name order, so it is the same bytes on
//! every request of a session (decision 63).

use std::path::PathBuf;

use super::{Doc, Kind, Listing, Origin, Places, Warning};

/// The most tokens one skill's line may take.
pub const SKILL_TOKENS: u64 = 100;
/// The most tokens the whole section may take.
pub const SECTION_TOKENS: u64 = 4000;
/// Bytes counted as one token here. Paths and hyphenated names tokenize
/// densely (o200k: about 3.8 bytes a token in `bench/run.sh skills`, where
/// four bytes a token overran the budget by 5%), so the budget is kept at
/// three.
const BYTES_PER_TOKEN: usize = 3;
/// The longest name and description the format allows.
const NAME_MAX: usize = 64;
const DESCRIPTION_MAX: usize = 1024;

/// One usable skill.
#[derive(Clone, Debug, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// Its `SKILL.md`.
    pub path: PathBuf,
    pub origin: Origin,
}

/// The skills found and what the prompt says of them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Skills {
    pub skills: Vec<Skill>,
    /// The prompt's section (empty without skills).
    pub section: String,
    /// Skills the budget left out of the prompt, by name.
    pub left_out: Vec<String>,
    /// Skills of a name another one took, and the path of that one.
    pub overridden: Vec<(Skill, PathBuf)>,
}

/// Finds the skills in `places`, skipping (with a warning naming the file
/// and field) each whose front matter the format does not allow.
pub fn load(places: &Places) -> (Skills, Vec<Warning>) {
    let Listing {
        docs,
        overridden,
        mut warnings,
    } = super::list(Kind::Skills, places);
    let mut skills = Vec::new();
    for doc in docs {
        match skill(&doc) {
            Ok(skill) => skills.push(skill),
            Err(why) => warnings.push(Warning::new(&doc.path, format!("skill skipped: {why}"))),
        }
    }
    let overridden = overridden
        .into_iter()
        .filter_map(|(doc, by)| skill(&doc).ok().map(|s| (s, by)))
        .collect();
    let (section, left_out) = section(&skills);
    if !left_out.is_empty() {
        warnings.push(Warning::new(
            &places.project,
            format!(
                "{} skills left out of the prompt, over its budget of {SECTION_TOKENS} tokens: {}",
                left_out.len(),
                left_out.join(", ")
            ),
        ));
    }
    (
        Skills {
            skills,
            section,
            left_out,
            overridden,
        },
        warnings,
    )
}

/// A skill from its `SKILL.md`, or which field is wrong.
fn skill(doc: &Doc) -> Result<Skill, String> {
    let name = match doc.meta.get("name") {
        None => return Err("field 'name' is missing".into()),
        Some(serde_json::Value::String(name)) => name.clone(),
        Some(_) => return Err("field 'name' is not a string".into()),
    };
    if name.is_empty()
        || name.len() > NAME_MAX
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(format!(
            "field 'name' ('{}') must be lowercase letters, digits and hyphens, at most {NAME_MAX}",
            crate::host::text::clip(&name, 70)
        ));
    }
    if name != doc.name {
        return Err(format!(
            "field 'name' ('{name}') is not its folder's name ('{}')",
            doc.name
        ));
    }
    let description = match doc.meta.get("description") {
        None => return Err("field 'description' is missing".into()),
        Some(serde_json::Value::String(d)) if !d.trim().is_empty() => d.trim().to_string(),
        Some(_) => return Err("field 'description' is not a text".into()),
    };
    if description.chars().count() > DESCRIPTION_MAX {
        return Err(format!(
            "field 'description' is longer than {DESCRIPTION_MAX} characters"
        ));
    }
    Ok(Skill {
        name,
        description,
        path: doc.path.clone(),
        origin: doc.origin,
    })
}

/// The section: a heading, one sentence on use, and a line per skill,
/// each line cut to its budget, skills past the section's budget left out
/// (and returned by name).
pub fn section(skills: &[Skill]) -> (String, Vec<String>) {
    if skills.is_empty() {
        return (String::new(), Vec::new());
    }
    let mut text = String::from(
        "# Skills\n\nEach skill below is a folder of instructions (and perhaps scripts) for one \
         kind of task. When a task matches a skill's description, read its SKILL.md with \
         file_read before you start, and follow it; files it names are beside it.\n",
    );
    let mut left_out = Vec::new();
    for skill in skills {
        let line = line(skill);
        // The note naming what was left out must fit too.
        if (text.len() + line.len()).div_ceil(BYTES_PER_TOKEN) as u64 + 20 > SECTION_TOKENS {
            left_out.push(skill.name.clone());
            continue;
        }
        text.push_str(&line);
    }
    if !left_out.is_empty() {
        text.push_str(&format!(
            "({} more skills are not listed here, to keep this short.)\n",
            left_out.len()
        ));
    }
    (text, left_out)
}

/// `- NAME: DESCRIPTION (PATH)`, the description cut so the line stays
/// within `SKILL_TOKENS` (at `BYTES_PER_TOKEN`).
fn line(skill: &Skill) -> String {
    let path = skill.path.display().to_string();
    let description = skill.description.replace(['\n', '\r'], " ");
    let fixed = format!("- {}:  ({path})\n", skill.name).len();
    let room = (SKILL_TOKENS as usize * BYTES_PER_TOKEN).saturating_sub(fixed);
    let description = if description.len() > room {
        let cut = floor_boundary(&description, room.saturating_sub(3));
        format!("{}...", &description[..cut])
    } else {
        description
    };
    format!("- {}: {description} ({path})\n", skill.name)
}

fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(folder: &str, meta: serde_json::Value) -> Doc {
        Doc {
            name: folder.into(),
            path: PathBuf::from(format!("/s/{folder}/SKILL.md")),
            origin: Origin::Personal,
            meta: meta.as_object().unwrap().clone(),
            body: String::new(),
        }
    }

    #[test]
    fn each_field_is_checked_and_named() {
        use serde_json::json;
        assert!(skill(&doc("pdf", json!({"name": "pdf", "description": "PDFs"}))).is_ok());
        for (meta, says) in [
            (json!({"description": "d"}), "field 'name' is missing"),
            (
                json!({"name": "Pdf", "description": "d"}),
                "field 'name' ('Pdf') must be",
            ),
            (
                json!({"name": "other", "description": "d"}),
                "is not its folder's name",
            ),
            (json!({"name": "pdf"}), "field 'description' is missing"),
            (
                json!({"name": "pdf", "description": ["d"]}),
                "field 'description' is not",
            ),
            (
                json!({"name": "pdf", "description": "x".repeat(1025)}),
                "longer than 1024",
            ),
            (
                json!({"name": 3, "description": "d"}),
                "field 'name' is not a string",
            ),
        ] {
            let e = skill(&doc("pdf", meta.clone())).unwrap_err();
            assert!(e.contains(says), "{meta}: {e}");
        }
        let long = "a".repeat(65);
        let e = skill(&doc(&long, json!({"name": long, "description": "d"}))).unwrap_err();
        assert!(e.contains("at most 64"), "{e}");
    }

    #[test]
    fn the_section_is_bounded_per_skill_and_in_all() {
        let skills: Vec<Skill> = (0..200)
            .map(|i| Skill {
                name: format!("skill-{i:03}"),
                description: "word ".repeat(300),
                path: PathBuf::from(format!(
                    "/home/me/.config/ikigai/skills/skill-{i:03}/SKILL.md"
                )),
                origin: Origin::Personal,
            })
            .collect();
        for skill in &skills[..3] {
            assert!(
                line(skill).len() <= SKILL_TOKENS as usize * BYTES_PER_TOKEN,
                "{}",
                line(skill)
            );
        }
        let (text, left_out) = section(&skills);
        assert!(
            text.len() <= SECTION_TOKENS as usize * BYTES_PER_TOKEN,
            "{}",
            text.len()
        );
        assert!(!left_out.is_empty() && left_out.len() < 200);
        assert!(text.contains(&format!("({} more skills are not listed", left_out.len())));
        assert!(text.contains("- skill-000: word word"));
        assert_eq!(section(&skills), (text, left_out));
        assert_eq!(section(&[]).0, "");
    }
}
