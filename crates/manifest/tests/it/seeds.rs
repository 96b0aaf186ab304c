//! The seeds' own documents, as users bring them: the packager's `SKILL.md` verbatim
//! (`tests/fixtures/skill-seed-002`) validates with one warning and keeps what it wrote.

use astrolift_manifest::Severity;
use astrolift_manifest::model::SkillRef;

use crate::support::{crate_dir, validate_dir};

#[test]
fn seed_002_skill_validates_with_one_warning_and_keeps_its_metadata() {
    let validation = validate_dir(&crate_dir().join("tests/fixtures/skill-seed-002"));
    let [warning] = validation.diagnostics.as_slice() else {
        panic!("one diagnostic expected: {:#?}", validation.diagnostics);
    };
    assert_eq!(warning.severity, Severity::Warning);
    assert_eq!(warning.code, "skill/invalid-name");
    let fix = warning.fix.as_ref().map(|f| f.description.as_str());
    assert_eq!(fix, Some("rename the skill to `packager-default`"));

    let [agent] = validation.agents.as_slice() else {
        panic!("one agent expected");
    };
    let Some(SkillRef::Local {
        skill: Some(skill), ..
    }) = agent.skills.first()
    else {
        panic!("a local skill expected: {:#?}", agent.skills);
    };
    assert_eq!(skill.name, "packager.default");
    let autonoetic = skill.metadata.get("autonoetic").map(String::as_str);
    assert!(
        autonoetic.is_some_and(|json| json.starts_with("{\"version\":\"1.0\",\"runtime\"")),
        "{autonoetic:?}"
    );
    assert!(skill.instructions.starts_with("Packager\n"));
    assert!(
        skill
            .instructions
            .ends_with("3. Continue from the missing step only.\n")
    );
}
