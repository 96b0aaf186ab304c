//! Stores per backend, a mutable copy of the example monorepo, and a runner.

use std::path::Path;
use std::sync::Arc;

use astrolift_manifest::{MemTree, SourceTree, ValidateOptions};
use astrolift_store::blob::{FsBlobStore, S3BlobStore};
use astrolift_store::state::{DynamoStateStore, EnvSpec, SqliteStateStore};
use astrolift_store::testing::{aws_endpoint, unique_name};
use astrolift_sync::{CommitOrder, Mode, Report, Stores, SyncError, SyncRequest, sync};

pub const REPO: &str = "acme/support-agents";

#[derive(Debug, Clone, Copy)]
pub enum Backend {
    Embedded,
    Aws,
}

/// Stores for one test, and what keeps them alive.
pub struct TestStores {
    pub stores: Stores,
    _dir: tempfile::TempDir,
}

pub async fn open(backend: Backend, test: &str) -> Option<TestStores> {
    let dir = tempfile::tempdir().expect("temp dir");
    let stores = match backend {
        Backend::Embedded => Stores {
            blobs: Arc::new(FsBlobStore::new(dir.path().join("blobs")).expect("blob dir")),
            state: Arc::new(
                SqliteStateStore::open(dir.path().join("state.db"))
                    .await
                    .expect("sqlite"),
            ),
            concurrency: Default::default(),
        },
        Backend::Aws => {
            aws_endpoint(test)?;
            let name = unique_name("sync");
            let blobs = S3BlobStore::from_env(&name, "", Default::default())
                .await
                .expect("s3 client");
            blobs.create_bucket().await.expect("create bucket");
            let state = DynamoStateStore::from_env(&name)
                .await
                .expect("dynamodb client");
            state.create_table().await.expect("create table");
            Stores {
                blobs: Arc::new(blobs),
                state: Arc::new(state),
                concurrency: Default::default(),
            }
        }
    };
    define_env_spec(&stores, "triage-prod", PROJECT).await;
    Some(TestStores { stores, _dir: dir })
}

/// The project the harness applies to.
pub const PROJECT: &str = "proj-1";

/// Defines the env spec `name` for `project` (the example monorepo's triage
/// agent names `triage-prod`, which must belong to the project applied to).
pub async fn define_env_spec(stores: &Stores, name: &str, project: &str) {
    let spec = EnvSpec {
        name: name.into(),
        project_id: Some(project.into()),
        agent_type: Some("claude".into()),
        runtime: Some("claude-code".into()),
        config_repo: "acme/config".into(),
        manifest_path: "envs/triage.toml".into(),
        updated_at: 1,
        previews: false,
    };
    stores.state.put_env_spec(&spec).await.expect("env spec");
}

/// The example monorepo (`examples/monorepo`), in memory, ready to be edited.
pub fn monorepo() -> MemTree {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/monorepo");
    let dir = astrolift_manifest::DirTree::open(&root, 10_000).expect("examples/monorepo");
    let mut tree = MemTree::new();
    for entry in dir.entries() {
        let bytes = dir.read(&entry.path, u64::MAX).expect("readable");
        tree.insert(entry.path.clone(), bytes.into_owned(), entry.executable);
    }
    tree
}

/// The example monorepo with the disabled `reporter` agent enabled too.
pub fn both_enabled() -> MemTree {
    let mut tree = monorepo();
    edit(
        &mut tree,
        "astrolift.agents.toml",
        "enabled = false",
        "enabled = true",
    );
    tree
}

/// A monorepo of `agents` agents (`agents/agent-NNNN/astrolift.toml`, each with a brief whose
/// text is `brief`), all listed in its federation file.
pub fn many_agents(agents: usize, brief: &str) -> MemTree {
    let mut tree = MemTree::new();
    let mut federation = String::from(
        "schema = \"astrolift.agent.federation/v1\"\nname = \"many\"\n\
         include = [\"agents/*/astrolift.toml\"]\nauto_register_new = false\n",
    );
    for n in 0..agents {
        let dir = format!("agents/agent-{n:04}");
        federation.push_str(&format!(
            "\n[[agents]]\nmanifest = \"{dir}/astrolift.toml\"\n"
        ));
        let manifest = format!(
            "astrolift_version = 1\nname = \"agent-{n:04}\"\nbrief = \"brief/README.md\"\n\n\
             [[workloads]]\nname = \"agent-{n:04}\"\nkind = \"agent\"\nrun_family = \"task\"\n\
             max_retries = 1\ntool_timeout_seconds = 600\nresult_ttl_hours = 24\n\n\
             [[workloads.containers]]\nname = \"agent\"\nis_primary = true\n\
             image_ref = \"ghcr.io/calliopeai/astrolift-agent-claude-code:latest\"\n"
        );
        tree.insert(format!("{dir}/astrolift.toml"), manifest, false);
        tree.insert(
            format!("{dir}/brief/README.md"),
            format!("# Agent {n}\n\n{brief}\n"),
            false,
        );
    }
    tree.insert("astrolift.agents.toml", federation, false);
    tree
}

/// Replaces `from` with `to` in one file of the tree.
pub fn edit(tree: &mut MemTree, path: &str, from: &str, to: &str) {
    let text = tree.read_text(path, u64::MAX).expect("file exists");
    assert!(text.contains(from), "{path} does not contain {from:?}");
    tree.insert(path, text.replace(from, to), false);
}

/// Removes every file under `dir`.
pub fn remove_dir(tree: &MemTree, dir: &str) -> MemTree {
    let mut kept = MemTree::new();
    for entry in tree
        .entries()
        .iter()
        .filter(|e| !e.path.starts_with(&format!("{dir}/")))
    {
        let bytes = tree.read(&entry.path, u64::MAX).expect("readable");
        kept.insert(entry.path.clone(), bytes.into_owned(), entry.executable);
    }
    kept
}

/// One sync of `tree` as commit `commit` at time `time`.
pub async fn run(
    stores: &Stores,
    tree: &MemTree,
    commit: &str,
    time: i64,
    apply: bool,
) -> Result<Report, SyncError> {
    run_pushed(stores, tree, commit, time, apply, Push::default()).await
}

/// What a push tells the ordering rule: its `before`, and the ancestry oracle.
#[derive(Debug, Default)]
pub struct Push {
    pub before: Option<String>,
    pub order: Option<Arc<dyn CommitOrder>>,
}

/// One sync of `tree` as commit `commit` at time `time`, pushed as `push` says.
pub async fn run_pushed(
    stores: &Stores,
    tree: &MemTree,
    commit: &str,
    time: i64,
    apply: bool,
    push: Push,
) -> Result<Report, SyncError> {
    let request = SyncRequest {
        repository: REPO.into(),
        commit: commit.into(),
        commit_time: time,
        before: push.before,
        order: push.order,
        git_ref: Some("main".into()),
        mode: if apply {
            Mode::apply_all(PROJECT)
        } else {
            Mode::Check
        },
        now: time,
        validate: ValidateOptions::default(),
        skills: None,
        previews: None,
        samples: None,
        relock: None,
    };
    sync(tree, &request, stores, &|_, _| {}).await
}

pub async fn apply(stores: &Stores, tree: &MemTree, commit: &str, time: i64) -> Report {
    run(stores, tree, commit, time, true)
        .await
        .expect("sync succeeds")
}

/// `(manifest, status)` of every plan entry.
pub fn statuses(report: &Report) -> Vec<(String, &'static str)> {
    report
        .plan
        .iter()
        .map(|e| (e.manifest.clone(), e.status.as_str()))
        .collect()
}

/// Runs an async scenario `fn(&Stores)` once per backend.
macro_rules! on_both_backends {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            #[tokio::test]
            async fn embedded() {
                if let Some(stores) = $crate::harness::open($crate::harness::Backend::Embedded, stringify!($scenario)).await {
                    super::$scenario(&stores.stores).await;
                }
            }

            #[tokio::test]
            async fn aws() {
                if let Some(stores) = $crate::harness::open($crate::harness::Backend::Aws, stringify!($scenario)).await {
                    super::$scenario(&stores.stores).await;
                }
            }
        }
    )*};
}
pub(crate) use on_both_backends;
