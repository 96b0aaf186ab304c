//! Bad input is an error (the CLI's exit 2), never a partial import: not
//! JSON, the wrong format, a truncated export, an oversized file, an archive
//! with an escaping path or a link.

use std::io::Write;

use astrolift_import::{
    Format, ImportError, ImportLimits, Options, Source, SourceFile, import, source_file_limit,
};
use astrolift_manifest::MemTree;

use crate::support::fixture;

fn import_bytes(
    format: Format,
    path: &str,
    bytes: &[u8],
    options: &Options,
) -> Result<astrolift_import::Imported, ImportError> {
    import(format, Source::File(SourceFile { path, bytes }), options)
}

fn fails(format: Format, fixture_path: &str) -> ImportError {
    let (path, bytes) = fixture(fixture_path);
    import_bytes(format, &path, &bytes, &Options::default()).expect_err(fixture_path)
}

#[test]
fn not_json() {
    let error = fails(Format::Langflow, "bad/not-json.yaml");
    assert!(
        matches!(error, ImportError::NotJson { line: 1, .. }),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .starts_with("bad/not-json.yaml:1:2: not JSON"),
        "{error}"
    );
}

#[test]
fn truncated_export() {
    for format in [Format::Langflow, Format::Flowise] {
        let error = fails(format, "bad/truncated.json");
        assert!(matches!(error, ImportError::Truncated { .. }), "{error}");
    }
    // A real export cut in half.
    let (path, bytes) = fixture("langflow/single-agent.json");
    let error = import_bytes(
        Format::Langflow,
        &path,
        &bytes[..bytes.len() / 2],
        &Options::default(),
    )
    .expect_err("cut");
    assert!(matches!(error, ImportError::Truncated { .. }), "{error}");
}

#[test]
fn the_wrong_format() {
    let error = fails(Format::Langflow, "flowise/chatflow-tool-agent.json");
    assert!(
        error.to_string().contains("use `--from flowise`"),
        "{error}"
    );
    let error = fails(Format::Flowise, "langflow/single-agent.json");
    assert!(
        error.to_string().contains("use `--from langflow`"),
        "{error}"
    );
    for format in [Format::Langflow, Format::Flowise] {
        assert!(matches!(
            fails(format, "bad/array.json"),
            ImportError::WrongFormat { .. }
        ));
        assert!(matches!(
            fails(format, "bad/no-nodes.json"),
            ImportError::WrongFormat { .. }
        ));
    }
    let error = fails(Format::AstroliftPackage, "langflow/single-agent.json");
    assert!(error.to_string().contains("not gzip"), "{error}");
}

#[test]
fn size_limit_at_and_past() {
    let (path, bytes) = fixture("flowise/chatflow-tool-agent.json");
    let mut options = Options {
        limits: ImportLimits {
            source_bytes: bytes.len() as u64,
            ..ImportLimits::DEFAULT
        },
        ..Options::default()
    };
    assert!(import_bytes(Format::Flowise, &path, &bytes, &options).is_ok());
    options.limits.source_bytes -= 1;
    let error = import_bytes(Format::Flowise, &path, &bytes, &options).expect_err("past");
    assert!(matches!(error, ImportError::TooLarge { .. }), "{error}");
}

#[test]
fn a_50_mib_file_is_refused_before_parsing() {
    let huge = vec![b' '; 50 * 1024 * 1024];
    for format in [Format::Langflow, Format::Flowise, Format::AgentsMd] {
        let error =
            import_bytes(format, "huge.json", &huge, &Options::default()).expect_err("huge");
        assert!(
            matches!(error, ImportError::TooLarge { size, .. } if size == 50 * 1024 * 1024),
            "{error}"
        );
    }
}

#[test]
fn each_source_has_its_documented_limit() {
    // docs/import.md, "Limits": the table a user reads states these.
    let limits = ImportLimits::DEFAULT;
    let mib = 1024 * 1024;
    assert_eq!(source_file_limit(Format::AgentsMd, &limits), mib);
    assert_eq!(
        source_file_limit(Format::AstroliftPackage, &limits),
        256 * mib
    );
    assert_eq!(source_file_limit(Format::Langflow, &limits), 32 * mib);
    assert_eq!(source_file_limit(Format::Flowise, &limits), 32 * mib);
    assert_eq!(limits.source_bytes, 32 * mib);
    assert_eq!(limits.package.package_size, 256 * mib);
    assert_eq!((limits.graph_nodes, limits.graph_edges), (5_000, 20_000));
}

#[test]
fn an_agents_md_at_the_brief_limit_imports_and_one_byte_more_is_refused() {
    let limit = ImportLimits::DEFAULT.package.manifest_file;
    let at_limit = |extra: u64| {
        let mut text = b"# Agent\n".to_vec();
        let len = usize::try_from(limit + extra).expect("fits");
        text.resize(len, b'x');
        text
    };
    let at = at_limit(0);
    let past = at_limit(1);
    let options = Options::default();
    assert!(import_bytes(Format::AgentsMd, "AGENTS.md", &at, &options).is_ok());
    let error = import_bytes(Format::AgentsMd, "AGENTS.md", &past, &options).expect_err("past");
    assert!(
        matches!(error, ImportError::TooLarge { size, limit: l, .. } if size == limit + 1 && l == limit),
        "{error}"
    );
    // In a directory the same bound holds for each AGENTS.md.
    let in_tree = |bytes: &[u8]| {
        let mut tree = MemTree::new();
        tree.insert("AGENTS.md".to_owned(), bytes.to_vec(), false);
        import(
            Format::AgentsMd,
            Source::Tree {
                name: "repo",
                tree: &tree,
            },
            &options,
        )
    };
    assert!(in_tree(&at).is_ok());
    let error = in_tree(&past).expect_err("past, in a directory");
    assert!(
        error.to_string().contains(&format!("{limit}-byte limit")),
        "{error}"
    );
}

/// A gzip'd tar of one regular file `name` holding `size` bytes of `x`.
fn archive_of(name: &str, size: usize) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::default(),
    ));
    let mut header = tar::Header::new_gnu();
    header.set_size(size as u64);
    header.set_mode(0o644);
    builder
        .append_data(&mut header, name, vec![b'x'; size].as_slice())
        .expect("tar");
    builder
        .into_inner()
        .and_then(flate2::write::GzEncoder::finish)
        .expect("gzip")
}

fn with_package_size(package_size: u64) -> Options {
    Options {
        image: Some(crate::support::IMAGE.to_owned()),
        limits: ImportLimits {
            package: astrolift_manifest::Limits {
                package_size,
                ..astrolift_manifest::Limits::DEFAULT
            },
            ..ImportLimits::DEFAULT
        },
        ..Options::default()
    }
}

#[test]
fn an_archive_at_the_package_limit_imports_and_one_byte_more_is_refused() {
    // The archive file itself: refused before it is opened.
    let archive = archive_of("notes.txt", 4);
    let size = archive.len() as u64;
    let import_with = |bytes: &[u8], package_size| {
        import_bytes(
            Format::AstroliftPackage,
            "agent.tar.gz",
            bytes,
            &with_package_size(package_size),
        )
    };
    assert!(import_with(&archive, size).is_ok());
    let error = import_with(&archive, size - 1).expect_err("archive past");
    assert!(
        matches!(error, ImportError::TooLarge { size: s, .. } if s == size),
        "{error}"
    );
    // Its content, uncompressed: the same bound, counted as the archive is read.
    let content = 100_000;
    let archive = archive_of("notes.txt", content);
    assert!((archive.len() as u64) < content as u64);
    assert!(import_with(&archive, content as u64).is_ok());
    let error = import_with(&archive, content as u64 - 1).expect_err("content past");
    assert!(
        error
            .to_string()
            .contains("package size limit uncompressed"),
        "{error}"
    );
}

/// A gzip'd tar of one entry whose header says `name` and `kind`, written
/// raw, since the `tar` crate refuses to build such headers.
fn hostile_archive(name: &[u8], kind: tar::EntryType, link: &[u8]) -> Vec<u8> {
    let mut header = tar::Header::new_old();
    header.as_old_mut().name[..name.len()].copy_from_slice(name);
    header.as_old_mut().linkname[..link.len()].copy_from_slice(link);
    header.set_entry_type(kind);
    header.set_mode(0o644);
    header.set_size(if kind.is_file() { 4 } else { 0 });
    header.set_cksum();
    let mut tar = Vec::new();
    tar.extend_from_slice(header.as_bytes());
    if kind.is_file() {
        let mut block = [0u8; 512];
        block[..4].copy_from_slice(b"evil");
        tar.extend_from_slice(&block);
    }
    tar.extend_from_slice(&[0u8; 1024]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).expect("gzip");
    gz.finish().expect("gzip")
}

fn archive_error(bytes: &[u8]) -> ImportError {
    import_bytes(
        Format::AstroliftPackage,
        "agent.tar.gz",
        bytes,
        &Options::default(),
    )
    .expect_err("hostile archive")
}

#[test]
fn archives_with_escaping_paths_or_links() {
    for name in [&b"../evil"[..], b"/etc/evil", b"a/../../evil"] {
        let error = archive_error(&hostile_archive(name, tar::EntryType::Regular, b""));
        assert!(
            matches!(error, ImportError::ArchiveEscape { .. }),
            "{error}"
        );
    }
    let error = archive_error(&hostile_archive(
        b"link",
        tar::EntryType::Symlink,
        b"/etc/passwd",
    ));
    assert!(error.to_string().contains("not a regular file"), "{error}");
    let error = archive_error(&hostile_archive(b"hard", tar::EntryType::Link, b"other"));
    assert!(error.to_string().contains("not a regular file"), "{error}");
}

#[test]
fn damaged_archives() {
    let good = hostile_archive(b"ok.txt", tar::EntryType::Regular, b"");
    let error = archive_error(&good[..good.len() / 2]);
    assert!(matches!(error, ImportError::BadArchive { .. }), "{error}");
    let error = archive_error(b"\x1f\x8bnot really gzip");
    assert!(matches!(error, ImportError::BadArchive { .. }), "{error}");
}

#[test]
fn agents_md_without_any_file_or_not_utf8() {
    let tree = MemTree::from_files([("README.md", "# no agents here\n")]);
    let error = import(
        Format::AgentsMd,
        Source::Tree {
            name: "repo",
            tree: &tree,
        },
        &Options::default(),
    )
    .expect_err("no AGENTS.md");
    assert!(matches!(error, ImportError::NoAgentsMd { .. }), "{error}");
    let error = import_bytes(
        Format::AgentsMd,
        "AGENTS.md",
        b"\xff\xfe bad",
        &Options::default(),
    )
    .expect_err("not UTF-8");
    assert!(matches!(error, ImportError::NotUtf8 { .. }), "{error}");
}

#[test]
fn an_invalid_name_is_refused() {
    let (path, bytes) = fixture("flowise/chatflow-tool-agent.json");
    let options = Options {
        name: Some("Not A Slug".to_owned()),
        ..Options::default()
    };
    let error = import_bytes(Format::Flowise, &path, &bytes, &options).expect_err("name");
    assert!(matches!(error, ImportError::InvalidName { .. }), "{error}");
}

/// A Flowise graph of `nodes` unconnected prompt nodes and `edges` edges.
fn flowise_graph(nodes: usize, edges: usize) -> Vec<u8> {
    let nodes: Vec<_> = (0..nodes)
        .map(|i| serde_json::json!({"id": format!("n{i}"), "data": {"category": "Prompts", "inputs": {"template": "t"}}}))
        .collect();
    let edges: Vec<_> = (0..edges)
        .map(|i| serde_json::json!({"source": format!("n{}", i % 7), "target": format!("n{}", (i + 1) % 7)}))
        .collect();
    serde_json::to_vec(&serde_json::json!({"nodes": nodes, "edges": edges})).expect("JSON")
}

#[test]
fn graph_size_limits_at_and_past() {
    let limits = ImportLimits::DEFAULT;
    let options = Options::default();
    let at = flowise_graph(limits.graph_nodes, limits.graph_edges);
    assert!(import_bytes(Format::Flowise, "g.json", &at, &options).is_ok());
    for past in [
        flowise_graph(limits.graph_nodes + 1, 0),
        flowise_graph(8, limits.graph_edges + 1),
    ] {
        let error = import_bytes(Format::Flowise, "g.json", &past, &options).expect_err("past");
        assert!(matches!(error, ImportError::TooManyNodes { .. }), "{error}");
    }
}

#[test]
fn a_directory_of_agents_md_files_is_bounded_in_total() {
    let mut tree = MemTree::new();
    for i in 0..5 {
        tree.insert(format!("d{i}/AGENTS.md"), vec![b'x'; 1000], false);
    }
    let mut options = Options {
        limits: ImportLimits {
            source_bytes: 5000,
            ..ImportLimits::DEFAULT
        },
        ..Options::default()
    };
    assert!(
        import(
            Format::AgentsMd,
            Source::Tree {
                name: "repo",
                tree: &tree
            },
            &options
        )
        .is_ok()
    );
    options.limits.source_bytes = 4999;
    let error = import(
        Format::AgentsMd,
        Source::Tree {
            name: "repo",
            tree: &tree,
        },
        &options,
    )
    .expect_err("past");
    assert!(matches!(error, ImportError::TooLarge { .. }), "{error}");
}
