//! With `--image`, every imported layout validates with no errors; without
//! it, the only errors are the empty image references the gap announces.

use astrolift_import::{Format, Imported, Mode};
use astrolift_manifest::{ValidateOptions, validate_repository};

use crate::support::{graph_fixtures, import_dir, import_file, options};

fn errors(imported: &Imported) -> Vec<String> {
    let tree = imported.to_tree();
    let validation = validate_repository(&tree, &ValidateOptions::default());
    assert_eq!(
        validation.agents.len(),
        imported.agents.len(),
        "{:?}",
        validation.diagnostics
    );
    validation
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| format!("{} {}:{} {}", d.code, d.path, d.span.line, d.message))
        .collect()
}

fn all_imports(image: bool) -> Vec<(String, Imported)> {
    let mut all = Vec::new();
    for (format, path) in graph_fixtures() {
        for mode in [None, Some(Mode::Flatten), Some(Mode::Federation)] {
            all.push((
                format!("{path} {mode:?}"),
                import_file(format, &path, &options(image, mode)),
            ));
        }
    }
    all.push((
        "agents_md single".into(),
        import_file(
            Format::AgentsMd,
            "agents_md/single/AGENTS.md",
            &options(image, None),
        ),
    ));
    all.push((
        "agents_md repo".into(),
        import_dir("agents_md/repo", &options(image, None)),
    ));
    all
}

#[test]
fn with_an_image_every_layout_validates() {
    for (name, imported) in all_imports(true) {
        assert_eq!(errors(&imported), Vec::<String>::new(), "{name}");
    }
}

#[test]
fn without_an_image_the_gap_and_validation_agree() {
    for (name, imported) in all_imports(false) {
        assert!(
            imported
                .gaps
                .iter()
                .any(|g| g.code == "import/runtime-image-required"),
            "{name}"
        );
        for error in errors(&imported) {
            assert!(error.contains("image_ref"), "{name}: {error}");
        }
    }
}
