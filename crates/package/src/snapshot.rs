//! The agent package snapshot: everything that defines one version of an
//! agent, as canonical JSON.
//!
//! The snapshot is stored whole ([`Snapshot::canonical_json`]): its `payload` names the
//! archive (`digest`, `size`), which is how a dispatch finds it. The agent's version
//! ([`Snapshot::digest`]) is the sha256 (hex) of the canonical JSON *without* the
//! archive's `digest` and `size`: it covers the package's content through
//! `payload.content_digest` (the tar stream's sha256), so an archive compressed
//! differently (another compressor version or level) is the same version, and the
//! stored snapshot of that version keeps naming the archive first stored for it.
//!
//! Snapshots of schema `astrolift.snapshot/v1` were versioned over the whole JSON,
//! archive digest included, and had no `content_digest`. [`Snapshot::legacy_digest`]
//! computes that version for today's content, so that an agent registered under it is
//! recognised as unchanged (docs/operations.md, "Compatibility shims").
//!
//! Canonical form: object keys sorted by bytes at every level, no
//! insignificant whitespace, strings escaped minimally (`"`, `\`, control
//! characters; nothing else), integers only. The workspace builds
//! `serde_json` with `preserve_order`, so `serde_json::to_vec` would keep
//! struct field order; [`canonical_json`] writes the value itself (a few
//! lines, so no dependency) and is independent of that feature.
//!
//! A local skill's `sha256` is the sha256 of the lines
//! `<sha256 of file>  <path relative to the skill directory>\n`, one per
//! packaged skill file, sorted by path bytes: what
//! `find . -type f | LC_ALL=C sort | xargs sha256sum` prints, without `./`.
//!
//! A catalogue or organization skill that was resolved (docs/reference.md §5.1, "Remote skills") is pinned: its
//! entry adds `commit` (what its ref named at sync) and `sha256` (the same listing hash, over
//! its skill directory in that commit; [`skill_dir_sha256`]). One that was not resolved has
//! neither, so the snapshot of an agent whose skills are all local, or whose remote skills
//! are unresolved, is exactly what it was before pins existed. One read from a local
//! directory that is not a Git checkout (a `file:` source) has `sha256` and no `commit`.

use std::collections::BTreeMap;

use astrolift_manifest::model::{AgentManifest, SkillRef};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::archive::PackageOutput;
use crate::content_hash::{ContentHashes, file_hash};
use crate::error::PackageError;
use crate::remote::RemoteSkillTree;
use crate::slice::Slice;
use crate::source::PayloadTree;

/// The snapshot format identifier.
pub const SNAPSHOT_SCHEMA: &str = "astrolift.snapshot/v2";

/// The format before versions covered the content only ([`Snapshot::legacy_digest`]);
/// stored snapshots of it are still read.
pub const LEGACY_SNAPSHOT_SCHEMA: &str = "astrolift.snapshot/v1";

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    pub schema: String,
    pub name: String,
    pub brief: Option<BriefSnapshot>,
    pub skills: Vec<SkillSnapshot>,
    pub workload: Option<WorkloadSnapshot>,
    /// The primary container's `image_ref`.
    pub runtime_image: Option<String>,
    pub environment: BTreeMap<String, String>,
    /// Secret name to `secret://` reference; never a value.
    pub secrets: BTreeMap<String, String>,
    pub payload: PackageOutput,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileHash {
    pub path: String,
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BriefSnapshot {
    pub path: String,
    pub sha256: String,
    /// In link order.
    pub context_files: Vec<FileHash>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SkillSnapshot {
    Local {
        local_name: String,
        /// The frontmatter `name`, when it parsed.
        name: Option<String>,
        dir: String,
        sha256: String,
        /// The frontmatter `metadata` as the skill model keeps it (a nested value as
        /// compact JSON text); absent when there is none, so skills without it keep
        /// their snapshot bytes.
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        metadata: BTreeMap<String, String>,
    },
    Catalogue {
        name: String,
        version: String,
        /// Where it was resolved; absent when it was not.
        #[serde(flatten, skip_serializing_if = "Option::is_none")]
        pin: Option<SkillPin>,
    },
    Org {
        repo_alias: String,
        path: String,
        git_ref: String,
        /// Where it was resolved; absent when it was not.
        #[serde(flatten, skip_serializing_if = "Option::is_none")]
        pin: Option<SkillPin>,
    },
}

/// Where a catalogue or organization skill was resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillPin {
    /// The commit (40 hex digits) its ref named; `None` for a local directory that is not a
    /// Git checkout (docs/reference.md §5.1), whose entry then has `sha256` only. A GitHub
    /// source always has one, so its entry (and the agent's version) is as before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The listing hash of its skill directory at that commit ([`skill_dir_sha256`]).
    pub sha256: String,
}

/// The pins of an agent's resolved remote skills, by
/// [`SkillRef::remote_reference`]; a reference without one is unresolved.
pub type SkillPins = BTreeMap<String, SkillPin>;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkloadSnapshot {
    pub name: String,
    pub run_family: Option<String>,
    pub max_retries: Option<u32>,
    pub tool_timeout_seconds: Option<u64>,
    pub result_ttl_hours: Option<u64>,
    pub containers: Vec<ContainerSnapshot>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContainerSnapshot {
    pub name: String,
    pub is_primary: bool,
    pub image_ref: String,
}

/// Builds the snapshot of an agent whose slice was archived as `output`.
/// Reads (streams) the brief, its context files and the skills' files to
/// hash them.
pub fn snapshot(
    manifest: &AgentManifest,
    slice: &Slice,
    tree: &dyn PayloadTree,
    output: &PackageOutput,
) -> Result<Snapshot, PackageError> {
    snapshot_with_hashes(manifest, slice, tree, output, &ContentHashes::default())
}

/// [`snapshot`], taking file hashes from `hashes` where it has them (the
/// slice's files, already hashed for its fingerprint) and reading the rest.
pub fn snapshot_with_hashes(
    manifest: &AgentManifest,
    slice: &Slice,
    tree: &dyn PayloadTree,
    output: &PackageOutput,
    hashes: &ContentHashes,
) -> Result<Snapshot, PackageError> {
    let pins = SkillPins::new();
    snapshot_pinned(manifest, slice, tree, output, hashes, &pins)
}

/// [`snapshot_with_hashes`], with the remote skills in `pins` pinned.
pub fn snapshot_pinned(
    manifest: &AgentManifest,
    slice: &Slice,
    tree: &dyn PayloadTree,
    output: &PackageOutput,
    hashes: &ContentHashes,
    pins: &SkillPins,
) -> Result<Snapshot, PackageError> {
    let hash = |path: &str| match hashes.hex(path) {
        Some(hex) => Ok(hex),
        None => file_sha256(tree, path),
    };
    let brief = match &manifest.brief {
        Some(brief) => Some(BriefSnapshot {
            path: brief.path.clone(),
            sha256: hash(&brief.path)?,
            context_files: brief
                .context_files
                .iter()
                .map(|path| {
                    Ok(FileHash {
                        path: path.clone(),
                        sha256: hash(path)?,
                    })
                })
                .collect::<Result<_, PackageError>>()?,
        }),
        None => None,
    };
    let skills = manifest
        .skills
        .iter()
        .map(|skill| skill_snapshot(skill, slice, &hash, pins))
        .collect::<Result<_, _>>()?;
    let workload = manifest.workload.as_ref().map(|w| WorkloadSnapshot {
        name: w.name.clone(),
        run_family: w.run_family.clone(),
        max_retries: w.max_retries,
        tool_timeout_seconds: w.tool_timeout_seconds,
        result_ttl_hours: w.result_ttl_hours,
        containers: w
            .containers
            .iter()
            .map(|c| ContainerSnapshot {
                name: c.name.clone(),
                is_primary: c.is_primary,
                image_ref: c.image_ref.clone(),
            })
            .collect(),
    });
    let runtime_image = manifest.workload.as_ref().and_then(|w| {
        w.containers
            .iter()
            .find(|c| c.is_primary)
            .map(|c| c.image_ref.clone())
    });
    Ok(Snapshot {
        schema: SNAPSHOT_SCHEMA.to_owned(),
        name: manifest.name.clone(),
        brief,
        skills,
        workload,
        runtime_image,
        environment: manifest.environment.clone(),
        secrets: manifest.secrets.clone(),
        payload: output.clone(),
    })
}

fn skill_snapshot(
    skill: &SkillRef,
    slice: &Slice,
    hash: &dyn Fn(&str) -> Result<String, PackageError>,
    pins: &SkillPins,
) -> Result<SkillSnapshot, PackageError> {
    let pin = || {
        skill
            .remote_reference()
            .and_then(|reference| pins.get(&reference).cloned())
    };
    Ok(match skill {
        SkillRef::Local {
            local_name,
            dir,
            skill,
        } => {
            let files = slice
                .skills
                .iter()
                .find(|s| &s.dir == dir && &s.local_name == local_name)
                .map(|s| s.files.as_slice())
                .unwrap_or_default();
            SkillSnapshot::Local {
                local_name: local_name.clone(),
                name: skill.as_ref().map(|s| s.name.clone()),
                dir: dir.clone(),
                sha256: skill_sha256(hash, dir, files)?,
                metadata: skill
                    .as_ref()
                    .map(|s| s.metadata.clone())
                    .unwrap_or_default(),
            }
        }
        SkillRef::Catalogue { name, version } => SkillSnapshot::Catalogue {
            name: name.clone(),
            version: version.clone(),
            pin: pin(),
        },
        SkillRef::Org {
            repo_alias,
            path,
            git_ref,
        } => SkillSnapshot::Org {
            repo_alias: repo_alias.clone(),
            path: path.clone(),
            git_ref: git_ref.clone(),
            pin: pin(),
        },
    })
}

/// The content hash of a skill directory `dir` of `tree` holding `files` (paths in
/// `tree`): the same `sha256sum`-style listing hash as a local skill's, so a skill hashes
/// the same wherever it is read from.
pub fn skill_dir_sha256(
    tree: &dyn PayloadTree,
    dir: &str,
    files: &[String],
) -> Result<String, PackageError> {
    skill_sha256(&|path: &str| file_sha256(tree, path), dir, files)
}

/// sha256 of the `sha256sum`-style listing of the skill's files.
fn skill_sha256(
    hash: &dyn Fn(&str) -> Result<String, PackageError>,
    dir: &str,
    files: &[String],
) -> Result<String, PackageError> {
    let mut listing = Vec::new();
    let mut lines: Vec<(&str, &String)> = files
        .iter()
        .map(|path| {
            let rel = path
                .strip_prefix(dir)
                .and_then(|r| r.strip_prefix('/'))
                .unwrap_or(path);
            (rel, path)
        })
        .collect();
    lines.sort();
    for (rel, path) in lines {
        listing.extend_from_slice(hash(path)?.as_bytes());
        listing.extend_from_slice(b"  ");
        listing.extend_from_slice(rel.as_bytes());
        listing.push(b'\n');
    }
    Ok(hex::encode(Sha256::digest(&listing)))
}

/// sha256 (hex) of one file, streamed.
pub fn file_sha256(tree: &dyn PayloadTree, path: &str) -> Result<String, PackageError> {
    let mut buffer = vec![0u8; 64 * 1024];
    Ok(hex::encode(file_hash(tree, path, &mut buffer)?))
}

/// The snapshot pins of `remote`: each skill's commit and the listing hash of its files in
/// its repository's tree.
pub fn remote_pins(remote: &[RemoteSkillTree<'_>]) -> Result<SkillPins, PackageError> {
    remote
        .iter()
        .map(|r| {
            let sha256 = skill_dir_sha256(r.tree, &r.skill.dir, &r.skill.files)?;
            let pin = SkillPin {
                commit: r.skill.commit.clone(),
                sha256,
            };
            Ok((r.skill.reference.clone(), pin))
        })
        .collect()
}

impl Snapshot {
    /// The canonical JSON bytes: what is stored.
    pub fn canonical_json(&self) -> Vec<u8> {
        canonical_json(&self.to_value())
    }

    /// The agent's version: sha256 (hex) of the canonical JSON without the archive's
    /// `digest` and `size` (the module docs).
    pub fn digest(&self) -> String {
        let mut value = self.to_value();
        if let Some(payload) = value.get_mut("payload").and_then(Value::as_object_mut) {
            payload.remove("digest");
            payload.remove("size");
        }
        hex::encode(Sha256::digest(canonical_json(&value)))
    }

    /// The version an `astrolift.snapshot/v1` snapshot of the same agent and archive
    /// had: sha256 of the whole JSON with that schema and no `content_digest`.
    pub fn legacy_digest(&self) -> String {
        let mut value = self.to_value();
        if let Some(object) = value.as_object_mut() {
            object.insert("schema".to_owned(), Value::from(LEGACY_SNAPSHOT_SCHEMA));
        }
        if let Some(payload) = value.get_mut("payload").and_then(Value::as_object_mut) {
            payload.remove("content_digest");
        }
        hex::encode(Sha256::digest(canonical_json(&value)))
    }

    fn to_value(&self) -> Value {
        // Serializing plain structs, strings and integers to a Value cannot
        // fail; Null is the (unreachable) fallback rather than a panic.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// Writes `value` as canonical JSON (see the module docs).
pub fn canonical_json(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_value(value, &mut out);
    out
}

fn write_value(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Number(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(key, out);
                out.push(b':');
                write_value(item, out);
            }
            out.push(b'}');
        }
    }
}

fn write_string(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            c if (c as u32) < 0x20 => {
                out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes());
            }
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.push(b'"');
}
