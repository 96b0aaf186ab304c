//! Property tests: arbitrary bytes in any of the formats never panic and
//! always give a model or diagnostics.

use astrolift_manifest::MemTree;
use proptest::prelude::*;

use crate::support::validate;

/// A valid manifest around which the generated files sit, so SKILL.md and
/// the brief are actually read.
const MANIFEST: &str = r#"astrolift_version = 1
name = "fuzz"
brief = "brief/README.md"
skills = [{ fuzz = "skills/fuzz" }]
"#;

fn assert_total(tree: &MemTree) {
    let validation = validate(tree);
    assert!(
        !validation.agents.is_empty() || !validation.diagnostics.is_empty(),
        "neither a model nor a diagnostic"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_manifest(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        assert_total(&MemTree::from_files([("astrolift.toml", bytes)]));
    }

    #[test]
    fn arbitrary_text_manifest(text in "(?s).{0,512}") {
        assert_total(&MemTree::from_files([("astrolift.toml", text)]));
    }

    #[test]
    fn arbitrary_skill_md(bytes in proptest::collection::vec(any::<u8>(), 0..2048), text in "(?s).{0,512}") {
        let framed = format!("---\n{text}\n---\nbody\n");
        assert_total(&MemTree::from_files([
            ("astrolift.toml", MANIFEST.as_bytes().to_vec()),
            ("brief/README.md", b"# b\n".to_vec()),
            ("skills/fuzz/SKILL.md", bytes),
        ]));
        assert_total(&MemTree::from_files([
            ("astrolift.toml", MANIFEST.as_bytes().to_vec()),
            ("brief/README.md", framed.clone().into_bytes()),
            ("skills/fuzz/SKILL.md", framed.into_bytes()),
        ]));
    }

    #[test]
    fn arbitrary_federation(bytes in proptest::collection::vec(any::<u8>(), 0..2048), text in "(?s).{0,512}") {
        assert_total(&MemTree::from_files([
            ("astrolift.agents.toml", bytes),
            ("agents/a/astrolift.toml", MANIFEST.as_bytes().to_vec()),
        ]));
        assert_total(&MemTree::from_files([
            ("astrolift.agents.toml", text.into_bytes()),
            ("agents/a/astrolift.toml", MANIFEST.as_bytes().to_vec()),
        ]));
    }
}
