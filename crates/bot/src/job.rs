//! The sync job: what the webhook hands to the sync worker, through SQS or
//! the in-process queue. A small, versioned JSON message (format below).

use crate::comment_commands::parse_comment;
use astrolift_forge::webhook::{Event, IssueCommentEvent, RepositoryRef};
use serde::{Deserialize, Serialize};
use sha2::Digest as _;

/// The event a job came from; it decides check versus apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobTrigger {
    /// A push to a branch: applies on the registered ref.
    Push,
    /// A pull request head: checked, never applied.
    PullRequest,
    /// A user asked GitHub to re-run the check: checked only, since a re-run of
    /// an old commit's check is not a push and must not move its registration
    /// (ARCHITECTURE.md, `crates/bot`).
    Rerequest,
    /// A skill source a registration's agents name moved (docs/reference.md §5.1,
    /// "Dependents follow"): the registered ref's commit, synced again (applies like a
    /// push of it, in the same lane). Queued by the sync of the skill repository's push,
    /// never by a webhook; [`SyncJob::skill_change`] says which push.
    #[serde(rename = "skill")]
    SkillChanged,
    /// `astrolift reconcile` (or its schedule) found the registered ref's head on GitHub is
    /// not the synced commit: a missed delivery, healed (docs/reference.md §4, "astrolift
    /// reconcile"). Applies like a push of that head, in the same lane; never made by a
    /// webhook.
    Reconcile,
    /// A pull request was closed (merged or not): its previews are torn down
    /// (docs/reference.md §17). Checks nothing and makes no check run.
    Closed,
    /// A comment on a pull request with `/astrolift` command lines ([`SyncJob::comment`]),
    /// run by the worker, which holds the App's key (docs/reference.md §17).
    Comment,
}

impl JobTrigger {
    /// Whether a job of this trigger syncs a commit to a check run; a pull request's
    /// closing and a comment's commands do not (`crate::pull_requests`).
    pub fn syncs(self) -> bool {
        !matches!(self, JobTrigger::Closed | JobTrigger::Comment)
    }
}

/// One sync job. The queue message is this struct as JSON:
///
/// ```json
/// {"version":1,"delivery_id":"…","trigger":"push","installation_id":1,
///  "repository":"octo/agents","repository_id":42,"head_sha":"…",
///  "branch":"main","fork":false,"commit_time":1700000000,"before":"…",
///  "default_branch":"main","pull_request":null}
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncJob {
    /// The message format; 1 today.
    pub version: u32,
    /// `X-GitHub-Delivery` of the webhook that asked for it.
    pub delivery_id: String,
    pub trigger: JobTrigger,
    pub installation_id: u64,
    /// `owner/name`.
    pub repository: String,
    /// GitHub's repository id: with the lane, the FIFO message group
    /// ([`SyncJob::message_group_id`]), so each lane of a repository syncs in order.
    pub repository_id: u64,
    /// The commit to check out and check.
    pub head_sha: String,
    /// The branch pushed (`main`), or the pull request's head branch.
    pub branch: Option<String>,
    /// A pull request whose head lives in another repository.
    pub fork: bool,
    /// The head commit's time (unix seconds), from the push payload:
    /// recorded, never used to order commits.
    pub commit_time: Option<i64>,
    /// The push's `before` (the branch's previous head): when it is the
    /// registered commit the push is a fast-forward. Absent in jobs queued
    /// before it existed.
    #[serde(default)]
    pub before: Option<String>,
    /// The repository's default branch, suggested when it is not registered.
    pub default_branch: Option<String>,
    /// The pull request number.
    pub pull_request: Option<u64>,
    /// A click on the check run's "Accept drift" (trigger `rerequest`): the run to
    /// complete again and who clicked. Absent from other jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_drift: Option<AcceptDriftRequest>,
    /// The push of a skill source that asked for this re-sync (trigger `skill`). Absent
    /// from other jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill_change: Option<SkillChange>,
    /// The pull request's base branch (triggers `pull_request` and `closed`): previews are
    /// recorded for registrations of that ref. Absent from other jobs, and from jobs queued
    /// before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_ref: Option<String>,
    /// A fork's head approved for previews by `/astrolift preview`: who approved it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_approved_by: Option<String>,
    /// Whether the closed pull request was merged (trigger `closed`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub merged: bool,
    /// The comment's commands (trigger `comment`). Absent from other jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<CommentRequest>,
}

/// The comment a `comment` job runs the commands of (docs/reference.md §17).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommentRequest {
    /// GitHub's id of the comment: with a command's line, its dispatch's idempotency key.
    pub comment_id: u64,
    /// The commenter's login, whose permission is asked before any command runs.
    pub sender: String,
    /// The comment's command lines, at most 5, in order, as the webhook found them; the
    /// worker parses each ([`crate::comment_commands::parse_comment`] of their lines).
    pub lines: Vec<String>,
    /// The comment had more command lines than these: the reply says the rest were not run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub more_than_five: bool,
}

/// The push of a skill repository (or the catalogue) that a dependent re-sync follows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillChange {
    /// `owner/name` of the skill repository.
    pub repository: String,
    /// The branch pushed.
    pub git_ref: String,
    /// The commit pushed.
    pub commit: String,
}

/// Who asked to accept the critical drift shown on which check run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcceptDriftRequest {
    /// The run whose button was clicked: completed again, not a new one.
    pub check_run_id: u64,
    /// The sender's GitHub login (whose permission is asked before anything is recorded).
    pub sender: String,
}

/// The current message format.
pub const JOB_VERSION: u32 = 1;

impl SyncJob {
    /// The job's FIFO lane within its repository. Jobs of one lane run in
    /// the order they were queued; lanes run independently, so the
    /// registered ref's pushes (the only jobs that apply) never wait behind
    /// pull requests from forks, or pushes to other branches:
    /// - `push-<branch hash>`: pushes to one branch (the branch is hashed:
    ///   any length and any characters, and a group id allows 128 ASCII), and the
    ///   re-syncs of that branch that a skill source's push asks for (`skill`), so that
    ///   they are ordered with the branch's pushes, and reconcile's syncs of it (`reconcile`);
    /// - `fork`: pull requests from forks (outsiders);
    /// - `pull-request`: pull requests from the repository's own branches, their closing
    ///   (`closed`) and the commands of comments on pull requests (`comment`), so that a
    ///   command runs after the syncs of the heads pushed before it;
    /// - `rerequest`: re-run checks.
    pub fn lane(&self) -> String {
        match self.trigger {
            JobTrigger::Push | JobTrigger::SkillChanged | JobTrigger::Reconcile => {
                let branch = self.branch.as_deref().unwrap_or_default();
                let digest = sha2::Sha256::digest(branch.as_bytes());
                format!("push-{}", hex::encode(&digest[..8]))
            }
            JobTrigger::PullRequest if self.fork => "fork".to_owned(),
            JobTrigger::PullRequest | JobTrigger::Closed | JobTrigger::Comment => {
                "pull-request".to_owned()
            }
            JobTrigger::Rerequest => "rerequest".to_owned(),
        }
    }

    /// The SQS FIFO message group: the repository id and the job's [lane](Self::lane).
    pub fn message_group_id(&self) -> String {
        format!("{}-{}", self.repository_id, self.lane())
    }
}

/// Why a verified event makes no job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoJob {
    /// Not an event that syncs (ping, installation, ignored events).
    NotASync,
    /// A push that deletes a branch, or a push of a tag.
    NotABranchPush,
    /// `check_suite.requested` arrives with every push, which is already handled.
    CoveredByPush,
    /// The event names no installation, so there is no token to fetch with.
    NoInstallation,
    /// A comment on an issue, by a bot, or with no `/astrolift` command line.
    NoCommand,
}

/// The job a verified event asks for, if any.
pub fn job_for_event(delivery_id: &str, event: &Event) -> Result<SyncJob, NoJob> {
    let job = |trigger, repository: &RepositoryRef, installation: Option<u64>, head: &str| {
        let installation_id = installation.ok_or(NoJob::NoInstallation)?;
        Ok(SyncJob {
            version: JOB_VERSION,
            delivery_id: delivery_id.to_owned(),
            trigger,
            installation_id,
            repository: repository.full_name.clone(),
            repository_id: repository.id,
            head_sha: head.to_owned(),
            branch: None,
            fork: false,
            commit_time: None,
            before: None,
            default_branch: repository.default_branch.clone(),
            pull_request: None,
            accept_drift: None,
            skill_change: None,
            base_ref: None,
            preview_approved_by: None,
            merged: false,
            comment: None,
        })
    };
    match event {
        Event::Push(push) => {
            let branch = push.git_ref.strip_prefix("refs/heads/");
            if push.deleted || branch.is_none() {
                return Err(NoJob::NotABranchPush);
            }
            let installation = push.installation.as_ref().map(|i| i.id);
            let mut job = job(
                JobTrigger::Push,
                &push.repository,
                installation,
                &push.after,
            )?;
            job.branch = branch.map(str::to_owned);
            job.commit_time = push.head_commit_time();
            job.before = Some(push.before.clone());
            Ok(job)
        }
        Event::PullRequest(pr) => {
            let installation = pr.installation.as_ref().map(|i| i.id);
            let head = &pr.pull_request.head;
            let mut job = job(
                JobTrigger::PullRequest,
                &pr.repository,
                installation,
                &head.sha,
            )?;
            job.branch = Some(head.git_ref.clone());
            job.fork = pr.is_fork();
            job.pull_request = Some(pr.number);
            job.base_ref = Some(pr.pull_request.base.git_ref.clone());
            if pr.action == "closed" {
                job.trigger = JobTrigger::Closed;
                job.merged = pr.pull_request.merged;
            }
            Ok(job)
        }
        Event::CheckSuite(suite) if suite.action == "requested" => Err(NoJob::CoveredByPush),
        Event::CheckSuite(suite) => {
            let installation = suite.installation.as_ref().map(|i| i.id);
            let head = &suite.check_suite.head_sha;
            let mut job = job(JobTrigger::Rerequest, &suite.repository, installation, head)?;
            job.branch = suite.check_suite.head_branch.clone();
            Ok(job)
        }
        Event::CheckRun(run)
            if run.action == "requested_action" && !run.requests_accept_drift() =>
        {
            Err(NoJob::NotASync)
        }
        Event::CheckRun(run) => {
            let accept_drift = match run.requests_accept_drift() {
                true => {
                    let sender = run.sender.as_ref().ok_or(NoJob::NotASync)?;
                    Some(AcceptDriftRequest {
                        check_run_id: run.check_run.id,
                        sender: sender.login.clone(),
                    })
                }
                false => None,
            };
            let installation = run.installation.as_ref().map(|i| i.id);
            let head = &run.check_run.head_sha;
            let mut job = job(JobTrigger::Rerequest, &run.repository, installation, head)?;
            job.branch = run
                .check_run
                .check_suite
                .as_ref()
                .and_then(|s| s.head_branch.clone());
            job.accept_drift = accept_drift;
            Ok(job)
        }
        Event::IssueComment(comment) => comment_job(comment, job),
        _ => Err(NoJob::NotASync),
    }
}

/// The `comment` job of a new comment on a pull request with `/astrolift` command lines by a
/// person (docs/reference.md §17); `job` builds the envelope. A comment job syncs no commit,
/// so its `head_sha` is empty: the worker reads the pull request's head when it runs.
fn comment_job(
    comment: &IssueCommentEvent,
    job: impl Fn(JobTrigger, &RepositoryRef, Option<u64>, &str) -> Result<SyncJob, NoJob>,
) -> Result<SyncJob, NoJob> {
    if !comment.is_on_pull_request() || comment.by_a_bot() {
        return Err(NoJob::NoCommand);
    }
    let parsed = parse_comment(&comment.comment.body);
    if parsed.commands.is_empty() {
        return Err(NoJob::NoCommand);
    }
    let installation = comment.installation.as_ref().map(|i| i.id);
    let mut job = job(JobTrigger::Comment, &comment.repository, installation, "")?;
    job.pull_request = Some(comment.issue.number);
    job.comment = Some(CommentRequest {
        comment_id: comment.comment.id,
        sender: comment.sender.login.clone(),
        lines: parsed.commands.into_iter().map(|line| line.text).collect(),
        more_than_five: parsed.more_than_five,
    });
    Ok(job)
}

/// A report job: the trigger function recorded a terminal callback of a dispatch that asks
/// for its result to be reported (`report = "comment" | "check"`), but it does not hold the
/// App's key, so it relays the report to the sync worker, which does. The message names only
/// the task: the worker reads the target and the result from the state store, so the queue
/// never carries a result (whatever its size) and a forged message can only repeat a report
/// that was asked for.
///
/// ```json
/// {"version":1,"kind":"report","task_id":"…"}
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportJob {
    /// The message format; 1 today.
    pub version: u32,
    /// Always [`REPORT_KIND`]: what tells a report job from a [`SyncJob`] on the queue.
    pub kind: String,
    /// The task whose terminal result is reported.
    pub task_id: String,
}

/// [`ReportJob::kind`].
pub const REPORT_KIND: &str = "report";

impl ReportJob {
    pub fn new(task_id: impl Into<String>) -> Self {
        Self {
            version: JOB_VERSION,
            kind: REPORT_KIND.to_owned(),
            task_id: task_id.into(),
        }
    }

    /// Its FIFO message group and deduplication id: one per task (at most 128 ASCII
    /// characters, whatever the task id), so reports never wait behind each other or
    /// behind a repository's syncs, and a task relayed twice within SQS's 5-minute window
    /// is reported once.
    pub fn message_group_id(&self) -> String {
        let digest = sha2::Sha256::digest(self.task_id.as_bytes());
        format!("report-{}", hex::encode(&digest[..16]))
    }
}

/// A message of the queues the sync worker reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueuedJob {
    Sync(Box<SyncJob>),
    Report(ReportJob),
}

/// Why a queue message is not a job.
#[derive(Debug, thiserror::Error)]
pub enum NotAJob {
    #[error("the message is not JSON of a job: {0}")]
    Json(#[from] serde_json::Error),
    #[error("the message's kind `{0}` is not a kind of job")]
    UnknownKind(String),
}

impl QueuedJob {
    /// The job of a queue message: a [`ReportJob`] by its `kind`, a [`SyncJob`] without one
    /// (sync jobs predate the field).
    pub fn parse(body: &str) -> Result<Self, NotAJob> {
        #[derive(Deserialize)]
        struct Kind {
            #[serde(default)]
            kind: Option<String>,
        }
        let Kind { kind } = serde_json::from_str(body)?;
        match kind.as_deref() {
            None => Ok(QueuedJob::Sync(Box::new(serde_json::from_str(body)?))),
            Some(REPORT_KIND) => Ok(QueuedJob::Report(serde_json::from_str(body)?)),
            Some(other) => Err(NotAJob::UnknownKind(other.chars().take(64).collect())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_message_is_a_report_by_its_kind_and_a_sync_job_without_one() {
        let report = serde_json::to_string(&ReportJob::new("t-1")).expect("JSON");
        assert_eq!(report, r#"{"version":1,"kind":"report","task_id":"t-1"}"#);
        assert_eq!(
            QueuedJob::parse(&report).expect("a job"),
            QueuedJob::Report(ReportJob::new("t-1"))
        );
        let sync = r#"{"version":1,"delivery_id":"d","trigger":"push","installation_id":1,
            "repository":"o/r","repository_id":2,"head_sha":"abc","branch":"main",
            "fork":false,"commit_time":null,"default_branch":"main","pull_request":null}"#;
        assert!(matches!(QueuedJob::parse(sync), Ok(QueuedJob::Sync(_))));
        assert!(matches!(
            QueuedJob::parse(r#"{"kind":"reboot"}"#),
            Err(NotAJob::UnknownKind(kind)) if kind == "reboot"
        ));
        assert!(QueuedJob::parse(r#"{"kind":"report"}"#).is_err());
        assert!(QueuedJob::parse("[]").is_err());
    }

    #[test]
    fn a_dependent_re_sync_is_trigger_skill_in_the_lane_of_its_branch_pushes() {
        let push = r#"{"version":1,"delivery_id":"d","trigger":"push","installation_id":1,
            "repository":"o/r","repository_id":2,"head_sha":"abc","branch":"main",
            "fork":false,"commit_time":null,"default_branch":"main","pull_request":null}"#;
        let Ok(QueuedJob::Sync(push)) = QueuedJob::parse(push) else {
            panic!("a job queued before dependents followed still parses");
        };
        assert_eq!(push.skill_change, None);
        let resync = SyncJob {
            trigger: JobTrigger::SkillChanged,
            skill_change: Some(SkillChange {
                repository: "o/skills".into(),
                git_ref: "main".into(),
                commit: "def".into(),
            }),
            ..(*push).clone()
        };
        let json = serde_json::to_value(&resync).expect("JSON");
        assert_eq!(json["trigger"], "skill");
        assert_eq!(json["skill_change"]["repository"], "o/skills");
        assert_eq!(
            QueuedJob::parse(&json.to_string()).ok(),
            Some(QueuedJob::Sync(Box::new(resync.clone())))
        );
        assert_eq!(resync.message_group_id(), push.message_group_id());
        // Another job's JSON has no `skill_change` key.
        let json = serde_json::to_value(&*push).expect("JSON");
        assert!(json.get("skill_change").is_none());
    }

    #[test]
    fn a_report_job_has_a_bounded_group_per_task() {
        let long = ReportJob::new("t".repeat(500)).message_group_id();
        assert_eq!(long.len(), "report-".len() + 32);
        assert_ne!(
            ReportJob::new("a").message_group_id(),
            ReportJob::new("b").message_group_id()
        );
    }
}
