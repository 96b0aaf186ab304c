//! Re-syncing unchanged content reuses the build its registered record carries
//! (and, for a record written before records carried one, the stored fingerprint
//! record): the archives are not built again (each file is read once, to hash it,
//! instead of twice), and a changed byte builds that agent's archive again.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Mutex;

use astrolift_manifest::tree::ReadError;
use astrolift_manifest::{FileEntry, MemTree, SourceTree, ValidateOptions};
use astrolift_package::PayloadTree;
use astrolift_package::snapshot::{LEGACY_SNAPSHOT_SCHEMA, canonical_json};
use astrolift_store::blob::BlobKey;
use astrolift_store::state::{Agent, AgentChange, AuditAction, ChangeSet};
use astrolift_sync::{Mode, Report, Stores, SyncRequest, sync};
use sha2::{Digest, Sha256};

use crate::harness::{Backend, REPO, edit, monorepo, on_both_backends, open};

on_both_backends!(
    another_compression_of_the_same_content_is_unchanged,
    an_agent_registered_under_its_v1_version_keeps_it,
    unchanged_rerun_builds_no_archive,
    one_changed_byte_builds_that_archive_again,
    check_mode_reuses_records_too,
    a_record_without_a_build_falls_back_on_the_fingerprint_record,
);

const TRIAGE_BRIEF: &str = "agents/triage/brief/README.md";

/// A tree that counts how often each file is opened for streaming.
struct CountingTree {
    inner: MemTree,
    opened: Mutex<BTreeMap<String, usize>>,
}

impl CountingTree {
    fn new(inner: MemTree) -> Self {
        Self {
            inner,
            opened: Mutex::default(),
        }
    }

    /// Opens of `path` since the last call, and resets every count.
    fn take(&self) -> BTreeMap<String, usize> {
        std::mem::take(&mut *self.opened.lock().expect("not poisoned"))
    }
}

impl SourceTree for CountingTree {
    fn entries(&self) -> &[FileEntry] {
        self.inner.entries()
    }

    fn read(&self, path: &str, limit: u64) -> Result<Cow<'_, [u8]>, ReadError> {
        self.inner.read(path, limit)
    }
}

impl PayloadTree for CountingTree {
    fn open_file(&self, path: &str) -> Result<Box<dyn Read + '_>, ReadError> {
        *self
            .opened
            .lock()
            .expect("not poisoned")
            .entry(path.to_owned())
            .or_default() += 1;
        self.inner.open_file(path)
    }
}

async fn run(stores: &Stores, tree: &CountingTree, mode: Mode) -> Report {
    let request = SyncRequest {
        repository: REPO.into(),
        commit: "c1".into(),
        commit_time: 100,
        before: None,
        order: None,
        git_ref: Some("main".into()),
        mode,
        now: 100,
        validate: ValidateOptions::default(),
        skills: None,
        previews: None,
        samples: None,
        relock: None,
    };
    let report = sync(tree, &request, stores, &|_, _| {})
        .await
        .expect("sync succeeds");
    assert_eq!(
        report.counts.diagnostics.errors, 0,
        "{:#?}",
        report.diagnostics
    );
    report
}

fn apply_mode() -> Mode {
    Mode::apply_all("proj-1")
}

fn digests(report: &Report) -> Vec<(String, Option<String>)> {
    report
        .plan
        .iter()
        .map(|e| (e.manifest.clone(), e.digest.clone()))
        .collect()
}

/// The most times any file of the registered `triage` agent was opened
/// (the disabled, never registered `reporter` stores no archive, so it is
/// built on every sync).
fn most_opens(opened: &BTreeMap<String, usize>) -> usize {
    opened
        .iter()
        .filter(|(path, _)| path.starts_with("agents/triage/"))
        .map(|(_, n)| *n)
        .max()
        .unwrap_or(0)
}

async fn unchanged_rerun_builds_no_archive(stores: &Stores) {
    let tree = CountingTree::new(monorepo());
    let first = run(stores, &tree, apply_mode()).await;
    let built = tree.take();
    assert_eq!(
        built.get(TRIAGE_BRIEF),
        Some(&2),
        "the first sync hashes, then archives: {built:?}"
    );
    // One archive and one snapshot per packaged agent (the disabled, never
    // registered `reporter` stores nothing), and the snapshot of the workspace
    // manifest; the build is on the agent's record, not in a blob of its own.
    assert_eq!(first.counts.blob_puts, 3);

    let puts_before = stores.blobs.stats().puts;
    let second = run(stores, &tree, apply_mode()).await;
    let reread = tree.take();
    assert_eq!(
        most_opens(&reread),
        1,
        "the re-run only hashes each file once: {reread:?}"
    );
    assert_eq!(digests(&second), digests(&first));
    assert_eq!(
        (second.counts.blob_puts, second.counts.state_writes),
        (0, 0)
    );
    assert_eq!(stores.blobs.stats().puts, puts_before);
}

async fn one_changed_byte_builds_that_archive_again(stores: &Stores) {
    let tree = CountingTree::new(monorepo());
    let first = run(stores, &tree, apply_mode()).await;
    tree.take();

    let mut edited = monorepo();
    edit(&mut edited, TRIAGE_BRIEF, "#", "##");
    let tree = CountingTree::new(edited);
    let second = run(stores, &tree, apply_mode()).await;
    let opened = tree.take();
    assert_eq!(
        opened.get(TRIAGE_BRIEF),
        Some(&2),
        "the changed agent is archived again: {opened:?}"
    );
    let triage = |r: &Report| {
        r.plan
            .iter()
            .find(|e| e.manifest == "agents/triage/astrolift.toml")
            .map(|e| (e.status.as_str(), e.digest.clone()))
    };
    let (status, digest) = triage(&second).expect("triage planned");
    assert_eq!(status, "changed");
    assert_ne!(digest, triage(&first).and_then(|t| t.1));
    // The new archive and its snapshot.
    assert_eq!(second.counts.blob_puts, 2);

    // Back to the first content: the record carries the second build, so the first
    // is built again, and is the same archive: nothing new is stored.
    let tree = CountingTree::new(monorepo());
    let third = run(stores, &tree, apply_mode()).await;
    assert_eq!(most_opens(&tree.take()), 2);
    assert_eq!(digests(&third), digests(&first));
    assert_eq!(third.counts.blob_puts, 0);
}

async fn check_mode_reuses_records_too(stores: &Stores) {
    let tree = CountingTree::new(monorepo());
    let checked = run(stores, &tree, Mode::Check).await;
    assert_eq!(
        tree.take().get(TRIAGE_BRIEF),
        Some(&2),
        "nothing stored yet: built"
    );
    let applied = run(stores, &tree, apply_mode()).await;
    tree.take();
    let rechecked = run(stores, &tree, Mode::Check).await;
    assert_eq!(most_opens(&tree.take()), 1);
    assert_eq!(digests(&checked), digests(&applied));
    assert_eq!(digests(&rechecked), digests(&applied));
}

/// An agent whose archive a record promises but the store lost is built
/// and uploaded again before any state points at it (directory store: the
/// test deletes the object file).
#[tokio::test]
async fn a_lost_archive_is_built_again() {
    let Some(test) = open(Backend::Embedded, "lost_archive").await else {
        return;
    };
    let stores = &test.stores;
    let tree = CountingTree::new(monorepo());
    let first = run(stores, &tree, apply_mode()).await;
    let digest = first
        .plan
        .iter()
        .find_map(|e| (e.status.as_str() == "added").then(|| e.digest.clone()))
        .flatten()
        .expect("triage added");
    let location = stores.blobs.location();
    let root = location.strip_prefix("file:").expect("a directory store");
    let hex = digest.strip_prefix("sha256:").expect("sha256 digest");
    let archive = std::path::Path::new(root).join(format!("packages/sha256/{hex}.tar.gz"));
    let original = std::fs::read(&archive).expect("archive stored");
    std::fs::remove_file(&archive).expect("delete the archive");

    // A new alias changes the registration, not the snapshot or the archive.
    let mut realiased = monorepo();
    edit(
        &mut realiased,
        "astrolift.agents.toml",
        "alias = \"triage\"",
        "alias = \"triage-2\"",
    );
    let tree = CountingTree::new(realiased);
    let second = run(stores, &tree, apply_mode()).await;
    assert_eq!(second.counts.blob_puts, 1, "only the lost archive");
    assert_eq!(
        std::fs::read(&archive).expect("archive stored again"),
        original
    );
}

/// Rewrites the registered `triage` agent with `edit` (as an older build would have
/// written it), through the store's conditional apply; with `version`, its trigger
/// bindings name that snapshot too, as that build's did.
async fn rewrite_triage(
    stores: &Stores,
    version: Option<&str>,
    edit: impl FnOnce(&mut Agent),
) -> Agent {
    let mut agent = rewrite_lookup(stores).await;
    let expected = agent.version;
    edit(&mut agent);
    let mut bindings = Vec::new();
    if let Some(version) = version {
        agent.bindings_digest = None;
        bindings = stores
            .state
            .list_repository_trigger_bindings(REPO)
            .await
            .expect("bindings");
        bindings.retain(|b| b.manifest_path == agent.manifest_path);
        for binding in &mut bindings {
            binding.snapshot_hash = version.to_owned();
        }
    }
    let mut change = AgentChange::new(
        agent,
        Some(expected),
        AuditAction::Changed,
        "c0",
        "test",
        50,
    );
    change.put_bindings = bindings;
    let written = change.agent.clone();
    let mut set = ChangeSet::new(REPO);
    set.agents.push(change);
    stores.state.apply(set).await.expect("apply");
    written
}

fn triage_status(report: &Report) -> &'static str {
    report
        .plan
        .iter()
        .find(|e| e.manifest.starts_with("agents/triage/"))
        .map(|e| e.status.as_str())
        .expect("triage is planned")
}

/// An agent registered with an archive another compressor made of the same content (its
/// record names other archive bytes) is the same version: planned unchanged, nothing
/// uploaded or written, and it keeps the archive it names (docs/reference.md §6).
async fn another_compression_of_the_same_content_is_unchanged(stores: &Stores) {
    let tree = CountingTree::new(monorepo());
    run(stores, &tree, apply_mode()).await;
    let other = format!("sha256:{}", "0".repeat(64));
    let registered = rewrite_triage(stores, None, |agent| {
        agent.payload_digest.clone_from(&other)
    })
    .await;
    let again = run(stores, &tree, apply_mode()).await;
    assert_eq!(triage_status(&again), "unchanged");
    assert_eq!((again.counts.blob_puts, again.counts.state_writes), (0, 0));
    let now = rewrite_lookup(stores).await;
    assert_eq!(now.payload_digest, other);
    assert_eq!(now.version, registered.version);
}

/// An agent registered under the version an `astrolift.snapshot/v1` snapshot had keeps
/// it while its content is unchanged (docs/operations.md, "Compatibility shims"); a
/// changed file registers the current version.
async fn an_agent_registered_under_its_v1_version_keeps_it(stores: &Stores) {
    let tree = CountingTree::new(monorepo());
    let first = run(stores, &tree, apply_mode()).await;
    let legacy = legacy_version_of_triage(stores, &first).await;
    rewrite_triage(stores, Some(&legacy), |agent| {
        agent.snapshot_hash.clone_from(&legacy);
    })
    .await;
    let again = run(stores, &tree, apply_mode()).await;
    assert_eq!(triage_status(&again), "unchanged");
    assert_eq!(again.counts.state_writes, 0);
    assert_eq!(rewrite_lookup(stores).await.snapshot_hash, legacy);

    let mut changed = monorepo();
    edit(&mut changed, TRIAGE_BRIEF, "#", "##");
    let changed = run(stores, &CountingTree::new(changed), apply_mode()).await;
    assert_eq!(triage_status(&changed), "changed");
    assert_ne!(rewrite_lookup(stores).await.snapshot_hash, legacy);
}

async fn rewrite_lookup(stores: &Stores) -> Agent {
    let agents = stores.state.list_agents(REPO).await.expect("agents");
    agents
        .into_iter()
        .find(|a| a.manifest_path.starts_with("agents/triage/"))
        .expect("triage is registered")
}

/// The v1 version of the registered `triage` agent: its stored snapshot hashed as a v1
/// build hashed it (the whole canonical JSON, schema v1, no `content_digest`).
async fn legacy_version_of_triage(stores: &Stores, report: &Report) -> String {
    let version = report
        .plan
        .iter()
        .find(|e| e.manifest.starts_with("agents/triage/"))
        .and_then(|e| e.snapshot.clone())
        .expect("triage is packaged");
    let key = BlobKey::snapshot(&version).expect("a snapshot key");
    let bytes = stores
        .blobs
        .get(&key)
        .await
        .expect("the snapshot is stored");
    let mut json: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
    json["schema"] = serde_json::Value::from(LEGACY_SNAPSHOT_SCHEMA);
    let payload = json["payload"].as_object_mut().expect("a payload");
    assert!(payload.remove("content_digest").is_some());
    hex::encode(Sha256::digest(canonical_json(&json)))
}

/// A registered record written before records carried their build: a re-run reuses the
/// fingerprint record an older build stored for the same slice (one read, no archive
/// built), and builds the archive when there is none; neither writes anything.
async fn a_record_without_a_build_falls_back_on_the_fingerprint_record(stores: &Stores) {
    let tree = CountingTree::new(monorepo());
    run(stores, &tree, apply_mode()).await;
    tree.take();
    let registered = rewrite_lookup(stores).await;
    let build = registered
        .package_build
        .clone()
        .expect("a sync records the build");
    let legacy = rewrite_triage(stores, None, |agent| agent.package_build = None).await;
    let builds_again = run(stores, &tree, apply_mode()).await;
    assert_eq!(
        most_opens(&tree.take()),
        2,
        "no build on record: archived again"
    );
    assert_eq!(builds_again.counts.state_writes, 0);

    let record = astrolift_package::FingerprintRecord {
        format: astrolift_package::FINGERPRINT_FORMAT.to_owned(),
        digest: legacy.payload_digest.clone(),
        content_digest: build.content_digest.clone(),
        size: build.size,
        files: build.files,
        uncompressed_size: build.uncompressed_size,
    };
    let key = BlobKey::package_fingerprint(&build.fingerprint).expect("key");
    let body = astrolift_store::BlobBody::Bytes(record.to_json());
    stores
        .blobs
        .put_if_absent(&key, body, "application/json")
        .await
        .expect("fingerprint record");
    let reused = run(stores, &tree, apply_mode()).await;
    assert_eq!(most_opens(&tree.take()), 1, "the stored record is reused");
    assert_eq!(
        (reused.counts.blob_puts, reused.counts.state_writes),
        (0, 0)
    );
}
