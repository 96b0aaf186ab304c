//! Commits through GitHub's Git Data API: blobs, trees, commits and branch refs, and what a
//! commit says of itself (`GET /repos/{owner}/{repo}/commits/{sha}`: its date and parents).
//!
//! A file is committed as a blob, a tree over the base commit's tree (`base_tree`: every
//! other file kept), a commit with the base as its parent, and then a ref: a new branch, or a
//! branch moved. Not the Contents API (`PUT .../contents/{path}`): that writes on the branch's
//! head whatever it is, one commit per file, where here the parent is chosen and moving the
//! branch is a separate step whose fast-forward check (`force: false`) refuses to drop a
//! commit someone else pushed meanwhile.
//!
//! Every write needs the installation's `contents: write` permission: without it GitHub
//! answers 403 (`Resource not accessible by integration`), which
//! [`GitHubError::is_forbidden`] tells apart. Shas in GitHub's answers are checked to be 40
//! hex digits and handed back lowercase.

use base64::Engine as _;
use http::{Method, StatusCode};
use serde::{Deserialize, Serialize};

use super::client::{GitHubError, Installation, JsonMethod, RepoPath, protocol};

/// A file's mode in a tree, as git writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FileMode {
    /// A regular file (`100644`).
    #[serde(rename = "100644")]
    Regular,
    /// An executable file (`100755`).
    #[serde(rename = "100755")]
    Executable,
    /// A symbolic link whose blob is its target (`120000`).
    #[serde(rename = "120000")]
    Symlink,
}

/// One file of a new tree: the blob at `path` (`a/b.toml`, no leading `/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    pub path: String,
    pub mode: FileMode,
    /// A blob made with [`Installation::create_blob`].
    pub blob_sha: String,
}

/// What a commit says of itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitInfo {
    /// 40 hex digits, lowercase.
    pub sha: String,
    /// When it was committed (the committer's date; the author's when GitHub gives none).
    pub date: jiff::Timestamp,
    /// Its parents' shas, in order (none for a root commit).
    pub parents: Vec<String>,
    /// Its tree's sha (what a new tree over it names as `base_tree`).
    pub tree: String,
    /// Its message.
    pub message: String,
}

#[derive(Serialize)]
struct NewBlob<'a> {
    content: &'a str,
    encoding: &'static str,
}

#[derive(Serialize)]
struct NewTreeEntry<'a> {
    path: &'a str,
    mode: FileMode,
    #[serde(rename = "type")]
    kind: &'static str,
    sha: &'a str,
}

#[derive(Serialize)]
struct NewTree<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    base_tree: Option<&'a str>,
    tree: Vec<NewTreeEntry<'a>>,
}

#[derive(Serialize)]
struct NewCommit<'a> {
    message: &'a str,
    tree: &'a str,
    parents: &'a [&'a str],
}

#[derive(Serialize)]
struct NewRef<'a> {
    #[serde(rename = "ref")]
    git_ref: &'a str,
    sha: &'a str,
}

#[derive(Serialize)]
struct MovedRef<'a> {
    sha: &'a str,
    force: bool,
}

/// An answer that names an object by its `sha` (a blob, a tree, a commit).
#[derive(Deserialize)]
struct Created {
    sha: String,
}

/// A ref as GitHub answers it (the fields we read).
#[derive(Deserialize)]
struct GitRef {
    object: RefObject,
}

#[derive(Deserialize)]
struct RefObject {
    sha: String,
    #[serde(rename = "type")]
    kind: String,
}

/// `GET /repos/{owner}/{repo}/commits/{sha}` (the fields we read).
#[derive(Deserialize)]
struct CommitAnswer {
    sha: String,
    commit: CommitFields,
    #[serde(default)]
    parents: Vec<Created>,
}

#[derive(Deserialize)]
struct CommitFields {
    #[serde(default)]
    author: Option<Person>,
    #[serde(default)]
    committer: Option<Person>,
    tree: Created,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
struct Person {
    #[serde(default)]
    date: Option<String>,
}

/// `sha` when it is 40 hex digits (lowercased), else a protocol error naming `field`.
pub(crate) fn checked_sha(
    method: &Method,
    path: &str,
    field: &str,
    sha: &str,
) -> Result<String, GitHubError> {
    if sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(sha.to_ascii_lowercase());
    }
    Err(protocol(
        method,
        path,
        &format!("`{field}` is not 40 hex digits"),
    ))
}

/// `branch` (`astrolift/lock-update`) as path segments, or an error: no empty segment, no
/// `.` or `..`.
fn branch_segments<'b>(method: &Method, branch: &'b str) -> Result<Vec<&'b str>, GitHubError> {
    let segments: Vec<&str> = branch.split('/').collect();
    if segments.iter().any(|s| matches!(*s, "" | "." | "..")) {
        let path = format!("refs/heads/{branch}");
        return Err(protocol(method, &path, "not a valid branch name"));
    }
    Ok(segments)
}

impl Installation {
    /// `POST /repos/{owner}/{repo}/git/blobs` with `bytes` (sent as base64): the blob's sha.
    pub async fn create_blob(&self, repo: &RepoPath, bytes: &[u8]) -> Result<String, GitHubError> {
        let content = base64::engine::general_purpose::STANDARD.encode(bytes);
        let body = NewBlob {
            content: &content,
            encoding: "base64",
        };
        self.create_object(repo, "blobs", &body).await
    }

    /// `POST /repos/{owner}/{repo}/git/trees`: `entries` over `base_tree` (a tree, or a
    /// commit whose tree is meant: its other files are kept), or over nothing (a tree of
    /// `entries` only). The tree's sha.
    pub async fn create_tree(
        &self,
        repo: &RepoPath,
        base_tree: Option<&str>,
        entries: &[TreeEntry],
    ) -> Result<String, GitHubError> {
        let tree = entries
            .iter()
            .map(|entry| NewTreeEntry {
                path: &entry.path,
                mode: entry.mode,
                kind: "blob",
                sha: &entry.blob_sha,
            })
            .collect();
        let body = NewTree { base_tree, tree };
        self.create_object(repo, "trees", &body).await
    }

    /// `POST /repos/{owner}/{repo}/git/commits`: a commit of `tree` with `parents`, authored
    /// and committed by the App's bot now (GitHub's defaults). The commit's sha.
    pub async fn create_commit(
        &self,
        repo: &RepoPath,
        message: &str,
        tree: &str,
        parents: &[&str],
    ) -> Result<String, GitHubError> {
        let body = NewCommit {
            message,
            tree,
            parents,
        };
        self.create_object(repo, "commits", &body).await
    }

    /// A `POST .../git/{what}` that answers an object's `sha`.
    async fn create_object<B: Serialize + Sync>(
        &self,
        repo: &RepoPath,
        what: &str,
        body: &B,
    ) -> Result<String, GitHubError> {
        let segments = ["repos", &repo.owner, &repo.name, "git", what];
        let created: Created = self
            .send_json(JsonMethod::Post, &segments, Some(body))
            .await?;
        let path = self.app.api_url(&segments).path().to_owned();
        checked_sha(&Method::POST, &path, "sha", &created.sha)
    }

    /// The commit branch `branch` points at (`GET /repos/{owner}/{repo}/git/ref/heads/{branch}`);
    /// `None` when there is no such branch (GitHub's 404). A repository this installation
    /// cannot read is a 404 too: `None` as well.
    pub async fn branch_head(
        &self,
        repo: &RepoPath,
        branch: &str,
    ) -> Result<Option<String>, GitHubError> {
        let mut segments = vec!["repos", &repo.owner, &repo.name, "git", "ref", "heads"];
        segments.extend(branch_segments(&Method::GET, branch)?);
        let answer = self
            .send_json::<GitRef, ()>(JsonMethod::Get, &segments, None)
            .await;
        let found = match answer {
            Ok(found) => found,
            Err(error) if error.status() == Some(StatusCode::NOT_FOUND) => return Ok(None),
            Err(error) => return Err(error),
        };
        let path = self.app.api_url(&segments).path().to_owned();
        if found.object.kind != "commit" {
            let reason = format!("the branch names a {}, not a commit", found.object.kind);
            return Err(protocol(&Method::GET, &path, &reason));
        }
        checked_sha(&Method::GET, &path, "object.sha", &found.object.sha).map(Some)
    }

    /// Creates branch `branch` at commit `sha` (`POST /repos/{owner}/{repo}/git/refs`). One
    /// that exists already is GitHub's 422 (`Reference already exists`).
    pub async fn create_branch(
        &self,
        repo: &RepoPath,
        branch: &str,
        sha: &str,
    ) -> Result<(), GitHubError> {
        branch_segments(&Method::POST, branch)?;
        let full = format!("refs/heads/{branch}");
        let segments = ["repos", &repo.owner, &repo.name, "git", "refs"];
        let body = NewRef {
            git_ref: &full,
            sha,
        };
        self.send_json::<GitRef, _>(JsonMethod::Post, &segments, Some(&body))
            .await
            .map(|_| ())
    }

    /// Moves branch `branch` to commit `sha` (`PATCH /repos/{owner}/{repo}/git/refs/heads/{branch}`).
    /// Without `force`, a commit that does not descend from the branch's head is GitHub's 422
    /// (`Update is not a fast forward`); an unknown branch is a 422 too (`Reference does not
    /// exist`).
    pub async fn move_branch(
        &self,
        repo: &RepoPath,
        branch: &str,
        sha: &str,
        force: bool,
    ) -> Result<(), GitHubError> {
        let mut segments = vec!["repos", &repo.owner, &repo.name, "git", "refs", "heads"];
        segments.extend(branch_segments(&Method::PATCH, branch)?);
        let body = MovedRef { sha, force };
        self.send_json::<GitRef, _>(JsonMethod::Patch, &segments, Some(&body))
            .await
            .map(|_| ())
    }

    /// Commit `sha`'s date and parents (`GET /repos/{owner}/{repo}/commits/{sha}`). A sha
    /// that names no commit is GitHub's 422 (`No commit found for SHA`), an error.
    pub async fn commit_info(&self, repo: &RepoPath, sha: &str) -> Result<CommitInfo, GitHubError> {
        let segments = ["repos", &repo.owner, &repo.name, "commits", sha];
        let answer: CommitAnswer = self
            .send_json(JsonMethod::Get, &segments, None::<&()>)
            .await?;
        let path = self.app.api_url(&segments).path().to_owned();
        let bad = |reason: &str| protocol(&Method::GET, &path, reason);
        let fields = answer.commit;
        let date = [fields.committer, fields.author]
            .into_iter()
            .flatten()
            .find_map(|person| person.date)
            .ok_or_else(|| bad("the commit has no date"))?;
        let date = date
            .parse::<jiff::Timestamp>()
            .map_err(|_| bad("the commit's date is not an RFC 3339 time"))?;
        let parents = answer
            .parents
            .iter()
            .map(|parent| checked_sha(&Method::GET, &path, "parents[].sha", &parent.sha))
            .collect::<Result<_, _>>()?;
        Ok(CommitInfo {
            sha: checked_sha(&Method::GET, &path, "sha", &answer.sha)?,
            date,
            parents,
            tree: checked_sha(&Method::GET, &path, "commit.tree.sha", &fields.tree.sha)?,
            message: fields.message,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_entry_is_sent_as_github_reads_it() {
        let entry = NewTreeEntry {
            path: "astrolift.lock",
            mode: FileMode::Executable,
            kind: "blob",
            sha: "ce013625030ba8dba906f756967f9e9ca394464a",
        };
        let json = serde_json::to_value(&entry).unwrap_or_default();
        assert_eq!(
            json,
            serde_json::json!({
                "path": "astrolift.lock",
                "mode": "100755",
                "type": "blob",
                "sha": "ce013625030ba8dba906f756967f9e9ca394464a",
            })
        );
        let tree = NewTree {
            base_tree: None,
            tree: Vec::new(),
        };
        let json = serde_json::to_value(&tree).unwrap_or_default();
        assert_eq!(json, serde_json::json!({ "tree": [] }));
    }

    #[test]
    fn shas_are_checked_and_lowercased() {
        let upper = "CE013625030BA8DBA906F756967F9E9CA394464A";
        let checked = checked_sha(&Method::GET, "/p", "sha", upper);
        assert_eq!(
            checked.ok().as_deref(),
            Some("ce013625030ba8dba906f756967f9e9ca394464a")
        );
        for bad in ["", "ce01", "zz013625030ba8dba906f756967f9e9ca394464a"] {
            assert!(
                checked_sha(&Method::GET, "/p", "sha", bad).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn branch_names_stay_inside_refs_heads() {
        assert_eq!(
            branch_segments(&Method::GET, "astrolift/lock-update").ok(),
            Some(vec!["astrolift", "lock-update"])
        );
        for bad in ["", "a//b", "../main", "a/./b", "/x", "x/"] {
            assert!(branch_segments(&Method::GET, bad).is_err(), "{bad}");
        }
    }
}
