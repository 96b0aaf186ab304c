//! What a dispatch carries, read from where it is kept: [`load_content`]
//! reads a registered agent's snapshot and package from the blob store and
//! presigns the package URL; [`prompt_texts_of_manifest`] reads the same
//! texts from a working tree (`astrolift trigger test`). Both give a
//! [`PromptTexts`] that [`crate::prompts::compose_prompts`] turns into the
//! prompts, so a preview and a real dispatch compose alike.
//!
//! # Prompt texts from the package archive
//! The snapshot names the brief (repo path and sha256) and the local skills
//! (repo directories); the archive holds them at package-relative paths (the
//! repo path less the `[package]` root). The archive is read once, keeping
//! only Markdown files of at most `Limits::manifest_file` bytes (and at most
//! [`PROMPT_TEXT_BUDGET`] bytes of them); the brief is the kept file whose
//! path is a suffix of the brief's repo path and whose sha256 is the
//! snapshot's, a skill's `SKILL.md` the one whose directory is the longest
//! suffix of the skill's repo directory. A catalogue or organization skill
//! the sync resolved (its snapshot entry has a `commit`) is packaged at a
//! fixed package-relative directory, `skills/<name>/` or
//! `skills/<alias>/<path>/` ([`astrolift_manifest::remote_skill`]), and its
//! `SKILL.md` is read from there; one that was not resolved carries no
//! instructions here (the controller resolves it by reference, from
//! `skill_refs`). Skills are taken in the snapshot's order, whatever their
//! form. Archives over [`MAX_ARCHIVE_BYTES`] are refused rather than read:
//! the blob store reads objects whole.
//!
//! A dispatch's `config` (the env spec's packaged config manifest with a
//! presigned URL per file) is read by the `config` submodule;
//! [`env_spec_parts`] is the one call every dispatch path makes.

mod config;

use std::io::Read;
use std::sync::Arc;

use astrolift_manifest::model::{AgentManifest, SkillRef};
use astrolift_manifest::remote_skill;
use astrolift_manifest::{Limits, MemTree, SourceTree};
use astrolift_store::blob::{BlobKey, BlobStore};
use astrolift_store::state::{Agent, EnvSpec, StateStore, UnixSeconds};
use astrolift_store::{BoxFuture, StoreError};
use serde_json::Value;
use sha2::{Digest, Sha256};

pub use self::config::env_spec_parts;
use self::config::{StoredBundle, config_without_blob_store, load_config_content};
use crate::env::SnapshotView;
pub use crate::kept::CONTENT_CACHE_BYTES;
use crate::kept::Kept;
use crate::message::{DispatchContent, PackageRef};
use crate::prompts::{PromptTexts, SkillText, ToolContract};
pub use crate::source::{
    ContentError, ContentSource, DEFAULT_URL_EXPIRY, MAX_ARCHIVE_BYTES, MAX_URL_EXPIRY, UrlOptions,
};

/// Total bytes of Markdown kept from one archive while looking for prompts.
pub const PROMPT_TEXT_BUDGET: u64 = 16 * 1024 * 1024;

/// The content of a dispatch of the registered snapshot `snapshot_hash`:
/// its snapshot, the prompt texts from its package and a presigned package
/// URL expiring `options.expiry` after `now` (or `inline` when the snapshot
/// says the package ships inline).
pub async fn load_content(
    blobs: &dyn BlobStore,
    snapshot_hash: &str,
    options: UrlOptions,
    limits: &Limits,
    now: UnixSeconds,
) -> Result<DispatchContent, ContentError> {
    let read = read_snapshot_content(blobs, snapshot_hash, limits).await?;
    content_with_url(blobs, &read, options, now).await
}

/// What a snapshot's dispatches share: the snapshot and its prompt texts.
/// Both are fixed by the content-addressed hash, so they may be kept.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotContent {
    pub snapshot: SnapshotView,
    pub prompts: PromptTexts,
}

impl SnapshotContent {
    /// Bytes of text it holds (what a cache of them counts).
    fn text_bytes(&self) -> usize {
        let prompts = &self.prompts;
        prompts.brief.as_ref().map_or(0, String::len)
            + prompts
                .skills
                .iter()
                .map(|s| s.name.len() + s.instructions.len())
                .sum::<usize>()
            + prompts
                .tools
                .iter()
                .map(|t| t.slug.len() + t.description.as_ref().map_or(0, String::len))
                .sum::<usize>()
    }
}

/// Reads the snapshot `snapshot_hash` and, unless its package ships inline,
/// the prompt texts of its archive. The archive is decompressed on a
/// blocking thread, never on the async workers.
pub async fn read_snapshot_content(
    blobs: &dyn BlobStore,
    snapshot_hash: &str,
    limits: &Limits,
) -> Result<SnapshotContent, ContentError> {
    let snapshot_key = BlobKey::snapshot(snapshot_hash)?;
    let bytes = blobs
        .get(&snapshot_key)
        .await
        .map_err(|error| match error {
            StoreError::NotFound(_) => ContentError::MissingSnapshot(snapshot_hash.to_owned()),
            other => ContentError::Store(other),
        })?;
    let json: Value =
        serde_json::from_slice(&bytes).map_err(|e| ContentError::Snapshot(e.to_string()))?;
    let snapshot =
        SnapshotView::from_json(&json).map_err(|e| ContentError::Snapshot(e.to_string()))?;
    if snapshot.payload.inline {
        return Ok(SnapshotContent {
            snapshot,
            prompts: PromptTexts::default(),
        });
    }
    let package_key = BlobKey::package(&snapshot.payload.digest)?;
    if snapshot.payload.size > MAX_ARCHIVE_BYTES {
        return Err(ContentError::ArchiveTooLarge {
            size: snapshot.payload.size,
        });
    }
    let archive = blobs.get(&package_key).await.map_err(|error| match error {
        StoreError::NotFound(_) => ContentError::MissingPackage(snapshot.payload.digest.clone()),
        other => ContentError::Store(other),
    })?;
    let limits = *limits;
    tokio::task::spawn_blocking(move || {
        let prompts = prompt_texts_from_archive(&archive, &snapshot, &limits)?;
        Ok(SnapshotContent { snapshot, prompts })
    })
    .await
    .map_err(|e| ContentError::Archive(e.to_string()))?
}

/// A dispatch's content from its snapshot's: a presigned package URL
/// expiring `options.expiry` after `now`, or the inline package.
async fn content_with_url(
    blobs: &dyn BlobStore,
    read: &SnapshotContent,
    options: UrlOptions,
    now: UnixSeconds,
) -> Result<DispatchContent, ContentError> {
    let payload = &read.snapshot.payload;
    let package = if payload.inline {
        PackageRef::inline(payload.digest.clone(), payload.size)
    } else {
        let package_key = BlobKey::package(&payload.digest)?;
        let url = blobs
            .presigned_get_url(&package_key, options.expiry)
            .await?;
        let expires_at =
            now.saturating_add(i64::try_from(options.expiry.as_secs()).unwrap_or(i64::MAX));
        PackageRef {
            digest: payload.digest.clone(),
            size: payload.size,
            url: Some(url),
            expires_at: Some(expires_at),
            inline: false,
            layers: Vec::new(),
        }
    };
    Ok(DispatchContent {
        package: Some(package),
        snapshot: read.snapshot.clone(),
        prompts: read.prompts.clone(),
    })
}

/// The brief and local skills of `snapshot`, read from its archive (see the
/// module docs for how files are matched).
pub fn prompt_texts_from_archive(
    archive: &[u8],
    snapshot: &SnapshotView,
    limits: &Limits,
) -> Result<PromptTexts, ContentError> {
    let files = markdown_files(archive, limits.manifest_file)?;
    let brief = snapshot.brief.as_ref().and_then(|brief| {
        files
            .iter()
            .find(|(path, bytes)| {
                is_path_suffix(&brief.path, path)
                    && hex::encode(Sha256::digest(bytes)) == brief.sha256
            })
            .map(|(_, bytes)| String::from_utf8_lossy(bytes).into_owned())
    });
    let mut tree = MemTree::new();
    for (path, bytes) in &files {
        tree.insert(path.clone(), bytes.clone(), false);
    }
    let mut texts = PromptTexts {
        brief,
        ..Default::default()
    };
    for skill in &snapshot.skills {
        let Some(packaged_dir) = packaged_dir_of(skill, &files) else {
            continue;
        };
        let mut diagnostics = Vec::new();
        if let Some(local) = astrolift_manifest::skill::read_local_skill(
            &tree,
            limits,
            &packaged_dir,
            &mut diagnostics,
        ) {
            push_skill(
                &mut texts,
                &local.name,
                &local.instructions,
                &local.allowed_tools,
            );
        }
    }
    Ok(texts)
}

/// Where the archive holds the `SKILL.md` of one snapshot skill entry: a local skill's
/// packaged directory, a resolved remote skill's fixed one; `None` for an unresolved remote
/// skill (or an entry this version does not know).
fn packaged_dir_of(skill: &Value, files: &[(String, Vec<u8>)]) -> Option<String> {
    let field = |name: &str| skill.get(name).and_then(Value::as_str);
    let resolved = field("commit").is_some();
    match field("kind")? {
        "local" => packaged_skill_dir(files, field("dir")?),
        "catalogue" if resolved => Some(remote_skill::catalogue_package_dir(field("name")?)),
        "org" if resolved => Some(remote_skill::org_package_dir(
            field("repo_alias")?,
            field("path")?,
        )),
        _ => None,
    }
}

/// The prompt texts of `agent` read from its working tree (`trigger test`).
pub fn prompt_texts_of_manifest(
    agent: &AgentManifest,
    tree: &dyn SourceTree,
    limits: &Limits,
) -> PromptTexts {
    let brief = agent.brief.as_ref().and_then(|brief| {
        tree.read(&brief.path, limits.manifest_file)
            .ok()
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
    });
    let mut texts = PromptTexts {
        brief,
        ..Default::default()
    };
    for skill in &agent.skills {
        if let SkillRef::Local {
            skill: Some(local), ..
        } = skill
        {
            push_skill(
                &mut texts,
                &local.name,
                &local.instructions,
                &local.allowed_tools,
            );
        }
    }
    texts
}

fn push_skill(texts: &mut PromptTexts, name: &str, instructions: &str, tools: &[String]) {
    texts.skills.push(SkillText {
        name: name.to_owned(),
        instructions: instructions.to_owned(),
    });
    texts.tools.extend(tools.iter().map(|slug| ToolContract {
        slug: slug.clone(),
        description: None,
    }));
}

/// `suffix` is `path` or a trailing run of its segments.
fn is_path_suffix(path: &str, suffix: &str) -> bool {
    path == suffix
        || path
            .strip_suffix(suffix)
            .is_some_and(|head| head.ends_with('/'))
}

/// The packaged directory of the skill at repo directory `dir`: the longest
/// suffix of `dir` (possibly empty) holding a kept `SKILL.md`.
fn packaged_skill_dir(files: &[(String, Vec<u8>)], dir: &str) -> Option<String> {
    files
        .iter()
        .filter_map(|(path, _)| {
            let packaged = if path == "SKILL.md" {
                ""
            } else {
                path.strip_suffix("/SKILL.md")?
            };
            (packaged.is_empty() || is_path_suffix(dir, packaged)).then(|| packaged.to_owned())
        })
        .max_by_key(String::len)
}

/// The archive's regular `.md` files of at most `max_file` bytes, within
/// [`PROMPT_TEXT_BUDGET`]. Hand-rolled over `tar` rather than the package
/// crate's tarball reader, which reads GitHub tarballs (a top directory,
/// a spool file) and would keep far more than these few files.
fn markdown_files(archive: &[u8], max_file: u64) -> Result<Vec<(String, Vec<u8>)>, ContentError> {
    let bad = |e: std::io::Error| ContentError::Archive(e.to_string());
    let mut reader = tar::Archive::new(flate2::read::GzDecoder::new(archive));
    let mut files = Vec::new();
    let mut budget = PROMPT_TEXT_BUDGET;
    for entry in reader.entries().map_err(bad)? {
        let entry = entry.map_err(bad)?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let size = entry.header().size().map_err(bad)?;
        let path = match entry.path() {
            Ok(path) => path.to_string_lossy().into_owned(),
            Err(_) => continue,
        };
        if !path.ends_with(".md") || size > max_file || size > budget {
            continue;
        }
        budget -= size;
        let mut bytes = Vec::new();
        entry.take(size).read_to_end(&mut bytes).map_err(bad)?;
        files.push((path, bytes));
    }
    Ok(files)
}

/// Package archives read at once by one [`BlobContent`]: each may take
/// [`MAX_ARCHIVE_BYTES`] of memory, so a burst of dispatches of large
/// packages waits here instead of holding a copy each.
pub const CONCURRENT_ARCHIVE_READS: usize = 2;

/// The production source: [`load_content`] on a blob store, reading each
/// snapshot's archive once. Snapshots are content-addressed, so what was
/// read for a hash never changes: the snapshot and its prompt texts are
/// kept (oldest dropped first, [`CONTENT_CACHE_BYTES`] in all) and only the
/// package URL is presigned per dispatch. Config bundles are kept the same
/// way (a second budget); their package record is read per dispatch. Reads of archives are bounded to
/// [`CONCURRENT_ARCHIVE_READS`] at once.
#[derive(Debug, Clone)]
pub struct BlobContent {
    blobs: Arc<dyn BlobStore>,
    urls: UrlOptions,
    limits: Limits,
    kept: Arc<KeptContent>,
}

#[derive(Debug)]
struct KeptContent {
    snapshots: Kept<SnapshotContent>,
    /// Config bundles by hash (the `config` submodule), counted by their stored size.
    bundles: Kept<StoredBundle>,
    reads: tokio::sync::Semaphore,
}

impl BlobContent {
    pub fn new(blobs: Arc<dyn BlobStore>, urls: UrlOptions, limits: Limits) -> Self {
        BlobContent {
            blobs,
            urls,
            limits,
            kept: Arc::new(KeptContent {
                snapshots: Kept::default(),
                bundles: Kept::default(),
                reads: tokio::sync::Semaphore::new(CONCURRENT_ARCHIVE_READS),
            }),
        }
    }

    async fn snapshot_content(&self, hash: &str) -> Result<Arc<SnapshotContent>, ContentError> {
        let kept = &self.kept.snapshots;
        if let Some(content) = kept.get(hash) {
            return Ok(content);
        }
        let _reading = self.kept.reads.acquire().await.ok();
        // Another dispatch of the same snapshot may have read it meanwhile.
        if let Some(content) = kept.get(hash) {
            return Ok(content);
        }
        let read = Arc::new(read_snapshot_content(self.blobs.as_ref(), hash, &self.limits).await?);
        kept.keep(hash, Arc::clone(&read), read.text_bytes());
        Ok(read)
    }

    /// The content of a dispatch of the snapshot `snapshot_hash`: the kept snapshot and
    /// prompt texts, and a package URL presigned now (what a render reads).
    pub async fn snapshot_dispatch_content(
        &self,
        snapshot_hash: &str,
        now: UnixSeconds,
    ) -> Result<DispatchContent, ContentError> {
        let read = self.snapshot_content(snapshot_hash).await?;
        content_with_url(self.blobs.as_ref(), &read, self.urls, now).await
    }

    /// The blob store's location (`file:DIR`, `s3://…`).
    pub fn blob_location(&self) -> String {
        self.blobs.location()
    }
}

impl ContentSource for BlobContent {
    fn content<'a>(
        &'a self,
        agent: &'a Agent,
        now: UnixSeconds,
    ) -> BoxFuture<'a, Result<DispatchContent, ContentError>> {
        Box::pin(self.snapshot_dispatch_content(&agent.snapshot_hash, now))
    }

    fn layer_url<'a>(
        &'a self,
        digest: &'a str,
        now: UnixSeconds,
    ) -> BoxFuture<'a, Result<Option<(String, UnixSeconds)>, ContentError>> {
        Box::pin(async move {
            let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
            let key = BlobKey::layer(hex)?;
            let url = self.blobs.presigned_get_url(&key, self.urls.expiry).await?;
            let expires_at =
                now.saturating_add(i64::try_from(self.urls.expiry.as_secs()).unwrap_or(i64::MAX));
            Ok(Some((url, expires_at)))
        })
    }

    fn config<'a>(
        &'a self,
        state: &'a dyn StateStore,
        spec: &'a EnvSpec,
        now: UnixSeconds,
    ) -> BoxFuture<'a, Result<Option<Value>, ContentError>> {
        Box::pin(load_config_content(
            state,
            self.blobs.as_ref(),
            &self.kept.bundles,
            spec,
            self.urls,
            now,
        ))
    }
}

/// No blob store: the content is what the agent record says (its name and
/// package digest), with no prompts; an agent with a package is refused
/// ([`ContentError::NoBlobStore`]: its package cannot be delivered) and one
/// without (an empty digest) ships inline. For library tests of evaluation
/// and for stores without blobs; every binary wires [`BlobContent`].
#[derive(Debug, Clone, Copy, Default)]
pub struct RecordOnlyContent {
    /// Tests of evaluation: describe the package by digest, inline, rather
    /// than refuse it.
    pub lenient: bool,
}

impl ContentSource for RecordOnlyContent {
    fn content<'a>(
        &'a self,
        agent: &'a Agent,
        _now: UnixSeconds,
    ) -> BoxFuture<'a, Result<DispatchContent, ContentError>> {
        Box::pin(async move {
            if !agent.payload_digest.is_empty() && !self.lenient {
                return Err(ContentError::NoBlobStore);
            }
            let snapshot = SnapshotView {
                name: agent.name.clone(),
                payload: crate::env::PayloadView {
                    digest: agent.payload_digest.clone(),
                    size: 0,
                    inline: true,
                },
                ..Default::default()
            };
            Ok(DispatchContent {
                package: Some(PackageRef::inline(agent.payload_digest.clone(), 0)),
                snapshot,
                prompts: PromptTexts::default(),
            })
        })
    }

    fn config<'a>(
        &'a self,
        _state: &'a dyn StateStore,
        spec: &'a EnvSpec,
        _now: UnixSeconds,
    ) -> BoxFuture<'a, Result<Option<Value>, ContentError>> {
        // Tests of evaluation describe no config rather than refuse it.
        Box::pin(async move {
            if self.lenient {
                return Ok(None);
            }
            config_without_blob_store(spec)
        })
    }
}
