//! A comment's `/astrolift` commands, run by the worker that holds the App's key
//! (docs/reference.md §17, "Comment commands").
//!
//! Order, for one `comment` job: react `eyes` (a comment deleted since is the end of it) →
//! ask the commenter's permission once, if any command needs it, and refuse them all in one
//! reply when it is below write → read the pull request once, if a command needs it → run
//! each command line → post one reply with what there is to say, unless a reply to this
//! comment is already there.
//!
//! What is said where:
//! - a queued dispatch says nothing now: the `eyes` reaction says the App has the comment,
//!   and its dispatch's [`ReportTarget`] (kind `comment`) brings one reply when its task
//!   ends (`astrolift_dispatch::report`);
//! - a queued `recheck` or `preview` says nothing: its check run is the answer;
//! - `help`, an unknown command, a line that does not parse and every refusal are a
//!   section of the one reply.
//!
//! Idempotency: a dispatch's key is `comment:<comment id>:<line>`, so a redelivery or a
//! second delivery of the comment dispatches once (the duplicate says nothing); the jobs a
//! command queues are named by the comment and line; and the reply carries a hidden marker
//! naming the comment, so a job run again never replies twice. Every piece of comment text
//! in a reply goes through [`echo`] or [`code_span`].

use std::fmt::Write as _;
use std::sync::Arc;

use astrolift_dispatch::dispatch::{DispatchError, Origin};
use astrolift_dispatch::message::Source;
use astrolift_dispatch::on_demand::{OnDemand, OnDemandError, dispatch_on_demand, preview_may_use};
use astrolift_forge::github::{
    GitHubError, Installation, PullRequestDetails, REACTION_EYES, RepoPath,
};
use astrolift_store::state::{EnvSpec, Preview, PreviewStatus, ReportTarget, env_spec_for_project};
use http::StatusCode;

use crate::comment_commands::{
    Command, CommandLine, DispatchCommand, MAX_COMMANDS, code_span, echo, help_text, parse_comment,
};
use crate::ingress::now;
use crate::job::{CommentRequest, JobTrigger, SyncJob};
use crate::layers::LayerPackager;
use crate::runner::{JobError, SyncRunner};

/// The hidden line that marks the App's reply to a comment.
fn reply_marker(comment_id: u64) -> String {
    format!("<!-- astrolift:reply-to-comment {comment_id} -->")
}

/// The permissions that may run a command other than `help`.
const WRITE_PERMISSIONS: &str = "`write`, `maintain` or `admin`";

/// Runs the commands of `comment`, a comment on pull request `number` (module docs).
pub(crate) async fn run_commands(
    runner: &SyncRunner,
    job: &SyncJob,
    comment: &CommentRequest,
    number: u64,
) -> Result<(), JobError> {
    let repo = RepoPath::parse(&job.repository)?;
    let installation = runner.github.installation(job.installation_id);
    match installation
        .create_comment_reaction(&repo, comment.comment_id, REACTION_EYES)
        .await
    {
        Err(error) if is_gone(&error) => {
            tracing::info!(
                comment_id = comment.comment_id,
                "the comment is gone: nothing to run"
            );
            return Ok(());
        }
        other => drop(other?),
    }
    let parsed = parse_comment(&comment.lines.join("\n"));
    let context = Context {
        runner,
        job,
        comment,
        number,
        installation: &installation,
        repo: &repo,
    };
    let mut reply = Reply::default();
    if comment.more_than_five {
        reply.note(format!(
            "Only the first {MAX_COMMANDS} command lines of the comment were read; the rest \
             were not run."
        ));
    }
    if let Some(refusal) = context.refusal(&parsed.commands).await? {
        reply.note(refusal);
    } else {
        let pull = context.pull_request(&parsed.commands).await?;
        for line in &parsed.commands {
            if let Some(answer) = context.run_line(line, pull.as_ref()).await? {
                reply.section(line, answer);
            }
        }
    }
    context.post(reply).await
}

/// What one comment's commands run with.
struct Context<'a> {
    runner: &'a SyncRunner,
    job: &'a SyncJob,
    comment: &'a CommentRequest,
    number: u64,
    installation: &'a Installation,
    repo: &'a RepoPath,
}

/// The pull request a command acts on, or why there is none to act on.
enum PullState {
    Open(Box<PullRequestDetails>),
    Closed,
    Gone,
}

impl Context<'_> {
    /// The reply refusing every command, when one needs write permission and the commenter
    /// has less; asked of GitHub now, never read from the event.
    async fn refusal(&self, commands: &[CommandLine]) -> Result<Option<String>, JobError> {
        if !commands.iter().any(needs_write) {
            return Ok(None);
        }
        let sender = &self.comment.sender;
        let permission = self
            .installation
            .collaborator_permission(self.repo, sender)
            .await?;
        if permission.as_ref().is_some_and(|p| p.can_write()) {
            return Ok(None);
        }
        let has = permission.as_ref().map_or("none", |p| p.shown());
        tracing::info!(sender, has, "comment commands refused: no write permission");
        Ok(Some(format!(
            "{} has the permission {} on this repository; these commands need {WRITE_PERMISSIONS}, \
             so none of them was run.",
            code_span(sender),
            code_span(has)
        )))
    }

    /// The pull request, read once when a command acts on it.
    async fn pull_request(&self, commands: &[CommandLine]) -> Result<Option<PullState>, JobError> {
        if !commands.iter().any(needs_write) {
            return Ok(None);
        }
        let state = match self
            .installation
            .pull_request(self.repo, self.number)
            .await?
        {
            None => PullState::Gone,
            Some(pull) if !pull.is_open() => PullState::Closed,
            Some(pull) => PullState::Open(Box::new(pull)),
        };
        Ok(Some(state))
    }

    /// Runs one command line; what the reply says of it, if anything.
    async fn run_line(
        &self,
        line: &CommandLine,
        pull: Option<&PullState>,
    ) -> Result<Option<String>, JobError> {
        let command = match &line.command {
            Err(error) => {
                return Ok(Some(format!(
                    "{}. `/astrolift help` lists the commands.",
                    error.markdown()
                )));
            }
            Ok(Command::Help) => return Ok(Some(help_text())),
            Ok(Command::Unknown { name }) => {
                return Ok(Some(format!(
                    "There is no command {}.\n\n{}",
                    echo(name),
                    help_text()
                )));
            }
            Ok(command) => command,
        };
        let pull = match pull {
            Some(PullState::Open(pull)) => pull,
            Some(PullState::Closed) => {
                return Ok(Some(format!(
                    "Pull request #{} is closed: nothing runs from it.",
                    self.number
                )));
            }
            _ => {
                return Ok(Some(format!(
                    "Pull request #{} cannot be read (it was deleted, or the App cannot see \
                     it): nothing runs from it.",
                    self.number
                )));
            }
        };
        match command {
            Command::Dispatch(dispatch) => self.dispatch(line, dispatch, pull).await,
            Command::Recheck => self.queue(self.recheck_job(line, pull)).await,
            Command::Preview => self.preview(line, pull).await,
            Command::Help | Command::Unknown { .. } => Ok(None),
        }
    }

    /// `dispatch`: the preview of the agent on this pull request, at its head.
    async fn dispatch(
        &self,
        line: &CommandLine,
        command: &DispatchCommand,
        pull: &PullRequestDetails,
    ) -> Result<Option<String>, JobError> {
        let state = self.runner.stores.state.as_ref();
        let previews: Vec<Preview> = state
            .previews()
            .list_previews(&self.job.repository)
            .await?
            .into_iter()
            .filter(|p| p.pull_request == self.number && p.status == PreviewStatus::Active)
            .collect();
        let Some(preview) = find_preview(&previews, &command.agent) else {
            return Ok(Some(not_previewed(&command.agent, &previews)));
        };
        if preview.head_sha != pull.head.sha {
            return Ok(Some(format!(
                "The preview {} is of {}, not of this pull request's head {}: the head's check \
                 run says why it has no preview.",
                code_span(&preview.name),
                code_span(short(&preview.head_sha)),
                code_span(short(&pull.head.sha))
            )));
        }
        let env_spec = match self.env_spec(command, preview).await? {
            Ok(spec) => spec,
            Err(refusal) => return Ok(Some(refusal)),
        };
        self.dispatch_preview(line, command, preview, pull, env_spec.as_ref())
            .await
    }

    /// The env spec `--env-spec` names, if it is one of the preview's project marked for
    /// previews; else the reply saying why not.
    async fn env_spec(
        &self,
        command: &DispatchCommand,
        preview: &Preview,
    ) -> Result<Result<Option<EnvSpec>, String>, JobError> {
        let Some(name) = &command.env_spec else {
            return Ok(Ok(None));
        };
        let state = self.runner.stores.state.as_ref();
        let spec = match env_spec_for_project(state, name, &preview.project_id).await? {
            Ok(spec) => spec,
            Err(refusal) => {
                return Ok(Err(format!(
                    "The env spec {} cannot be used: {}.",
                    echo(name),
                    code_span(&refusal.to_string())
                )));
            }
        };
        Ok(match preview_may_use(&spec) {
            Ok(()) => Ok(Some(spec)),
            Err(refused) => Err(format!("Refused: {}.", code_span(&refused.to_string()))),
        })
    }

    async fn dispatch_preview(
        &self,
        line: &CommandLine,
        command: &DispatchCommand,
        preview: &Preview,
        pull: &PullRequestDetails,
        env_spec: Option<&EnvSpec>,
    ) -> Result<Option<String>, JobError> {
        let route = match &self.runner.dispatches {
            Some(route) => Ok(Arc::clone(route)),
            None => LayerPackager::from_env(&self.runner.stores, None)
                .await
                .map(Arc::new),
        };
        let route = match route {
            Ok(route) => route,
            Err(error) => {
                tracing::warn!(%error, "no dispatch queue for a comment's dispatch");
                return Ok(Some(
                    "This App has no dispatch queue configured: nothing can be dispatched."
                        .to_owned(),
                ));
            }
        };
        let agent = preview.as_agent();
        let input = command.input.clone().map(serde_json::Value::Object);
        let origin = Origin {
            sender: Some(self.comment.sender.clone()),
            trusted: true,
            report: Some(ReportTarget {
                kind: "comment".to_owned(),
                repository: self.job.repository.clone(),
                installation_id: self.job.installation_id,
                number: self.number,
                head_sha: Some(pull.head.sha.clone()),
            }),
        };
        let request = OnDemand {
            agent: &agent,
            env_spec,
            input: input.as_ref(),
            idempotency_key: Some(format!(
                "comment:{}:{}",
                self.comment.comment_id, line.index
            )),
            source: Source::Comment {
                comment_id: self.comment.comment_id,
                line: line.index,
            },
            origin: &origin,
            allow_pending_layers: false,
            callback_base: route.callback_base.as_deref(),
            now: now(),
        };
        let state = self.runner.stores.state.as_ref();
        match dispatch_on_demand(state, &route.content, route.queue.as_ref(), &request).await {
            Ok(recorded) => {
                tracing::info!(
                    dispatch_id = %recorded.id,
                    preview = %preview.name,
                    duplicate = !recorded.created,
                    "comment dispatch"
                );
                Ok(None)
            }
            Err(refused) => refused_dispatch(&preview.name, refused),
        }
    }

    /// `preview`: a fork's head approved by this commenter, or the previews synced again.
    async fn preview(
        &self,
        line: &CommandLine,
        pull: &PullRequestDetails,
    ) -> Result<Option<String>, JobError> {
        let registrations = self
            .runner
            .stores
            .state
            .list_repository_registrations(&self.job.repository)
            .await?;
        let previewed = registrations
            .iter()
            .any(|r| r.previews && r.registered_ref == pull.base.git_ref);
        if !previewed {
            return Ok(Some(format!(
                "No registration of this repository for {} has previews on \
                 (`astrolift register-repo … --previews`), so nothing is previewed.",
                code_span(&pull.base.git_ref)
            )));
        }
        let mut job = self.pull_request_job(line, pull, JobTrigger::PullRequest);
        if pull.is_fork() {
            job.preview_approved_by = Some(self.comment.sender.clone());
        }
        self.queue(job).await
    }

    /// `recheck`: the head checked again, as **Re-run** does.
    fn recheck_job(&self, line: &CommandLine, pull: &PullRequestDetails) -> SyncJob {
        self.pull_request_job(line, pull, JobTrigger::Rerequest)
    }

    /// A job of this pull request's head of now, named by the comment and line (so a job run
    /// again queues it once where the queue deduplicates).
    fn pull_request_job(
        &self,
        line: &CommandLine,
        pull: &PullRequestDetails,
        trigger: JobTrigger,
    ) -> SyncJob {
        SyncJob {
            delivery_id: format!("comment-{}-{}", self.comment.comment_id, line.index),
            trigger,
            head_sha: pull.head.sha.clone(),
            branch: Some(pull.head.git_ref.clone()),
            fork: pull.is_fork(),
            pull_request: Some(self.number),
            base_ref: Some(pull.base.git_ref.clone()),
            comment: None,
            ..self.job.clone()
        }
    }

    async fn queue(&self, job: SyncJob) -> Result<Option<String>, JobError> {
        let Some(jobs) = &self.runner.jobs else {
            return Ok(Some(
                "This App has no sync queue configured: the command cannot be queued.".to_owned(),
            ));
        };
        jobs.enqueue(&job).await?;
        tracing::info!(trigger = ?job.trigger, commit = %job.head_sha, "comment queued a job");
        Ok(None)
    }

    /// Posts `reply`, unless it is empty or the App already replied to this comment.
    async fn post(&self, reply: Reply) -> Result<(), JobError> {
        let Some(text) = reply.markdown(self.comment.comment_id) else {
            return Ok(());
        };
        let marker = reply_marker(self.comment.comment_id);
        let existing = self
            .installation
            .issue_comments(self.repo, self.number)
            .await;
        let replied = existing.as_ref().is_ok_and(|comments| {
            comments.iter().any(|c| {
                c.user.as_ref().is_some_and(|u| u.is_bot())
                    && c.body.as_deref().is_some_and(|b| b.contains(&marker))
            })
        });
        if replied {
            tracing::info!(
                comment_id = self.comment.comment_id,
                "already replied to this comment"
            );
            return Ok(());
        }
        match self
            .installation
            .create_issue_comment(self.repo, self.number, &text)
            .await
        {
            Err(error) if is_gone(&error) => {
                tracing::info!(
                    pull_request = self.number,
                    "cannot reply: the pull request is gone"
                );
                Ok(())
            }
            other => other.map(drop).map_err(JobError::from),
        }
    }
}

/// Whether `line` is a command that needs write permission, and acts on the pull request.
fn needs_write(line: &CommandLine) -> bool {
    line.command.as_ref().is_ok_and(Command::needs_write)
}

/// The active preview of this pull request that `wanted` names: its agent's name, or its own
/// (`<agent>-pr<N>`). The preview's own name is matched first, so an agent named like another
/// agent's preview never shadows it.
fn find_preview<'a>(previews: &'a [Preview], wanted: &str) -> Option<&'a Preview> {
    previews
        .iter()
        .find(|p| p.name == wanted)
        .or_else(|| previews.iter().find(|p| p.agent == wanted))
}

/// The reply for an agent with no preview on this pull request.
fn not_previewed(wanted: &str, previews: &[Preview]) -> String {
    let mut text = format!("{} has no preview on this pull request", echo(wanted));
    if previews.is_empty() {
        text.push_str(
            ": it has none (its head's check run says why, in its **Previews** section).",
        );
    } else {
        let names: Vec<String> = previews.iter().map(|p| code_span(&p.name)).collect();
        let _ = write!(text, "; its previews are {}.", names.join(", "));
    }
    text
}

/// The reply for a dispatch that was not made; `Err` for what a retry of the job may get
/// past (a store or the queue unavailable).
fn refused_dispatch(preview: &str, refused: OnDemandError) -> Result<Option<String>, JobError> {
    let reason = match refused {
        OnDemandError::Dispatch(
            DispatchError::Store(_)
            | DispatchError::Queue(_)
            | DispatchError::NotQueued { .. }
            | DispatchError::Random(_),
        ) => return Err(JobError::Dispatch(Box::new(refused))),
        other => other.to_string(),
    };
    tracing::info!(preview, %reason, "comment dispatch refused");
    Ok(Some(format!(
        "{} was not dispatched: {}.",
        code_span(preview),
        code_span(&reason)
    )))
}

fn is_gone(error: &GitHubError) -> bool {
    matches!(
        error.status(),
        Some(StatusCode::NOT_FOUND | StatusCode::GONE)
    )
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// The one reply to a comment: notes, then a section per command line that has an answer.
#[derive(Debug, Default)]
struct Reply {
    parts: Vec<String>,
}

impl Reply {
    fn note(&mut self, text: String) {
        self.parts.push(text);
    }

    fn section(&mut self, line: &CommandLine, answer: String) {
        self.parts
            .push(format!("**{}**\n\n{answer}", echo(&line.text)));
    }

    /// The reply's Markdown with its marker; `None` when there is nothing to say.
    fn markdown(&self, comment_id: u64) -> Option<String> {
        if self.parts.is_empty() {
            return None;
        }
        Some(format!(
            "{}\n{}",
            reply_marker(comment_id),
            self.parts.join("\n\n---\n\n")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use astrolift_store::state::preview_name;

    fn preview(agent: &str, number: u64) -> Preview {
        Preview {
            repository: "o/r".into(),
            manifest_path: format!("agents/{agent}/astrolift.toml"),
            pull_request: number,
            project_id: "p".into(),
            agent: agent.into(),
            name: preview_name(agent, number),
            head_sha: "a".repeat(40),
            snapshot_hash: "b".repeat(64),
            payload_digest: "c".repeat(64),
            layer_key: None,
            status: PreviewStatus::Active,
            fork_approved_by: None,
            pushed_at: 1,
            updated_at: 1,
            version: 1,
        }
    }

    #[test]
    fn a_preview_is_found_by_its_agent_or_its_own_name_and_its_own_name_wins() {
        // An agent named like another agent's preview: the preview's own name wins.
        let previews = [preview("x-pr7", 7), preview("x", 7)];
        assert_eq!(
            find_preview(&previews, "x-pr7").map(|p| p.agent.as_str()),
            Some("x")
        );
        assert_eq!(
            find_preview(&previews, "x-pr7-pr7").map(|p| p.agent.as_str()),
            Some("x-pr7")
        );
        assert!(find_preview(&previews, "y").is_none());
    }

    #[test]
    fn an_unknown_agent_is_echoed_in_a_code_span_with_the_previews_there_are() {
        let text = not_previewed("`<b>`", &[preview("triage", 7)]);
        assert!(text.starts_with("`` `<b>` ``"), "{text}");
        assert!(text.contains("`triage-pr7`"), "{text}");
        assert!(not_previewed("x", &[]).contains("**Previews** section"));
    }

    #[test]
    fn a_reply_carries_its_marker_and_nothing_is_posted_when_it_is_empty() {
        assert_eq!(Reply::default().markdown(5), None);
        let mut reply = Reply::default();
        reply.note("one".into());
        reply.note("two".into());
        let text = reply.markdown(5).expect("a reply");
        assert!(
            text.starts_with("<!-- astrolift:reply-to-comment 5 -->\n"),
            "{text}"
        );
        assert!(text.contains("one\n\n---\n\ntwo"), "{text}");
    }
}
