//! `astrolift_package`: an Agent Package archive (the deterministic
//! `tar.gz` of the `package` crate), with its snapshot JSON when given,
//! back to a source layout.
//!
//! Every archive entry becomes a file at the same path with the same bytes;
//! the executable bit follows the entry's mode. When the archive holds its
//! own root `astrolift.toml`, that manifest packages the files again as
//! they were. Otherwise one is generated (`import/manifest-generated`) from
//! the snapshot (name, brief, skills, workload, image, environment, secret
//! references) with a `[package]` that lists exactly the archived files and
//! executables, so packaging the layout gives the original digest. A root
//! manifest's `[[package.shared]]` mounts are put back at their source paths
//! (the archive holds them at their mounts), so that manifest finds them.
//!
//! The archive is hostile input: only regular files (and directory entries,
//! skipped) are accepted; an absolute path, a `..`, a link or a device is
//! an error, as are duplicates and archives over the package limits or over the
//! repository tarball reader's index bound (`DEFAULT_MAX_INDEX_BYTES`).

use std::collections::BTreeMap;
use std::io::Read;

use astrolift_manifest::import_codes as codes;
use astrolift_manifest::{Diagnostic, Span, paths};
use astrolift_package::tarball::{DEFAULT_MAX_INDEX_BYTES, INDEX_ENTRY_OVERHEAD};
use serde_json::Value;

use crate::layout::quote;
use crate::model::{Imported, OutputFile};
use crate::{ImportError, Options, SourceFile, graph};

/// Longest path accepted in an archive (the tarball limit).
pub const MAX_PATH: usize = 4096;

/// Imports an archive (and its snapshot).
pub fn import(
    archive: SourceFile<'_>,
    snapshot: Option<SourceFile<'_>>,
    options: &Options,
) -> Result<Imported, ImportError> {
    let files = read_archive(archive, options)?;
    let snapshot = match snapshot {
        Some(file) => Some(read_snapshot(file, archive)?),
        None => None,
    };
    let mut imported = Imported {
        files,
        ..Imported::default()
    };
    if imported.files.contains_key("astrolift.toml") {
        imported
            .agents
            .push(archived_name(&imported.files).unwrap_or_default());
        restore_shared(&mut imported.files, archive)?;
        return Ok(imported);
    }
    let snapshot_path = snapshot.as_ref().map(|(path, _)| path.as_str());
    let snapshot = snapshot.as_ref().map(|(_, value)| value);
    let name = graph::set_name(
        options.name.as_deref(),
        snapshot.and_then(|s| s.get("name")).and_then(Value::as_str),
        archive.path,
    );
    let gap_path = snapshot_path.unwrap_or(archive.path).to_owned();
    let manifest = generated_manifest(
        &name,
        &imported.files,
        snapshot,
        options,
        &gap_path,
        &mut imported.gaps,
    );
    imported
        .files
        .insert("astrolift.toml".to_owned(), OutputFile::text(manifest));
    imported.gaps.push(Diagnostic::new(
        &codes::MANIFEST_GENERATED,
        archive.path,
        Span::FILE,
        format!(
            "the archive holds no astrolift.toml; one was generated{} with a [package] listing the {} archived files",
            if snapshot.is_some() { " from the snapshot" } else { "" },
            imported.files.len() - 1
        ),
    ));
    imported.agents.push(name);
    astrolift_manifest::diagnostic::sort(&mut imported.gaps);
    Ok(imported)
}

/// The archived root manifest, parsed.
fn archived_manifest(files: &BTreeMap<String, OutputFile>) -> Option<toml::Table> {
    let text = std::str::from_utf8(&files.get("astrolift.toml")?.bytes).ok()?;
    text.parse().ok()
}

/// The `name` of an archived root manifest, for the report.
fn archived_name(files: &BTreeMap<String, OutputFile>) -> Option<String> {
    archived_manifest(files)?
        .get("name")?
        .as_str()
        .map(str::to_owned)
}

/// The `(source, mount)` pairs of the archived manifest's `[[package.shared]]`, both
/// normalized; a pair that does not normalize, or names the root, is left out (its files
/// stay where the archive has them).
fn shared_mounts(files: &BTreeMap<String, OutputFile>) -> Vec<(String, String)> {
    let Some(manifest) = archived_manifest(files) else {
        return Vec::new();
    };
    let mounts = manifest
        .get("package")
        .and_then(|p| p.get("shared"))
        .and_then(toml::Value::as_array);
    let normal = |table: &toml::Value, key: &str| {
        let text = table.get(key)?.as_str()?;
        paths::normalize_relative(text)
            .ok()
            .filter(|p| !p.is_empty())
    };
    mounts
        .into_iter()
        .flatten()
        .filter_map(|m| Some((normal(m, "source")?, normal(m, "mount")?)))
        .filter(|(source, mount)| source != mount)
        .collect()
}

/// Puts each `[[package.shared]]` mount of an archived root manifest back at its source
/// path, relative to the layout's root, which is the repository root the manifest's
/// shared sources name (docs/import.md): the archive holds a mounted file at its mount,
/// where no file of the repository was, so the file moves rather than being copied, and
/// packaging the layout mounts it again to the same place.
fn restore_shared(
    files: &mut BTreeMap<String, OutputFile>,
    archive: SourceFile<'_>,
) -> Result<(), ImportError> {
    for (source, mount) in shared_mounts(files) {
        let moves: Vec<(String, String)> = if files.contains_key(&mount) {
            vec![(mount, source)]
        } else {
            let prefix = format!("{mount}/");
            under(files, &prefix)
                .map(|path| {
                    let rest = &path[prefix.len()..];
                    (path.to_owned(), format!("{source}/{rest}"))
                })
                .collect()
        };
        for (from, to) in moves {
            let Some(file) = files.remove(&from) else {
                continue;
            };
            place(files, to, file, archive)?;
        }
    }
    Ok(())
}

/// The paths of `files` that start with `prefix`, by a range of the sorted map (an archive
/// may hold many files and a manifest many mounts).
fn under<'f>(
    files: &'f BTreeMap<String, OutputFile>,
    prefix: &'f str,
) -> impl Iterator<Item = &'f str> + 'f {
    files
        .range::<str, _>((
            std::ops::Bound::Included(prefix),
            std::ops::Bound::Unbounded,
        ))
        .map(|(path, _)| path.as_str())
        .take_while(move |path| path.starts_with(prefix))
}

/// Adds `file` at `path`, unless the same bytes are there already; a different file, or a
/// file where a directory is (or the other way round), is an error.
fn place(
    files: &mut BTreeMap<String, OutputFile>,
    path: String,
    file: OutputFile,
    archive: SourceFile<'_>,
) -> Result<(), ImportError> {
    let conflict = |why: &str| {
        bad(
            archive,
            format!(
                "the [[package.shared]] source `{}` {why}",
                graph::short(&path)
            ),
        )
    };
    if let Some(existing) = files.get(&path) {
        return if existing.bytes == file.bytes {
            Ok(())
        } else {
            Err(conflict("is also an archived file with other bytes"))
        };
    }
    let as_dir = format!("{path}/");
    let parent_is_file = path
        .match_indices('/')
        .any(|(i, _)| files.contains_key(&path[..i]));
    if parent_is_file || under(files, &as_dir).next().is_some() {
        return Err(conflict("is both a file and a directory of the layout"));
    }
    files.insert(path, file);
    Ok(())
}

fn bad(archive: SourceFile<'_>, reason: impl Into<String>) -> ImportError {
    ImportError::BadArchive {
        path: archive.path.to_owned(),
        reason: reason.into(),
    }
}

/// Every regular file of the archive, checked and bounded.
fn read_archive(
    archive: SourceFile<'_>,
    options: &Options,
) -> Result<BTreeMap<String, OutputFile>, ImportError> {
    if !archive.bytes.starts_with(&[0x1f, 0x8b]) {
        return Err(bad(
            archive,
            "it is not gzip data (an Agent Package is a .tar.gz)",
        ));
    }
    let limits = options.limits.package;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(archive.bytes));
    let entries = tar.entries().map_err(|e| bad(archive, e.to_string()))?;
    let mut files = BTreeMap::new();
    let mut total: u64 = 0;
    // The file list is bounded as the repository tarball reader bounds its index: paths
    // plus a fixed cost per entry, whatever the entries hold.
    let mut index_bytes: u64 = 0;
    for entry in entries {
        let mut entry =
            entry.map_err(|e| bad(archive, format!("a damaged or truncated entry: {e}")))?;
        let raw = entry.path_bytes().into_owned();
        let shown = String::from_utf8_lossy(&raw).into_owned();
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            continue;
        }
        let escape = || ImportError::ArchiveEscape {
            path: archive.path.to_owned(),
            entry: graph::short(&shown),
        };
        if raw.len() > MAX_PATH {
            return Err(bad(
                archive,
                format!("a path of {} bytes, over {MAX_PATH}", raw.len()),
            ));
        }
        let text = std::str::from_utf8(&raw).map_err(|_| escape())?;
        let path = paths::normalize_relative(text).map_err(|_| escape())?;
        if path.is_empty() {
            return Err(escape());
        }
        if !kind.is_file() {
            return Err(bad(
                archive,
                format!(
                    "`{}` is not a regular file (a link or a special file)",
                    graph::short(&path)
                ),
            ));
        }
        index_bytes += raw.len() as u64 + INDEX_ENTRY_OVERHEAD;
        if index_bytes > DEFAULT_MAX_INDEX_BYTES {
            return Err(bad(
                archive,
                format!(
                    "its file list is over the {DEFAULT_MAX_INDEX_BYTES}-byte index bound \
                     (each path plus {INDEX_ENTRY_OVERHEAD} bytes)"
                ),
            ));
        }
        if files.len() >= limits.tarball_files {
            return Err(bad(
                archive,
                format!("more than {} files", limits.tarball_files),
            ));
        }
        let size = entry.size();
        total = total.saturating_add(size);
        if total > limits.package_size {
            return Err(bad(
                archive,
                format!(
                    "over the {}-byte package size limit uncompressed",
                    limits.package_size
                ),
            ));
        }
        let executable = entry
            .header()
            .mode()
            .map_err(|e| bad(archive, e.to_string()))?
            & 0o111
            != 0;
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0).min(1 << 20));
        entry
            .by_ref()
            .take(size)
            .read_to_end(&mut bytes)
            .map_err(|e| bad(archive, format!("a damaged or truncated entry: {e}")))?;
        if bytes.len() as u64 != size {
            return Err(bad(
                archive,
                format!("`{}` is truncated", graph::short(&path)),
            ));
        }
        if files
            .insert(path.clone(), OutputFile { bytes, executable })
            .is_some()
        {
            return Err(bad(
                archive,
                format!("`{}` appears twice", graph::short(&path)),
            ));
        }
    }
    if files.is_empty() {
        return Err(bad(archive, "it holds no file"));
    }
    Ok(files)
}

/// The snapshot, checked against the archive's digest.
fn read_snapshot(
    file: SourceFile<'_>,
    archive: SourceFile<'_>,
) -> Result<(String, Value), ImportError> {
    let source = crate::json::JsonSource::parse(file.path, file.bytes)?;
    let mismatch = |reason: String| ImportError::SnapshotMismatch {
        path: file.path.to_owned(),
        reason,
    };
    let schema = source.value.get("schema").and_then(Value::as_str);
    let known = [
        astrolift_package::snapshot::SNAPSHOT_SCHEMA,
        astrolift_package::snapshot::LEGACY_SNAPSHOT_SCHEMA,
    ];
    if !schema.is_some_and(|schema| known.contains(&schema)) {
        return Err(ImportError::WrongFormat {
            path: file.path.to_owned(),
            expected: "snapshot",
            reason: format!(
                "`schema` is not `{}`",
                astrolift_package::snapshot::SNAPSHOT_SCHEMA
            ),
        });
    }
    let digest = format!("sha256:{}", sha256_hex(archive.bytes));
    match source
        .value
        .pointer("/payload/digest")
        .and_then(Value::as_str)
    {
        Some(expected) if expected == digest => Ok((file.path.to_owned(), source.value)),
        Some(expected) => Err(mismatch(format!(
            "it names the archive {expected}, but the archive is {digest}"
        ))),
        None => Err(mismatch("it has no `payload.digest`".to_owned())),
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// `path` as it sits in the archive: the snapshot's repo-relative paths
/// carry the agent's directory, the archive's do not.
fn in_archive(path: &str, files: &BTreeMap<String, OutputFile>, dir: bool) -> Option<String> {
    let mut candidate = path;
    loop {
        let present = if dir {
            let prefix = format!("{candidate}/");
            files.keys().any(|k| k.starts_with(&prefix))
        } else {
            files.contains_key(candidate)
        };
        if present {
            return Some(candidate.to_owned());
        }
        candidate = candidate.split_once('/')?.1;
    }
}

fn generated_manifest(
    name: &str,
    files: &BTreeMap<String, OutputFile>,
    snapshot: Option<&Value>,
    options: &Options,
    gap_path: &str,
    gaps: &mut Vec<Diagnostic>,
) -> String {
    let get = |pointer: &str| snapshot.and_then(|s| s.pointer(pointer));
    let mut text = format!(
        "# Imported by `astrolift import --from astrolift_package`.\nastrolift_version = 1\nname = {}\n",
        quote(name)
    );
    let brief = get("/brief/path")
        .and_then(Value::as_str)
        .and_then(|p| in_archive(p, files, false))
        .or_else(|| {
            files
                .contains_key("brief/README.md")
                .then(|| "brief/README.md".to_owned())
        });
    if let Some(brief) = brief {
        text.push_str(&format!("brief = {}\n", quote(&brief)));
    }
    let skills = skill_refs(get("/skills"), files, gap_path, gaps);
    if !skills.is_empty() {
        text.push_str(&format!(
            "skills = [\n{}]\n",
            skills
                .iter()
                .map(|s| format!("  {s},\n"))
                .collect::<String>()
        ));
    }
    let image = options
        .image
        .clone()
        .or_else(|| {
            get("/runtime_image")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .filter(|i| !i.is_empty());
    let workload = get("/workload");
    let field = |key: &str| workload.and_then(|w| w.get(key));
    let workload_name = field("name").and_then(Value::as_str).unwrap_or(name);
    text.push_str(&format!(
        "\n[[workloads]]\nname = {}\nkind = \"agent\"\n",
        quote(workload_name)
    ));
    if let Some(family) = field("run_family").and_then(Value::as_str) {
        text.push_str(&format!("run_family = {}\n", quote(family)));
    }
    for key in ["max_retries", "tool_timeout_seconds", "result_ttl_hours"] {
        if let Some(n) = field(key).and_then(Value::as_u64) {
            text.push_str(&format!("{key} = {n}\n"));
        }
    }
    let containers: Vec<&Value> = field("containers")
        .and_then(Value::as_array)
        .map(|c| c.iter().collect())
        .unwrap_or_default();
    if containers.is_empty() {
        text.push_str(&container_toml("agent", true, image.as_deref()));
    }
    for container in containers {
        let primary = container.get("is_primary").and_then(Value::as_bool) == Some(true);
        let own = container
            .get("image_ref")
            .and_then(Value::as_str)
            .filter(|i| !i.is_empty());
        let image = if primary { image.as_deref() } else { own };
        let container_name = container
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("agent");
        text.push_str(&container_toml(container_name, primary, image));
    }
    if image.is_none() {
        gaps.push(
            Diagnostic::new(
                &codes::RUNTIME_IMAGE_REQUIRED,
                gap_path,
                Span::FILE,
                "no runtime image is known for the imported agent",
            )
            .with_help("import again with `--image IMAGE_REF`, or give the package's snapshot"),
        );
    }
    for table in ["environment", "secrets"] {
        let Some(values) = get(&format!("/{table}"))
            .and_then(Value::as_object)
            .filter(|m| !m.is_empty())
        else {
            continue;
        };
        text.push_str(&format!("\n[{table}]\n"));
        for (key, value) in values {
            if let Some(value) = value.as_str() {
                text.push_str(&format!("{} = {}\n", bare_key(key), quote(value)));
            }
        }
    }
    let list = |paths: Vec<&String>| {
        paths
            .into_iter()
            .map(|p| format!("  {},\n", quote(&glob_literal(p))))
            .collect::<String>()
    };
    let executables: Vec<&String> = files
        .iter()
        .filter(|(_, f)| f.executable)
        .map(|(p, _)| p)
        .collect();
    text.push_str(&format!(
        "\n# Exactly the archived files, so packaging gives the archive's digest again.\n[package]\nroot = \".\"\ninclude = [\n{}]\nexclude = []\nexecutables = [\n{}]\n",
        list(files.keys().collect()),
        list(executables)
    ));
    text
}

/// A TOML key: bare when it can be, quoted otherwise.
fn bare_key(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if bare { key.to_owned() } else { quote(key) }
}

fn container_toml(name: &str, primary: bool, image: Option<&str>) -> String {
    format!(
        "\n  [[workloads.containers]]\n  name = {}\n  is_primary = {primary}\n  image_ref = {}\n",
        quote(name),
        quote(image.unwrap_or(""))
    )
}

/// The snapshot's skills as manifest references: local skills whose files
/// are in the archive, catalogue skills by name and version. Organization
/// skills are packaged as files already; re-resolving them is a gap.
fn skill_refs(
    skills: Option<&Value>,
    files: &BTreeMap<String, OutputFile>,
    gap_path: &str,
    gaps: &mut Vec<Diagnostic>,
) -> Vec<String> {
    let mut refs = Vec::new();
    for skill in skills.and_then(Value::as_array).into_iter().flatten() {
        let text = |key: &str| skill.get(key).and_then(Value::as_str).unwrap_or_default();
        match text("kind") {
            "local" => {
                if let Some(dir) = in_archive(text("dir"), files, true) {
                    refs.push(format!("{{ {} = {} }}", quote(text("local_name")), quote(&dir)));
                }
            }
            "catalogue" => refs.push(quote(&format!("{}@{}", text("name"), text("version")))),
            "org" => gaps.push(Diagnostic::new(
                &codes::SNAPSHOT_ONLY,
                gap_path,
                Span::FILE,
                format!(
                    "organization skill `{}/{}@{}` is in the archive as files; it is not referenced again",
                    text("repo_alias"),
                    text("path"),
                    text("git_ref")
                ),
            )),
            _ => {}
        }
    }
    refs
}

/// A glob that matches exactly `path`: every glob metacharacter in a
/// one-character class.
fn glob_literal(path: &str) -> String {
    let mut glob = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            '*' | '?' | '[' | ']' | '{' | '}' => {
                glob.push('[');
                glob.push(c);
                glob.push(']');
            }
            // globset has no portable escape for a backslash: any one
            // character there, among files already listed exactly.
            '\\' => glob.push('?'),
            c => glob.push(c),
        }
    }
    glob
}
