//! Fixture loading and a readable dump of an import for snapshots.

use std::path::PathBuf;

use astrolift_import::{Format, Imported, Mode, Options, Source, SourceFile, import};
use astrolift_manifest::DirTree;

pub const IMAGE: &str = "ghcr.io/calliopeai/astrolift-agent-claude-code-vnc:latest";

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// `(display path, bytes)` of a fixture file, e.g. `langflow/single-agent.json`.
pub fn fixture(path: &str) -> (String, Vec<u8>) {
    let bytes =
        std::fs::read(fixtures().join(path)).unwrap_or_else(|e| panic!("fixture {path}: {e}"));
    (path.to_owned(), bytes)
}

/// Every JSON fixture of a graph format.
pub fn graph_fixtures() -> Vec<(Format, String)> {
    let mut all = Vec::new();
    for (format, dir) in [(Format::Langflow, "langflow"), (Format::Flowise, "flowise")] {
        let mut names: Vec<String> = std::fs::read_dir(fixtures().join(dir))
            .expect("fixture dir")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json"))
            .collect();
        names.sort();
        all.extend(names.into_iter().map(|n| (format, format!("{dir}/{n}"))));
    }
    all
}

pub fn options(image: bool, mode: Option<Mode>) -> Options {
    Options {
        image: image.then(|| IMAGE.to_owned()),
        mode,
        ..Options::default()
    }
}

/// Imports one fixture file.
pub fn import_file(format: Format, path: &str, options: &Options) -> Imported {
    let (shown, bytes) = fixture(path);
    let source = Source::File(SourceFile {
        path: &shown,
        bytes: &bytes,
    });
    import(format, source, options).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Imports a fixture directory as agents_md.
pub fn import_dir(path: &str, options: &Options) -> Imported {
    let tree = DirTree::open(fixtures().join(path), 10_000).expect("fixture dir");
    let name = path.rsplit('/').next().unwrap_or(path);
    import(
        Format::AgentsMd,
        Source::Tree { name, tree: &tree },
        options,
    )
    .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The gaps, one per line, then every file with its content.
pub fn dump(imported: &Imported) -> String {
    let mut text = format!("agents: {}\n\n# gaps\n", imported.agents.join(", "));
    for gap in &imported.gaps {
        text.push_str(&format!(
            "{} {} {}:{}:{} {}\n",
            gap.severity, gap.code, gap.path, gap.span.line, gap.span.column, gap.message
        ));
        if let Some(help) = &gap.help {
            text.push_str(&format!("    help: {help}\n"));
        }
    }
    for (path, file) in &imported.files {
        let mode = if file.executable { " (executable)" } else { "" };
        text.push_str(&format!(
            "\n# {path}{mode}\n{}",
            String::from_utf8_lossy(&file.bytes)
        ));
    }
    text
}
