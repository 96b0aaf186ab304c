//! A dispatch's `config` (docs/reference.md §13): the packaged config manifest
//! of its env spec, with a presigned URL for every file.
//!
//! The sync of the config repository registered the bundle
//! ([`astrolift_store::state::ConfigPackage`], `configs/sha256/<hex>.json`);
//! this reads it and presigns each file's content-addressed blob
//! (`configs/files/sha256/<hex>`). A config that is not packaged (yet), whose
//! bundle is gone, or with no blob store to deliver it fails the dispatch
//! ([`ContentError`]): it is never recorded as queued without its files.

use std::sync::Arc;

use astrolift_store::StoreError;
use astrolift_store::blob::{BlobKey, BlobStore};
use astrolift_store::state::{EnvSpec, StateStore, UnixSeconds};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::kept::Kept;
use crate::message::EnvSpecRef;
use crate::source::{ContentError, ContentSource, UrlOptions};

#[derive(Debug, Deserialize)]
pub(crate) struct StoredBundle {
    document: Value,
    files: Vec<StoredFile>,
}

#[derive(Debug, Deserialize)]
struct StoredFile {
    path: String,
    digest: String,
    size: u64,
    mode: String,
}

/// The `config` of a dispatch with `spec`: `None` when the spec names no config manifest.
/// The package record is read each time (a sync may move it); the bundle it names is
/// content-addressed, so it is read once and `kept`.
pub(crate) async fn load_config_content(
    state: &dyn StateStore,
    blobs: &dyn BlobStore,
    kept: &Kept<StoredBundle>,
    spec: &EnvSpec,
    options: UrlOptions,
    now: UnixSeconds,
) -> Result<Option<Value>, ContentError> {
    let Some((repository, manifest_path)) = spec.config_manifest() else {
        return Ok(None);
    };
    let not_packaged = || ContentError::ConfigNotPackaged {
        env_spec: spec.name.clone(),
        repository: repository.to_owned(),
        manifest_path: manifest_path.to_owned(),
    };
    let record = state
        .config_packages()
        .get_config_package(repository, manifest_path)
        .await?
        .ok_or_else(not_packaged)?;
    let bundle = kept_bundle(blobs, kept, &record.bundle_hash).await?;
    let expires_at =
        now.saturating_add(i64::try_from(options.expiry.as_secs()).unwrap_or(i64::MAX));
    let mut files = Vec::with_capacity(bundle.files.len());
    for file in &bundle.files {
        let key = BlobKey::config_file(&file.digest)?;
        let url = blobs.presigned_get_url(&key, options.expiry).await?;
        files.push(json!({
            "path": file.path, "digest": file.digest, "size": file.size, "mode": file.mode,
            "url": url, "expires_at": expires_at,
        }));
    }
    Ok(Some(json!({
        "repository": repository,
        "manifest_path": manifest_path,
        "commit": record.commit,
        "bundle": format!("sha256:{}", record.bundle_hash),
        "document": bundle.document,
        "files": files,
    })))
}

/// The bundle `hash`, kept or read whole: the sync wrote it, bounded by the config limits
/// (file count and sizes), so it is not a repository's bytes.
async fn kept_bundle(
    blobs: &dyn BlobStore,
    kept: &Kept<StoredBundle>,
    hash: &str,
) -> Result<Arc<StoredBundle>, ContentError> {
    if let Some(bundle) = kept.get(hash) {
        return Ok(bundle);
    }
    let key = BlobKey::config_bundle(hash)?;
    let bytes = blobs.get(&key).await.map_err(|error| match error {
        StoreError::NotFound(_) => ContentError::MissingConfig(hash.to_owned()),
        other => ContentError::Store(other),
    })?;
    let bundle: Arc<StoredBundle> =
        Arc::new(serde_json::from_slice(&bytes).map_err(|e| ContentError::Config(e.to_string()))?);
    kept.keep(hash, Arc::clone(&bundle), bytes.len());
    Ok(bundle)
}

/// The env spec part of a dispatch: the reference the message carries and the config
/// `content` hands over, or why the config cannot be delivered.
pub async fn env_spec_parts(
    content: &dyn ContentSource,
    state: &dyn StateStore,
    spec: Option<&EnvSpec>,
    now: UnixSeconds,
) -> Result<(Option<EnvSpecRef>, Option<Value>), ContentError> {
    let Some(spec) = spec else {
        return Ok((None, None));
    };
    let config = content.config(state, spec, now).await?;
    Ok((Some(EnvSpecRef::of(spec)), config))
}

/// What a dispatch with `spec` gets without a blob store: nothing when it names no config
/// manifest, else the refusal (its files cannot be delivered).
pub fn config_without_blob_store(spec: &EnvSpec) -> Result<Option<Value>, ContentError> {
    match spec.config_manifest() {
        None => Ok(None),
        Some(_) => Err(ContentError::ConfigNoBlobStore {
            env_spec: spec.name.clone(),
        }),
    }
}
