//! The written form of a remote skill reference (docs/reference.md §5.1,
//! "Remote skills"): `"name@version"` or `"alias/path/to/skill@ref"`, read by
//! native manifests and workflows alike.

use crate::model::SkillRef;
use crate::paths;

/// `"name@version"` (catalogue) or `"alias/path/to/skill@ref"` (organization repo).
pub fn parse_remote_ref(text: &str) -> Result<SkillRef, String> {
    let Some((target, version)) = text.rsplit_once('@') else {
        return Err("it has no `@version` or `@ref`".to_owned());
    };
    match target.split_once('/') {
        None => {
            if !paths::is_slug(target) {
                return Err(format!("catalogue skill name `{target}` is not a slug"));
            }
            semver::Version::parse(version)
                .map_err(|e| format!("`{version}` is not a semantic version ({e})"))?;
            Ok(SkillRef::Catalogue {
                name: target.to_owned(),
                version: version.to_owned(),
            })
        }
        Some((alias, path)) => {
            if !paths::is_slug(alias) {
                return Err(format!("repository alias `{alias}` is not a slug"));
            }
            if path
                .split('/')
                .any(|p| p.is_empty() || p == "." || p == "..")
            {
                return Err(format!(
                    "skill path `{path}` has an empty, `.` or `..` component"
                ));
            }
            if !is_git_ref(version) {
                return Err(format!("`{version}` is not a valid git ref"));
            }
            Ok(SkillRef::Org {
                repo_alias: alias.to_owned(),
                path: path.to_owned(),
                git_ref: version.to_owned(),
            })
        }
    }
}

/// The `git check-ref-format` rules that matter for a ref written by hand.
fn is_git_ref(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(['-', '/', '.'])
        && !name.ends_with(['/', '.'])
        && !name.ends_with(".lock")
        && !name.contains("..")
        && !name.contains("//")
        && !name.contains("@{")
        && !name
            .chars()
            .any(|c| c.is_control() || c.is_whitespace() || "~^:?*[\\".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_refs() {
        assert_eq!(
            parse_remote_ref("pr-review@1.2.0"),
            Ok(SkillRef::Catalogue {
                name: "pr-review".into(),
                version: "1.2.0".into()
            })
        );
        assert_eq!(
            parse_remote_ref("steadymd/runbooks/clinical-triage@main"),
            Ok(SkillRef::Org {
                repo_alias: "steadymd".into(),
                path: "runbooks/clinical-triage".into(),
                git_ref: "main".into()
            })
        );
        assert!(parse_remote_ref("pr-review").is_err());
        assert!(parse_remote_ref("pr-review@latest").is_err());
        assert!(parse_remote_ref("a//b@main").is_err());
        assert!(parse_remote_ref("a/b@ma in").is_err());
    }
}
