//! The Git Data API: blobs, trees, commits and branch refs, answered like GitHub.
//!
//! - `POST /repos/{owner}/{repo}/git/blobs` (`content`, `encoding` `utf-8` or `base64`): `201`
//!   with the blob's sha, git's own (`sha1("blob <len>\0" + content)`);
//! - `POST .../git/trees` (`base_tree`, `tree`): `201` with the new tree's sha and its top-level
//!   entries. `base_tree` is a tree made here, a commit made here (its tree), or a commit
//!   [`FakeGitHub::add_repo`](crate::FakeGitHub::add_repo) serves (its fixture directory, whose
//!   tree the commits route names by the commit's own sha); the new tree is its files with the
//!   entries applied: a `blob` by `sha` or `content` (added or replaced), a `tree` by `sha`
//!   (its files under `path`), and `"sha": null` removing `path` (a file or a directory). Tree
//!   and commit shas are computed as git computes them, so the same content has the same sha;
//! - `POST .../git/commits` (`message`, `tree`, `parents`, `author`, `committer`): `201`. The
//!   commit's files are written to a scratch directory of the server and served like
//!   `add_repo`'s (tarball, commits route); its parents join the compare route's graph;
//! - `GET .../git/ref/heads/{branch}`: the branch's head, the same refs `add_repo` sets (its
//!   last commit for that ref); `404 Not Found` with GitHub's generic documentation link for
//!   an unknown one;
//! - `POST .../git/refs` (`ref`, `sha`): `201`; `422 Reference already exists`;
//! - `PATCH .../git/refs/heads/{branch}` (`sha`, `force`): `200`; `422 Update is not a fast
//!   forward` when `force` is false and the new commit does not descend from the head, `422
//!   Reference does not exist` for an unknown branch. Open pull requests of the branch follow
//!   it, as they follow a push.
//!
//! Every route asks a token that may read the repository (401, or 404 for a repository in
//! another installation), and an unknown repository is `404`. The writes answer `403 Resource
//! not accessible by integration` for a repository whose installation has not granted
//! `contents: write` ([`FakeGitHub::deny_contents_write`](crate::FakeGitHub::deny_contents_write)).
//! A body that is not JSON is `400 Problems parsing JSON`; a missing field is `422` with
//! GitHub's `Invalid request.` message; an unknown object is `422` with GitHub's message for it
//! (`base_tree is not a valid tree oid`, `tree.sha <sha> is not a valid blob`, `Tree SHA does
//! not exist`, `Parent SHA does not exist or is not a commit object`, `Object does not exist`).
//!
//! Not modelled: submodule entries (`type: commit`), tags, signatures (every commit is
//! `unsigned`), and the file times of a tarball (the fixed time of every archive).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::path::{Path as FsPath, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use axum::body::Bytes;
use axum::extract::{Path, State as AxumState};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use base64::Engine as _;
use serde_json::{Map, Value, json};
use sha1::{Digest, Sha1};

use crate::{
    APP_BOT_LOGIN, FakeRepo, Shared, State, github_error, json_response, repo_refusal,
    write_refusal,
};

const BLOB_DOCS: &str = "https://docs.github.com/rest/git/blobs#create-a-blob";
const TREE_DOCS: &str = "https://docs.github.com/rest/git/trees#create-a-tree";
const COMMIT_DOCS: &str = "https://docs.github.com/rest/git/commits#create-a-commit";
const GET_REF_DOCS: &str = "https://docs.github.com/rest/git/refs#get-a-reference";
const CREATE_REF_DOCS: &str = "https://docs.github.com/rest/git/refs#create-a-reference";
const UPDATE_REF_DOCS: &str = "https://docs.github.com/rest/git/refs#update-a-reference";
/// GitHub answers an unknown ref with its generic documentation link, not the route's.
const GENERIC_DOCS: &str = "https://docs.github.com/rest";
/// The date of every commit `add_repo` serves: the fixed time of the fake's tarballs.
const FIXTURE_COMMIT_DATE: &str = "2023-11-14T22:13:20Z";
/// Who made the commits `add_repo` serves, as the commits route says.
const FIXTURE_AUTHOR: (&str, &str) = ("mona", "mona@example.com");

/// A file's mode in a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    File,
    Executable,
    Symlink,
}

impl Mode {
    fn parse(mode: &str) -> Option<Self> {
        match mode {
            "100644" => Some(Mode::File),
            "100755" => Some(Mode::Executable),
            "120000" => Some(Mode::Symlink),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Mode::File => "100644",
            Mode::Executable => "100755",
            Mode::Symlink => "120000",
        }
    }
}

/// One file of a tree: its mode and blob.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileEntry {
    mode: Mode,
    blob: String,
}

/// A tree as its files, by path (`a/b.txt`); directories are implied by the paths.
type Files = BTreeMap<String, FileEntry>;

/// A commit's author or committer.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Signature {
    name: String,
    email: String,
    date: jiff::Timestamp,
}

impl Signature {
    fn to_json(&self) -> Value {
        json!({ "name": self.name, "email": self.email, "date": rfc3339(self.date) })
    }

    /// `Name <email> <epoch seconds> +0000`, as a git commit object holds it.
    fn git_line(&self) -> String {
        let seconds = self.date.as_second();
        format!("{} <{}> {seconds} +0000", self.name, self.email)
    }
}

#[derive(Debug, Clone)]
struct StoredCommit {
    tree: String,
    parents: Vec<String>,
    message: String,
    author: Signature,
    committer: Signature,
}

/// The Git objects made through the API in one repository.
#[derive(Debug, Default)]
pub(crate) struct GitObjects {
    blobs: HashMap<String, Vec<u8>>,
    /// Every tree made (subtrees included) and every fixture tree read, by sha.
    trees: HashMap<String, Files>,
    commits: HashMap<String, StoredCommit>,
}

/// A commit as the fake holds it, for a test to inspect
/// ([`FakeGitHub::commit`](crate::FakeGitHub::commit)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeCommit {
    pub sha: String,
    /// The tree's sha (a commit `add_repo` serves names its tree by its own sha).
    pub tree: String,
    pub parents: Vec<String>,
    /// Empty for a commit `add_repo` serves.
    pub message: String,
    /// The committer's date, RFC 3339 (`2026-12-01T10:00:00Z`).
    pub date: String,
    /// Its files' contents by path; a symbolic link's is its target.
    pub files: BTreeMap<String, Vec<u8>>,
}

type RepoKey = (String, String);

fn key(owner: &str, repo: &str) -> RepoKey {
    (owner.to_owned(), repo.to_owned())
}

// ---------------------------------------------------------------------------
// Objects and their shas.

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The 20 bytes of a sha of 40 hex digits (every sha here was computed by [`object_sha`]).
fn raw_sha(sha: &str) -> Vec<u8> {
    (0..sha.len() / 2)
        .filter_map(|i| sha.get(2 * i..2 * i + 2))
        .filter_map(|pair| u8::from_str_radix(pair, 16).ok())
        .collect()
}

/// Git's object id: the sha-1 of `"<kind> <len>\0"` and the content.
fn object_sha(kind: &str, content: &[u8]) -> String {
    let mut hasher = Sha1::new();
    hasher.update(format!("{kind} {}\0", content.len()).as_bytes());
    hasher.update(content);
    hex(&hasher.finalize())
}

fn store_blob(objects: &mut GitObjects, content: Vec<u8>) -> String {
    let sha = object_sha("blob", &content);
    objects.blobs.entry(sha.clone()).or_insert(content);
    sha
}

/// A directory of a tree being hashed.
#[derive(Default)]
struct Dir<'f> {
    files: BTreeMap<&'f str, &'f FileEntry>,
    dirs: BTreeMap<&'f str, Dir<'f>>,
}

impl<'f> Dir<'f> {
    fn of(files: &'f Files) -> Self {
        let mut root = Dir::default();
        for (path, entry) in files {
            let mut dir = &mut root;
            let mut rest = path.as_str();
            while let Some((first, tail)) = rest.split_once('/') {
                dir = dir.dirs.entry(first).or_default();
                rest = tail;
            }
            dir.files.insert(rest, entry);
        }
        root
    }
}

/// One entry of a tree as the create-tree answer lists it.
struct Listed {
    name: String,
    mode: &'static str,
    kind: &'static str,
    sha: String,
}

/// Hashes `dir` as git does (entries sorted by name, a directory's name compared with a
/// trailing `/`), storing it and every directory under it; its sha, flat files and entries.
fn hash_dir(dir: &Dir<'_>, objects: &mut GitObjects) -> (String, Files, Vec<Listed>) {
    let mut flat = Files::new();
    let mut listed = Vec::new();
    for (name, entry) in &dir.files {
        flat.insert((*name).to_owned(), (*entry).clone());
        let sha = entry.blob.clone();
        let (mode, kind) = (entry.mode.as_str(), "blob");
        listed.push((
            (*name).to_owned(),
            Listed {
                name: (*name).to_owned(),
                mode,
                kind,
                sha,
            },
        ));
    }
    for (name, sub) in &dir.dirs {
        let (sha, files, _) = hash_dir(sub, objects);
        for (path, entry) in files {
            flat.insert(format!("{name}/{path}"), entry);
        }
        let (mode, kind) = ("040000", "tree");
        listed.push((
            format!("{name}/"),
            Listed {
                name: (*name).to_owned(),
                mode,
                kind,
                sha,
            },
        ));
    }
    listed.sort_by(|a, b| a.0.cmp(&b.0));
    let mut content = Vec::new();
    for (_, entry) in &listed {
        let mode = entry.mode.trim_start_matches('0');
        content.extend_from_slice(format!("{mode} {}\0", entry.name).as_bytes());
        content.extend_from_slice(&raw_sha(&entry.sha));
    }
    let sha = object_sha("tree", &content);
    objects.trees.insert(sha.clone(), flat.clone());
    (
        sha,
        flat,
        listed.into_iter().map(|(_, entry)| entry).collect(),
    )
}

/// The files of a fixture directory, their blobs stored.
fn fixture_files(objects: &mut GitObjects, fixture: &FsPath) -> io::Result<Files> {
    let mut files = Files::new();
    let walk = walkdir::WalkDir::new(fixture)
        .min_depth(1)
        .follow_links(false);
    for entry in walk {
        let entry = entry.map_err(io::Error::other)?;
        let kind = entry.file_type();
        if kind.is_dir() {
            continue;
        }
        let relative = entry
            .path()
            .strip_prefix(fixture)
            .map_err(io::Error::other)?;
        let path = relative.to_string_lossy().replace('\\', "/");
        let (mode, content) = if kind.is_symlink() {
            let target = std::fs::read_link(entry.path())?;
            (
                Mode::Symlink,
                target.to_string_lossy().into_owned().into_bytes(),
            )
        } else {
            let mode = if is_executable(&entry)? {
                Mode::Executable
            } else {
                Mode::File
            };
            (mode, std::fs::read(entry.path())?)
        };
        let blob = store_blob(objects, content);
        files.insert(path, FileEntry { mode, blob });
    }
    Ok(files)
}

#[cfg(unix)]
fn is_executable(entry: &walkdir::DirEntry) -> io::Result<bool> {
    use std::os::unix::fs::PermissionsExt;
    let metadata = entry.metadata().map_err(io::Error::other)?;
    Ok(metadata.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(_entry: &walkdir::DirEntry) -> io::Result<bool> {
    Ok(false)
}

/// The commit `add_repo` (or a commit made here) serves as `sha`.
fn served_commit<'s>(state: &'s State, key: &RepoKey, sha: &str) -> Option<&'s FakeRepo> {
    state.repos.get(key)?.iter().find(|r| r.sha == sha)
}

/// The files of tree `sha`: a tree made here, or the fixture of a commit `add_repo` serves
/// (its tree has the commit's sha); with `peel`, also a commit made here (its tree).
fn tree_files(
    state: &mut State,
    key: &RepoKey,
    sha: &str,
    peel: bool,
) -> io::Result<Option<Files>> {
    let objects = state.git.entry(key.clone()).or_default();
    if let Some(files) = objects.trees.get(sha) {
        return Ok(Some(files.clone()));
    }
    if let Some(commit) = objects.commits.get(sha) {
        let tree = peel.then(|| objects.trees.get(&commit.tree).cloned());
        return Ok(tree.flatten());
    }
    let Some(fixture) = served_commit(state, key, sha).map(|r| r.fixture.clone()) else {
        return Ok(None);
    };
    let objects = state.git.entry(key.clone()).or_default();
    let files = fixture_files(objects, &fixture)?;
    objects.trees.insert(sha.to_owned(), files.clone());
    Ok(Some(files))
}

/// The contents of `files`' blobs, by path.
fn contents(objects: &GitObjects, files: &Files) -> BTreeMap<String, Vec<u8>> {
    files
        .iter()
        .map(|(path, entry)| {
            let content = objects.blobs.get(&entry.blob).cloned().unwrap_or_default();
            (path.clone(), content)
        })
        .collect()
}

/// Where the commits made through the API of all servers of this process are written.
static SCRATCH_SERIAL: AtomicU64 = AtomicU64::new(0);

/// Writes `files` to the server's scratch directory as the commit `sha`'s tree (once: the
/// same sha is the same files) and answers the directory.
fn materialize(
    state: &mut State,
    sha: &str,
    files: &BTreeMap<String, (Mode, Vec<u8>)>,
) -> io::Result<PathBuf> {
    let root = match &state.scratch_dir {
        Some(root) => root.clone(),
        None => {
            let serial = SCRATCH_SERIAL.fetch_add(1, Ordering::Relaxed);
            let name = format!("astrolift-fake-github-{}-{serial}", std::process::id());
            let root = std::env::temp_dir().join(name);
            if root.exists() {
                std::fs::remove_dir_all(&root)?;
            }
            state.scratch_dir = Some(root.clone());
            root
        }
    };
    let dir = root.join(sha);
    if dir.exists() {
        return Ok(dir);
    }
    let partial = root.join(format!("{sha}.partial"));
    if partial.exists() {
        std::fs::remove_dir_all(&partial)?;
    }
    std::fs::create_dir_all(&partial)?;
    for (path, (mode, content)) in files {
        let target = partial.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        write_file(&target, *mode, content)?;
    }
    std::fs::rename(&partial, &dir)?;
    Ok(dir)
}

#[cfg(unix)]
fn write_file(target: &FsPath, mode: Mode, content: &[u8]) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    match mode {
        Mode::Symlink => {
            std::os::unix::fs::symlink(String::from_utf8_lossy(content).as_ref(), target)
        }
        Mode::File | Mode::Executable => {
            std::fs::write(target, content)?;
            let bits = if mode == Mode::Executable {
                0o755
            } else {
                0o644
            };
            std::fs::set_permissions(target, std::fs::Permissions::from_mode(bits))
        }
    }
}

#[cfg(not(unix))]
fn write_file(target: &FsPath, _mode: Mode, content: &[u8]) -> io::Result<()> {
    std::fs::write(target, content)
}

// ---------------------------------------------------------------------------
// Refs.

/// A ref's full name (`refs/heads/main`) as `add_repo` names it (`main` or `refs/...`);
/// `None` for the entry of a commit no ref names.
fn full_ref_name(git_ref: &str) -> Option<String> {
    match git_ref {
        "" => None,
        full if full.starts_with("refs/") => Some(full.to_owned()),
        branch => Some(format!("refs/heads/{branch}")),
    }
}

/// The commit ref `full` (`refs/heads/main`) names: the last one set for it.
fn ref_target<'s>(state: &'s State, key: &RepoKey, full: &str) -> Option<&'s FakeRepo> {
    let entries = state.repos.get(key)?;
    entries
        .iter()
        .rev()
        .find(|r| full_ref_name(&r.git_ref).as_deref() == Some(full))
}

/// The head of branch `branch` of `owner/repo`, as a ref `add_repo` set or one moved here.
pub(crate) fn branch_head(state: &State, owner: &str, repo: &str, branch: &str) -> Option<String> {
    let full = format!("refs/heads/{branch}");
    ref_target(state, &key(owner, repo), &full).map(|r| r.sha.clone())
}

/// Points ref `full` at the served commit `target`, as a push does.
fn set_ref(state: &mut State, key: &RepoKey, full: &str, target: FakeRepo) {
    let git_ref = full.strip_prefix("refs/heads/").unwrap_or(full).to_owned();
    let sha = target.sha.clone();
    let entry = FakeRepo { git_ref, ..target };
    state.repos.entry(key.clone()).or_default().push(entry);
    if let Some(branch) = full.strip_prefix("refs/heads/") {
        crate::pulls::follow_branch(state, &key.0, &key.1, branch, &sha);
    }
}

/// Whether `ancestor` is `sha` or reachable from it through the commit graph.
fn descends(state: &State, key: &RepoKey, sha: &str, ancestor: &str) -> bool {
    let Some(graph) = state.commit_graphs.get(key) else {
        return sha == ancestor;
    };
    let mut seen = HashSet::new();
    let mut stack = vec![sha.to_owned()];
    while let Some(commit) = stack.pop() {
        if commit == ancestor {
            return true;
        }
        if seen.insert(commit.clone()) {
            stack.extend(graph.get(&commit).into_iter().flatten().cloned());
        }
    }
    false
}

fn ref_json(state: &State, key: &RepoKey, full: &str, sha: &str) -> Value {
    let name = full.strip_prefix("refs/").unwrap_or(full);
    json!({
        "ref": full,
        "node_id": format!("REF_{}", hex(&Sha1::digest(full.as_bytes())[..6])),
        "url": api_url(state, key, &format!("git/{full}")),
        "object": {
            "type": "commit",
            "sha": sha,
            "url": api_url(state, key, &format!("git/commits/{sha}")),
        },
        "name": name,
    })
}

// ---------------------------------------------------------------------------
// Request bodies and answers.

/// Why a request is refused before anything changes.
enum Refusal {
    /// The body is not a JSON object: `400 Problems parsing JSON`.
    BadJson,
    /// `422` with this message.
    Unprocessable(String),
    /// The fixture could not be read or the commit written: `500`.
    Io(io::Error),
}

impl Refusal {
    fn missing(field: &str) -> Self {
        Refusal::Unprocessable(format!("Invalid request.\n\n\"{field}\" wasn't supplied."))
    }

    fn into_response(self, docs: &str) -> Response {
        match self {
            Refusal::BadJson => {
                github_error(StatusCode::BAD_REQUEST, "Problems parsing JSON", docs)
            }
            Refusal::Unprocessable(message) => {
                github_error(StatusCode::UNPROCESSABLE_ENTITY, &message, docs)
            }
            Refusal::Io(error) => github_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("the fake could not read or write a tree: {error}"),
                docs,
            ),
        }
    }
}

impl From<io::Error> for Refusal {
    fn from(error: io::Error) -> Self {
        Refusal::Io(error)
    }
}

fn object(body: &[u8]) -> Result<Map<String, Value>, Refusal> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(object)) => Ok(object),
        _ => Err(Refusal::BadJson),
    }
}

fn required_str<'b>(body: &'b Map<String, Value>, field: &str) -> Result<&'b str, Refusal> {
    body.get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| Refusal::missing(field))
}

/// A `201 Created` with GitHub's `Location` header.
fn created(body: Value, location: &str) -> Response {
    let mut headers = HeaderMap::new();
    if let Ok(value) = HeaderValue::from_str(location) {
        headers.insert("location", value);
    }
    json_response(StatusCode::CREATED, body, headers)
}

/// A write to `owner/repo`: refused as GitHub refuses it (the token's 401 or 404, the
/// permission's 403, an unknown repository's 404), else what `make` answers.
fn write(
    state: &Shared,
    (owner, repo): (&str, &str),
    headers: &HeaderMap,
    docs: &str,
    make: impl FnOnce(&mut State, &RepoKey) -> Result<Response, Refusal>,
) -> Response {
    let mut state = state.lock();
    if let Some(refused) = write_refusal(&state, headers, owner, repo, docs) {
        return refused;
    }
    let key = key(owner, repo);
    if !state.repos.contains_key(&key) {
        return github_error(StatusCode::NOT_FOUND, "Not Found", docs);
    }
    make(&mut state, &key).unwrap_or_else(|refusal| refusal.into_response(docs))
}

/// The API URL of `what` (`git/trees/<sha>`) in the repository of `key`.
fn api_url(state: &State, (owner, repo): &RepoKey, what: &str) -> String {
    format!("{}/repos/{owner}/{repo}/{what}", state.base_url)
}

// ---------------------------------------------------------------------------
// Blobs.

pub(crate) async fn create_blob(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    write(
        &state,
        (&owner, &repo),
        &headers,
        BLOB_DOCS,
        |state, key| {
            let content = blob_content(&body)?;
            let sha = store_blob(state.git.entry(key.clone()).or_default(), content);
            let url = api_url(state, key, &format!("git/blobs/{sha}"));
            Ok(created(json!({ "sha": sha, "url": url }), &url))
        },
    )
}

/// The bytes a create-blob body asks for: `content` in `encoding` (`utf-8` unless said).
fn blob_content(body: &[u8]) -> Result<Vec<u8>, Refusal> {
    let body = object(body)?;
    let content = required_str(&body, "content")?;
    match body
        .get("encoding")
        .and_then(Value::as_str)
        .unwrap_or("utf-8")
    {
        "utf-8" | "utf8" => Ok(content.as_bytes().to_vec()),
        "base64" => {
            // GitHub accepts base64 cut into lines, as MIME writes it.
            let compact: String = content.chars().filter(|c| !c.is_whitespace()).collect();
            base64::engine::general_purpose::STANDARD
                .decode(compact)
                .map_err(|_| Refusal::Unprocessable("content is not valid Base64".to_owned()))
        }
        other => Err(Refusal::Unprocessable(format!(
            "encoding must be one of utf-8, base64 (got {other})"
        ))),
    }
}

// ---------------------------------------------------------------------------
// Trees.

pub(crate) async fn create_tree(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    write(
        &state,
        (&owner, &repo),
        &headers,
        TREE_DOCS,
        |state, key| {
            let files = new_tree_files(state, key, &body)?;
            let (sha, _, listed) =
                hash_dir(&Dir::of(&files), state.git.entry(key.clone()).or_default());
            let objects = state.git.get(key);
            let entries: Vec<Value> = listed
                .iter()
                .map(|entry| {
                    let plural = if entry.kind == "blob" {
                        "blobs"
                    } else {
                        "trees"
                    };
                    let mut item = json!({
                        "path": entry.name,
                        "mode": entry.mode,
                        "type": entry.kind,
                        "sha": entry.sha,
                        "url": api_url(state, key, &format!("git/{plural}/{}", entry.sha)),
                    });
                    let blob = objects.and_then(|o| o.blobs.get(&entry.sha));
                    if let Some(blob) = blob.filter(|_| entry.kind == "blob") {
                        item["size"] = json!(blob.len());
                    }
                    item
                })
                .collect();
            let url = api_url(state, key, &format!("git/trees/{sha}"));
            let answer = json!({ "sha": sha, "url": url, "tree": entries, "truncated": false });
            Ok(created(answer, &url))
        },
    )
}

/// The files of the tree a create-tree body asks for.
fn new_tree_files(state: &mut State, key: &RepoKey, body: &[u8]) -> Result<Files, Refusal> {
    let body = object(body)?;
    let Some(Value::Array(entries)) = body.get("tree") else {
        return Err(Refusal::missing("tree"));
    };
    let mut files = match body.get("base_tree").and_then(Value::as_str) {
        None => Files::new(),
        Some(base) => tree_files(state, key, base, true)?.ok_or_else(|| {
            Refusal::Unprocessable("base_tree is not a valid tree oid".to_owned())
        })?,
    };
    for entry in entries {
        let Value::Object(entry) = entry else {
            return Err(Refusal::Unprocessable(
                "tree is not an array of objects".to_owned(),
            ));
        };
        apply_entry(state, key, &mut files, entry)?;
    }
    Ok(files)
}

/// Applies one `tree` entry of a create-tree body to `files`.
fn apply_entry(
    state: &mut State,
    key: &RepoKey,
    files: &mut Files,
    entry: &Map<String, Value>,
) -> Result<(), Refusal> {
    let path = required_str(entry, "path")?;
    let mode = required_str(entry, "mode")?;
    let kind = required_str(entry, "type")?;
    let malformed = path.is_empty()
        || path
            .split('/')
            .any(|part| matches!(part, "" | "." | ".." | ".git"));
    if malformed {
        let message = format!("tree.path contains a malformed path component: {path}");
        return Err(Refusal::Unprocessable(message));
    }
    let sha = entry.get("sha");
    let content = entry.get("content").and_then(Value::as_str);
    if sha.is_some_and(|sha| !sha.is_null()) && content.is_some() {
        let message = "Must supply either tree.sha or tree.content, not both".to_owned();
        return Err(Refusal::Unprocessable(message));
    }
    // `"sha": null` removes the path, whatever it was.
    if sha.is_some_and(Value::is_null) {
        remove_path(files, path);
        return Ok(());
    }
    let sha = sha.and_then(Value::as_str);
    match kind {
        "blob" => {
            let mode = Mode::parse(mode).ok_or_else(|| {
                Refusal::Unprocessable(format!("tree.mode {mode} is not a valid blob mode"))
            })?;
            let objects = state.git.entry(key.clone()).or_default();
            let blob = match (sha, content) {
                (_, Some(content)) => store_blob(objects, content.as_bytes().to_vec()),
                (Some(sha), None) if objects.blobs.contains_key(sha) => sha.to_owned(),
                (Some(sha), None) => {
                    let message = format!("tree.sha {sha} is not a valid blob");
                    return Err(Refusal::Unprocessable(message));
                }
                (None, None) => {
                    let message = "Must supply either tree.sha or tree.content".to_owned();
                    return Err(Refusal::Unprocessable(message));
                }
            };
            remove_path(files, path);
            files.insert(path.to_owned(), FileEntry { mode, blob });
        }
        "tree" => {
            let invalid = || format!("tree.sha {} is not a valid tree", sha.unwrap_or_default());
            let sha = sha.ok_or_else(|| Refusal::Unprocessable(invalid()))?;
            let sub = tree_files(state, key, sha, false)?
                .ok_or_else(|| Refusal::Unprocessable(invalid()))?;
            remove_path(files, path);
            for (inner, file) in sub {
                files.insert(format!("{path}/{inner}"), file);
            }
        }
        other => {
            let message = format!("tree.type {other} is not supported by the fake (blob or tree)");
            return Err(Refusal::Unprocessable(message));
        }
    }
    Ok(())
}

/// Removes the file at `path`, every file under it, and any file where one of its parent
/// directories would be (a path is a file or a directory, not both).
fn remove_path(files: &mut Files, path: &str) {
    files.remove(path);
    let under = format!("{path}/");
    files.retain(|existing, _| !existing.starts_with(&under));
    let mut parent = path;
    while let Some((up, _)) = parent.rsplit_once('/') {
        files.remove(up);
        parent = up;
    }
}

// ---------------------------------------------------------------------------
// Commits.

pub(crate) async fn create_commit(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    write(
        &state,
        (&owner, &repo),
        &headers,
        COMMIT_DOCS,
        |state, key| {
            let sha = new_commit(state, key, &body)?;
            let answer = commit_answer(state, &key.0, &key.1, &sha);
            Ok(created(
                answer,
                &api_url(state, key, &format!("git/commits/{sha}")),
            ))
        },
    )
}

/// Makes the commit a create-commit body asks for and answers its sha.
fn new_commit(state: &mut State, key: &RepoKey, body: &[u8]) -> Result<String, Refusal> {
    let body = object(body)?;
    let message = required_str(&body, "message")?.to_owned();
    let tree = required_str(&body, "tree")?.to_owned();
    let parents: Vec<String> = match body.get("parents") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(parents)) => parents
            .iter()
            .map(|p| p.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or_else(|| Refusal::Unprocessable("parents is not an array of shas".to_owned()))?,
        Some(_) => {
            return Err(Refusal::Unprocessable(
                "parents is not an array of shas".to_owned(),
            ));
        }
    };
    let Some(files) = tree_files(state, key, &tree, false)? else {
        return Err(Refusal::Unprocessable("Tree SHA does not exist".to_owned()));
    };
    let known = |parent: &String| {
        served_commit(state, key, parent).is_some()
            || state
                .commit_graphs
                .get(key)
                .is_some_and(|graph| graph.contains_key(parent))
    };
    if !parents.iter().all(known) {
        let message = "Parent SHA does not exist or is not a commit object".to_owned();
        return Err(Refusal::Unprocessable(message));
    }
    let now = jiff::Timestamp::from_second(crate::auth::epoch(state.now()) as i64)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let author = signature(body.get("author"), now)?;
    let committer = match body.get("committer") {
        None | Some(Value::Null) => Signature {
            date: now,
            ..author.clone()
        },
        given => signature(given, now)?,
    };
    let mut text = format!("tree {tree}\n");
    for parent in &parents {
        text.push_str(&format!("parent {parent}\n"));
    }
    text.push_str(&format!(
        "author {}\ncommitter {}\n\n{message}",
        author.git_line(),
        committer.git_line()
    ));
    let sha = object_sha("commit", text.as_bytes());
    let objects = state.git.entry(key.clone()).or_default();
    let written: BTreeMap<String, (Mode, Vec<u8>)> = files
        .iter()
        .map(|(path, entry)| {
            let content = objects.blobs.get(&entry.blob).cloned().unwrap_or_default();
            (path.clone(), (entry.mode, content))
        })
        .collect();
    objects.commits.insert(
        sha.clone(),
        StoredCommit {
            tree: tree.clone(),
            parents: parents.clone(),
            message,
            author,
            committer,
        },
    );
    let graph = state.commit_graphs.entry(key.clone()).or_default();
    for parent in &parents {
        graph.entry(parent.clone()).or_default();
    }
    graph.insert(sha.clone(), parents);
    if served_commit(state, key, &sha).is_none() {
        let fixture = materialize(state, &sha, &written)?;
        let entry = FakeRepo {
            git_ref: String::new(),
            sha: sha.clone(),
            fixture,
        };
        state.repos.entry(key.clone()).or_default().push(entry);
    }
    Ok(sha)
}

/// The author or committer a body gives (`name`, `email`, `date`), or the App's bot now.
fn signature(given: Option<&Value>, now: jiff::Timestamp) -> Result<Signature, Refusal> {
    let bot = Signature {
        name: APP_BOT_LOGIN.to_owned(),
        email: format!("{APP_BOT_LOGIN}@users.noreply.github.com"),
        date: now,
    };
    let Some(Value::Object(given)) = given else {
        return Ok(bot);
    };
    let text = |field: &str| given.get(field).and_then(Value::as_str).map(str::to_owned);
    let date = match text("date") {
        None => now,
        Some(date) => date
            .parse::<jiff::Timestamp>()
            .map_err(|_| Refusal::Unprocessable(format!("{date} is not a valid date")))?,
    };
    Ok(Signature {
        name: text("name").ok_or_else(|| Refusal::missing("name"))?,
        email: text("email").ok_or_else(|| Refusal::missing("email"))?,
        date,
    })
}

/// A commit made here as the create-commit route answers it.
fn commit_answer(state: &State, owner: &str, repo: &str, sha: &str) -> Value {
    let base = &state.base_url;
    let commit = state
        .git
        .get(&key(owner, repo))
        .and_then(|o| o.commits.get(sha));
    let Some(commit) = commit else {
        return json!({ "sha": sha });
    };
    let parents: Vec<Value> = commit
        .parents
        .iter()
        .map(|parent| {
            json!({
                "sha": parent,
                "url": format!("{base}/repos/{owner}/{repo}/git/commits/{parent}"),
                "html_url": format!("https://github.com/{owner}/{repo}/commit/{parent}"),
            })
        })
        .collect();
    json!({
        "sha": sha,
        "node_id": format!("C_{}", &sha[..12.min(sha.len())]),
        "url": format!("{base}/repos/{owner}/{repo}/git/commits/{sha}"),
        "html_url": format!("https://github.com/{owner}/{repo}/commit/{sha}"),
        "author": commit.author.to_json(),
        "committer": commit.committer.to_json(),
        "tree": {
            "sha": commit.tree,
            "url": format!("{base}/repos/{owner}/{repo}/git/trees/{}", commit.tree),
        },
        "message": commit.message,
        "parents": parents,
        "verification": {
            "verified": false,
            "reason": "unsigned",
            "signature": null,
            "payload": null,
            "verified_at": null,
        },
    })
}

/// The `commit` object and the `parents` of `GET /repos/{owner}/{repo}/commits/{ref}` for the
/// served commit `sha` (named by `git_ref`): a commit made here as it was made, one `add_repo`
/// serves with the fixed date, `mona` as its author and the parents the test gave it.
pub(crate) fn commit_fields(
    state: &State,
    owner: &str,
    repo: &str,
    sha: &str,
    git_ref: &str,
) -> (Value, Value) {
    let base = &state.base_url;
    let key = key(owner, repo);
    let parent_json = |parent: &String| {
        json!({
            "sha": parent,
            "url": format!("{base}/repos/{owner}/{repo}/commits/{parent}"),
            "html_url": format!("https://github.com/{owner}/{repo}/commit/{parent}"),
        })
    };
    if let Some(commit) = state.git.get(&key).and_then(|o| o.commits.get(sha)) {
        let fields = json!({
            "message": commit.message,
            "tree": { "sha": commit.tree },
            "author": commit.author.to_json(),
            "committer": commit.committer.to_json(),
        });
        let parents = commit.parents.iter().map(parent_json).collect();
        return (fields, Value::Array(parents));
    }
    let (name, email) = FIXTURE_AUTHOR;
    let person = json!({ "name": name, "email": email, "date": FIXTURE_COMMIT_DATE });
    let fields = json!({
        "message": format!("{git_ref} at {sha}"),
        "tree": { "sha": sha },
        "author": person,
        "committer": person,
    });
    let parents = state
        .commit_graphs
        .get(&key)
        .and_then(|graph| graph.get(sha))
        .map(|parents| parents.iter().map(parent_json).collect())
        .unwrap_or_default();
    (fields, Value::Array(parents))
}

/// Commit `sha` of `owner/repo` with its files, for a test: one made here, or one `add_repo`
/// serves (empty message, the fixed date, the parents the test gave it).
pub(crate) fn inspect_commit(
    state: &mut State,
    owner: &str,
    repo: &str,
    sha: &str,
) -> io::Result<Option<FakeCommit>> {
    let key = key(owner, repo);
    if let Some(objects) = state.git.get(&key)
        && let Some(commit) = objects.commits.get(sha)
    {
        let files = objects
            .trees
            .get(&commit.tree)
            .map(|f| contents(objects, f));
        return Ok(Some(FakeCommit {
            sha: sha.to_owned(),
            tree: commit.tree.clone(),
            parents: commit.parents.clone(),
            message: commit.message.clone(),
            date: rfc3339(commit.committer.date),
            files: files.unwrap_or_default(),
        }));
    }
    if served_commit(state, &key, sha).is_none() {
        return Ok(None);
    }
    let Some(files) = tree_files(state, &key, sha, false)? else {
        return Ok(None);
    };
    let parents = state
        .commit_graphs
        .get(&key)
        .and_then(|graph| graph.get(sha).cloned())
        .unwrap_or_default();
    let objects = state.git.entry(key).or_default();
    Ok(Some(FakeCommit {
        sha: sha.to_owned(),
        tree: sha.to_owned(),
        parents,
        message: String::new(),
        date: FIXTURE_COMMIT_DATE.to_owned(),
        files: contents(objects, &files),
    }))
}

fn rfc3339(time: jiff::Timestamp) -> String {
    // Whole seconds, as GitHub writes dates (`2026-12-01T10:00:00Z`).
    jiff::Timestamp::from_second(time.as_second())
        .unwrap_or(time)
        .to_string()
}

// ---------------------------------------------------------------------------
// Refs.

pub(crate) async fn get_ref(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo, git_ref)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let state = state.lock();
    if let Some(refused) = repo_refusal(&state, &headers, &owner, &repo, GET_REF_DOCS) {
        return refused;
    }
    let key = key(&owner, &repo);
    if !state.repos.contains_key(&key) {
        return github_error(StatusCode::NOT_FOUND, "Not Found", GET_REF_DOCS);
    }
    let full = format!("refs/{git_ref}");
    match ref_target(&state, &key, &full) {
        Some(target) => {
            let body = ref_json(&state, &key, &full, &target.sha);
            json_response(StatusCode::OK, body, HeaderMap::new())
        }
        None => github_error(StatusCode::NOT_FOUND, "Not Found", GENERIC_DOCS),
    }
}

pub(crate) async fn create_ref(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    write(
        &state,
        (&owner, &repo),
        &headers,
        CREATE_REF_DOCS,
        |state, key| {
            let body = object(&body)?;
            let full = required_str(&body, "ref")?;
            let sha = required_str(&body, "sha")?;
            let refuse = |message: &str| Err(Refusal::Unprocessable(message.to_owned()));
            // A ref is `refs/` and at least two more components (`refs/heads/x`).
            let well_formed = full.starts_with("refs/")
                && full.matches('/').count() >= 2
                && !full.split('/').any(|part| part.is_empty() || part == "..");
            if !well_formed {
                return refuse("Reference name is invalid");
            }
            if ref_target(state, key, full).is_some() {
                return refuse("Reference already exists");
            }
            let Some(target) = served_commit(state, key, sha).cloned() else {
                return refuse("Object does not exist");
            };
            set_ref(state, key, full, target);
            let answer = ref_json(state, key, full, sha);
            Ok(created(
                answer,
                &api_url(state, key, &format!("git/{full}")),
            ))
        },
    )
}

pub(crate) async fn update_ref(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo, git_ref)): Path<(String, String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    write(
        &state,
        (&owner, &repo),
        &headers,
        UPDATE_REF_DOCS,
        |state, key| {
            let body = object(&body)?;
            let sha = required_str(&body, "sha")?;
            let force = body.get("force").and_then(Value::as_bool).unwrap_or(false);
            let refuse = |message: &str| Err(Refusal::Unprocessable(message.to_owned()));
            let full = format!("refs/{git_ref}");
            let Some(head) = ref_target(state, key, &full).map(|r| r.sha.clone()) else {
                return refuse("Reference does not exist");
            };
            let Some(target) = served_commit(state, key, sha).cloned() else {
                return refuse("Object does not exist");
            };
            if !force && !descends(state, key, sha, &head) {
                return refuse("Update is not a fast forward");
            }
            set_ref(state, key, &full, target);
            let answer = ref_json(state, key, &full, sha);
            Ok(json_response(StatusCode::OK, answer, HeaderMap::new()))
        },
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;
    use std::io::Read as _;
    use std::path::PathBuf;

    use serde_json::{Value, json};

    use crate::FakeGitHub;

    pub(crate) const OWNER: &str = "octo";
    pub(crate) const REPO: &str = "agents";
    /// The commit `main` names: the `runbooks` skill repository's fixture.
    pub(crate) const MAIN: &str = "1111111111111111111111111111111111111111";
    /// A file of that fixture.
    pub(crate) const FIXTURE_FILE: &str = "runbooks/ci-triage/SKILL.md";

    /// A running fake serving `octo/agents` at `main`, and a token that reads it.
    pub(crate) struct Api {
        pub fake: FakeGitHub,
        pub token: String,
        client: reqwest::Client,
    }

    /// A status, its JSON body (`Null` when there is none) and its `Location`.
    #[derive(Debug)]
    pub(crate) struct Answer {
        pub status: u16,
        pub body: Value,
        pub location: Option<String>,
    }

    impl Answer {
        pub(crate) fn message(&self) -> &str {
            self.body["message"].as_str().unwrap_or_default()
        }
    }

    impl Api {
        pub(crate) async fn start() -> Self {
            let fake = FakeGitHub::start().await.expect("the fake starts");
            let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("skill-repos/runbooks");
            fake.add_repo(OWNER, REPO, "main", MAIN, fixture);
            let token = fake.issue_token();
            let client = reqwest::Client::new();
            Self {
                fake,
                token,
                client,
            }
        }

        /// `method path` with the token and `body` as JSON.
        pub(crate) async fn send(&self, method: &str, path: &str, body: Option<Value>) -> Answer {
            let body = body.map(|body| body.to_string());
            self.send_raw(Some(&self.token), method, path, body).await
        }

        pub(crate) async fn send_raw(
            &self,
            token: Option<&str>,
            method: &str,
            path: &str,
            body: Option<String>,
        ) -> Answer {
            let method = reqwest::Method::from_bytes(method.as_bytes()).expect("a method");
            let url = format!("{}{path}", self.fake.base_url());
            let mut request = self.client.request(method, url);
            if let Some(token) = token {
                request = request.header("authorization", format!("Bearer {token}"));
            }
            if let Some(body) = body {
                request = request.body(body);
            }
            let response = request.send().await.expect("the fake answers");
            let status = response.status().as_u16();
            let location = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let text = response.text().await.expect("a body");
            let body = serde_json::from_str(&text).unwrap_or(Value::Null);
            Answer {
                status,
                body,
                location,
            }
        }

        pub(crate) async fn post(&self, what: &str, body: Value) -> Answer {
            let path = format!("/repos/{OWNER}/{REPO}/{what}");
            self.send("POST", &path, Some(body)).await
        }

        /// A commit of `files` (path and text) over `base_tree` with `parents`: its sha.
        pub(crate) async fn commit(
            &self,
            base_tree: Option<&str>,
            files: &[(&str, &str)],
            parents: &[&str],
        ) -> String {
            let tree: Vec<Value> = files
                .iter()
                .map(|(path, content)| {
                    json!({ "path": path, "mode": "100644", "type": "blob", "content": content })
                })
                .collect();
            let tree = self
                .post("git/trees", json!({ "base_tree": base_tree, "tree": tree }))
                .await;
            assert_eq!(tree.status, 201, "{tree:?}");
            let commit = json!({ "message": "m", "tree": tree.body["sha"], "parents": parents });
            let commit = self.post("git/commits", commit).await;
            assert_eq!(commit.status, 201, "{commit:?}");
            commit.body["sha"].as_str().expect("a sha").to_owned()
        }

        /// The files of the tarball of `git_ref`, by path under its top directory.
        pub(crate) async fn tarball(&self, git_ref: &str) -> BTreeMap<String, (u32, Vec<u8>)> {
            let url = format!(
                "{}/repos/{OWNER}/{REPO}/tarball/{git_ref}",
                self.fake.base_url()
            );
            let response = self
                .client
                .get(url)
                .header("authorization", format!("Bearer {}", self.token))
                .send()
                .await
                .expect("the fake answers");
            assert_eq!(response.status().as_u16(), 200);
            let bytes = response.bytes().await.expect("a tarball");
            let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&bytes[..]));
            let mut files = BTreeMap::new();
            for entry in archive.entries().expect("a tar") {
                let mut entry = entry.expect("an entry");
                let path = entry.path().expect("a path").to_string_lossy().into_owned();
                let Some((_, inside)) = path.split_once('/') else {
                    continue;
                };
                let header = entry.header().clone();
                let mut content = Vec::new();
                if let Ok(Some(target)) = entry.link_name() {
                    content = target.to_string_lossy().into_owned().into_bytes();
                } else {
                    entry.read_to_end(&mut content).expect("readable");
                }
                if header.entry_type().is_file() || header.entry_type().is_symlink() {
                    let mode = header.mode().expect("a mode");
                    files.insert(inside.to_owned(), (mode, content));
                }
            }
            files
        }
    }

    #[tokio::test]
    async fn a_blob_has_gits_sha_in_either_encoding() {
        let api = Api::start().await;
        let text = api
            .post(
                "git/blobs",
                json!({ "content": "hello\n", "encoding": "utf-8" }),
            )
            .await;
        assert_eq!(text.status, 201, "{text:?}");
        assert_eq!(text.body["sha"], "ce013625030ba8dba906f756967f9e9ca394464a");
        assert_eq!(text.location.as_deref(), text.body["url"].as_str());
        let base64 = api
            .post(
                "git/blobs",
                json!({ "content": "aGVs\nbG8K", "encoding": "base64" }),
            )
            .await;
        assert_eq!(base64.status, 201, "{base64:?}");
        assert_eq!(base64.body["sha"], text.body["sha"]);

        let bad = api
            .post(
                "git/blobs",
                json!({ "content": "x", "encoding": "latin-1" }),
            )
            .await;
        assert_eq!(bad.status, 422);
        let missing = api.post("git/blobs", json!({ "encoding": "utf-8" })).await;
        assert_eq!(
            (missing.status, missing.message()),
            (422, "Invalid request.\n\n\"content\" wasn't supplied.")
        );
        let path = format!("/repos/{OWNER}/{REPO}/git/blobs");
        let not_json = api
            .send_raw(Some(&api.token), "POST", &path, Some("{".to_owned()))
            .await;
        assert_eq!(
            (not_json.status, not_json.message()),
            (400, "Problems parsing JSON")
        );
        let anonymous = api
            .send_raw(None, "POST", &path, Some("{}".to_owned()))
            .await;
        assert_eq!(anonymous.status, 401);
        let unknown = api
            .send(
                "POST",
                "/repos/octo/nowhere/git/blobs",
                Some(json!({ "content": "x" })),
            )
            .await;
        assert_eq!(unknown.status, 404);
    }

    #[tokio::test]
    async fn trees_and_commits_have_gits_shas() {
        let api = Api::start().await;
        let empty = api.post("git/trees", json!({ "tree": [] })).await;
        assert_eq!(
            empty.body["sha"],
            "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
        );
        let blob = api.post("git/blobs", json!({ "content": "x\n" })).await;
        let entries = json!([
            { "path": "a.txt", "mode": "100644", "type": "blob", "content": "hello\n" },
            { "path": "dir/b.txt", "mode": "100644", "type": "blob", "sha": blob.body["sha"] },
            { "path": "link", "mode": "120000", "type": "blob", "content": "a.txt" },
            { "path": "run.sh", "mode": "100755", "type": "blob", "content": "#!/bin/sh\n" },
        ]);
        let tree = api.post("git/trees", json!({ "tree": entries })).await;
        assert_eq!(tree.status, 201, "{tree:?}");
        assert_eq!(tree.body["sha"], "98b4df4869f209472c32d02f7f7f5632659a48e2");
        assert_eq!(tree.body["truncated"], false);
        let listed: Vec<(&str, &str, &str)> = tree.body["tree"]
            .as_array()
            .expect("entries")
            .iter()
            .map(|e| {
                let text = |key: &str| e[key].as_str().unwrap_or_default();
                (text("path"), text("type"), text("sha"))
            })
            .collect();
        assert_eq!(
            listed[..2],
            [
                ("a.txt", "blob", "ce013625030ba8dba906f756967f9e9ca394464a"),
                ("dir", "tree", "add4794d9c94872b96c1697c056fb82ae0d72880"),
            ]
        );
        let person = json!({ "name": "a", "email": "a@b", "date": "2023-11-14T22:13:20Z" });
        let commit = json!({
            "message": "msg\n",
            "tree": tree.body["sha"],
            "parents": [],
            "author": person,
            "committer": person,
        });
        let commit = api.post("git/commits", commit).await;
        assert_eq!(commit.status, 201, "{commit:?}");
        assert_eq!(
            commit.body["sha"],
            "8c3f1dd38da961b0ac665db7add641df883e0f41"
        );
        assert_eq!(commit.body["committer"]["date"], "2023-11-14T22:13:20Z");
        assert_eq!(commit.body["tree"]["sha"], tree.body["sha"]);
    }

    #[tokio::test]
    async fn a_tree_over_a_base_keeps_its_files_and_refuses_unknown_objects() {
        let api = Api::start().await;
        let removed = json!([
            { "path": "astrolift.lock", "mode": "100644", "type": "blob", "content": "v1\n" },
            { "path": "runbooks/clinical-triage", "mode": "040000", "type": "tree", "sha": null },
        ]);
        let tree = api
            .post("git/trees", json!({ "base_tree": MAIN, "tree": removed }))
            .await;
        assert_eq!(tree.status, 201, "{tree:?}");
        let commit = json!({ "message": "m", "tree": tree.body["sha"], "parents": [MAIN] });
        let commit = api.post("git/commits", commit).await;
        let sha = commit.body["sha"].as_str().expect("a sha");
        let files = api.tarball(sha).await;
        assert_eq!(files["astrolift.lock"].1, b"v1\n");
        assert!(files.contains_key(FIXTURE_FILE), "{:?}", files.keys());
        assert!(
            !files
                .keys()
                .any(|p| p.starts_with("runbooks/clinical-triage")),
            "{:?}",
            files.keys()
        );
        let inspected = api.fake.commit(OWNER, REPO, sha).expect("the commit");
        assert_eq!(inspected.parents, [MAIN]);
        assert_eq!(inspected.message, "m");
        assert_eq!(inspected.files["astrolift.lock"], b"v1\n");

        // A commit made here is a base too (its tree).
        let over = api.commit(Some(sha), &[("b.txt", "b")], &[sha]).await;
        let files = api.tarball(&over).await;
        assert!(files.contains_key("astrolift.lock") && files.contains_key("b.txt"));

        let unknown = "0123456789012345678901234567890123456789";
        let bad_base = api
            .post("git/trees", json!({ "base_tree": unknown, "tree": [] }))
            .await;
        assert_eq!(
            (bad_base.status, bad_base.message()),
            (422, "base_tree is not a valid tree oid")
        );
        let entry = json!({ "path": "x", "mode": "100644", "type": "blob", "sha": unknown });
        let bad_blob = api.post("git/trees", json!({ "tree": [entry] })).await;
        assert_eq!(bad_blob.status, 422);
        assert_eq!(
            bad_blob.message(),
            format!("tree.sha {unknown} is not a valid blob")
        );
        let entry = json!({ "path": "../x", "mode": "100644", "type": "blob", "content": "" });
        let escaping = api.post("git/trees", json!({ "tree": [entry] })).await;
        assert_eq!(escaping.status, 422);
        let no_tree = api.post("git/trees", json!({ "base_tree": MAIN })).await;
        assert_eq!(no_tree.status, 422);
    }

    #[tokio::test]
    async fn a_commit_is_served_like_the_fixtures_and_refuses_unknown_objects() {
        let api = Api::start().await;
        let script = json!([
            { "path": "run.sh", "mode": "100755", "type": "blob", "content": "#!/bin/sh\n" },
            { "path": "link", "mode": "120000", "type": "blob", "content": "run.sh" },
        ]);
        let tree = api
            .post("git/trees", json!({ "base_tree": MAIN, "tree": script }))
            .await;
        let author = json!({ "name": "a", "email": "a@b", "date": "2026-12-01T10:00:00Z" });
        let body = json!({
            "message": "Update astrolift.lock",
            "tree": tree.body["sha"],
            "parents": [MAIN],
            "author": author,
        });
        let commit = api.post("git/commits", body).await;
        assert_eq!(commit.status, 201, "{commit:?}");
        assert_eq!(commit.body["author"]["date"], "2026-12-01T10:00:00Z");
        assert_eq!(commit.body["parents"][0]["sha"], MAIN);
        let sha = commit.body["sha"].as_str().expect("a sha");
        assert_eq!(
            commit.location.as_deref(),
            Some(
                format!(
                    "{}/repos/{OWNER}/{REPO}/git/commits/{sha}",
                    api.fake.base_url()
                )
                .as_str()
            )
        );

        let files = api.tarball(sha).await;
        assert_eq!(files["run.sh"].0 & 0o111, 0o111);
        assert_eq!(files["link"].1, b"run.sh");
        assert!(files.contains_key(FIXTURE_FILE));

        let path = format!("/repos/{OWNER}/{REPO}/commits/{sha}");
        let described = api.send("GET", &path, None).await;
        assert_eq!(described.status, 200);
        assert_eq!(described.body["commit"]["message"], "Update astrolift.lock");
        assert!(described.body["commit"]["committer"]["date"].is_string());
        assert_eq!(described.body["parents"][0]["sha"], MAIN);
        let fixture = api
            .send("GET", &format!("/repos/{OWNER}/{REPO}/commits/main"), None)
            .await;
        assert_eq!(
            fixture.body["commit"]["committer"]["date"],
            "2023-11-14T22:13:20Z"
        );
        let compare = format!("/repos/{OWNER}/{REPO}/compare/{MAIN}...{sha}");
        let compared = api.send("GET", &compare, None).await;
        assert_eq!(compared.body["status"], "ahead");

        let unknown = "0123456789012345678901234567890123456789";
        let no_tree = json!({ "message": "m", "tree": unknown, "parents": [] });
        let no_tree = api.post("git/commits", no_tree).await;
        assert_eq!(
            (no_tree.status, no_tree.message()),
            (422, "Tree SHA does not exist")
        );
        let no_parent = json!({ "message": "m", "tree": tree.body["sha"], "parents": [unknown] });
        let no_parent = api.post("git/commits", no_parent).await;
        assert_eq!(
            (no_parent.status, no_parent.message()),
            (422, "Parent SHA does not exist or is not a commit object")
        );
        let no_message = json!({ "tree": tree.body["sha"] });
        assert_eq!(api.post("git/commits", no_message).await.status, 422);
    }

    #[tokio::test]
    async fn branches_are_created_read_and_moved_like_github_refs() {
        let api = Api::start().await;
        let first = api
            .commit(Some(MAIN), &[("astrolift.lock", "1")], &[MAIN])
            .await;
        let refs = format!("/repos/{OWNER}/{REPO}/git/ref/heads/astrolift/lock-update");
        let absent = api.send("GET", &refs, None).await;
        assert_eq!((absent.status, absent.message()), (404, "Not Found"));
        assert_eq!(
            absent.body["documentation_url"],
            "https://docs.github.com/rest"
        );

        let create = json!({ "ref": "refs/heads/astrolift/lock-update", "sha": first });
        let created = api.post("git/refs", create.clone()).await;
        assert_eq!(created.status, 201, "{created:?}");
        assert_eq!(created.body["object"]["sha"], first.as_str());
        let again = api.post("git/refs", create).await;
        assert_eq!(
            (again.status, again.message()),
            (422, "Reference already exists")
        );
        let read = api.send("GET", &refs, None).await;
        assert_eq!(read.status, 200);
        assert_eq!(read.body["ref"], "refs/heads/astrolift/lock-update");
        assert_eq!(read.body["object"]["type"], "commit");
        assert_eq!(
            api.fake.branch_head(OWNER, REPO, "astrolift/lock-update"),
            Some(first.clone())
        );
        let files = api.tarball("astrolift/lock-update").await;
        assert_eq!(files["astrolift.lock"].1, b"1");
        let main = api
            .send(
                "GET",
                &format!("/repos/{OWNER}/{REPO}/git/ref/heads/main"),
                None,
            )
            .await;
        assert_eq!(main.body["object"]["sha"], MAIN);

        let update = format!("/repos/{OWNER}/{REPO}/git/refs/heads/astrolift/lock-update");
        let second = api
            .commit(Some(&first), &[("astrolift.lock", "2")], &[&first])
            .await;
        let forward = json!({ "sha": second, "force": false });
        let moved = api.send("PATCH", &update, Some(forward)).await;
        assert_eq!(moved.status, 200, "{moved:?}");
        assert_eq!(moved.body["object"]["sha"], second.as_str());
        let sideways = api
            .commit(Some(MAIN), &[("astrolift.lock", "3")], &[MAIN])
            .await;
        let refused = api
            .send("PATCH", &update, Some(json!({ "sha": sideways })))
            .await;
        assert_eq!(
            (refused.status, refused.message()),
            (422, "Update is not a fast forward")
        );
        let forced = json!({ "sha": sideways, "force": true });
        let forced = api.send("PATCH", &update, Some(forced)).await;
        assert_eq!(forced.status, 200);
        assert_eq!(
            api.fake.branch_head(OWNER, REPO, "astrolift/lock-update"),
            Some(sideways.clone())
        );

        let nowhere = format!("/repos/{OWNER}/{REPO}/git/refs/heads/nowhere");
        let missing = api
            .send("PATCH", &nowhere, Some(json!({ "sha": sideways })))
            .await;
        assert_eq!(
            (missing.status, missing.message()),
            (422, "Reference does not exist")
        );
        let unknown = "0123456789012345678901234567890123456789";
        let no_object = api
            .post("git/refs", json!({ "ref": "refs/heads/x", "sha": unknown }))
            .await;
        assert_eq!(
            (no_object.status, no_object.message()),
            (422, "Object does not exist")
        );
        let bad_name = api
            .post("git/refs", json!({ "ref": "heads/x", "sha": first }))
            .await;
        assert_eq!(bad_name.status, 422);
    }

    #[tokio::test]
    async fn a_denied_installation_may_read_but_not_write() {
        let api = Api::start().await;
        let sha = api.commit(Some(MAIN), &[("a", "a")], &[MAIN]).await;
        api.fake.deny_contents_write(OWNER, REPO);
        let update = format!("/repos/{OWNER}/{REPO}/git/refs/heads/main");
        for (method, path, body) in [
            ("POST", "git/blobs", json!({ "content": "x" })),
            ("POST", "git/trees", json!({ "tree": [] })),
            (
                "POST",
                "git/commits",
                json!({ "message": "m", "tree": sha }),
            ),
            (
                "POST",
                "git/refs",
                json!({ "ref": "refs/heads/x", "sha": sha }),
            ),
            (
                "POST",
                "pulls",
                json!({ "title": "t", "head": "x", "base": "main" }),
            ),
        ] {
            let path = format!("/repos/{OWNER}/{REPO}/{path}");
            let answer = api.send(method, &path, Some(body)).await;
            assert_eq!(
                (answer.status, answer.message()),
                (403, "Resource not accessible by integration"),
                "{path}"
            );
        }
        let patched = api
            .send("PATCH", &update, Some(json!({ "sha": sha })))
            .await;
        assert_eq!(patched.status, 403);
        let read = api
            .send(
                "GET",
                &format!("/repos/{OWNER}/{REPO}/git/ref/heads/main"),
                None,
            )
            .await;
        assert_eq!(read.status, 200);
        api.fake.allow_contents_write(OWNER, REPO);
        let allowed = api.post("git/blobs", json!({ "content": "x" })).await;
        assert_eq!(allowed.status, 201);
    }
}
