//! `astrolift jobs list|retry`: `serve`'s durable queue and its dead letter, on the state
//! store `serve` runs on (docs/operations.md, "Failed jobs on serve"). `retry` queues a
//! failed job again through `astrolift_bot::dead_letter`; a running `serve` picks it up within
//! seconds, else its next start does.
//!
//! With `--queue-url`, the same two commands read and redrive the sync queue's SQS
//! dead-letter queue instead, the Lambda side's dead letter
//! (`astrolift_bot::sqs_dead_letter`; docs/operations.md, "Drain or redrive the DLQ").

use std::process::ExitCode;

use anyhow::bail;
use astrolift_bot::config::{DEFAULT_BLOBS, DEFAULT_STATE};
use astrolift_bot::dead_letter::{Retried, retry_failed, retry_job};
use astrolift_bot::sqs_dead_letter::{DeadLetter, Redrive, SqsDeadLetterQueue};
use astrolift_store::state::{JobRecord, JobState};

use astrolift_cli::render::plural;

use super::registry::{ListFormat, with_state};
use super::stores::{StoreArgs, now, runtime};
use crate::output::outln;

/// The states `--state` filters on.
const STATES: [(&str, JobState); 3] = [
    ("queued", JobState::Queued),
    ("running", JobState::Running),
    ("failed", JobState::Failed),
];

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// `queued`, `running` or `failed` (the dead letter): only the jobs in that state. A
    /// value with a scheme (`sqlite:PATH`, `dynamodb:TABLE`) names the state store, as
    /// `--state` does in every other command; give the flag twice for both.
    #[arg(long = "state", value_name = "STATE|URL", action = clap::ArgAction::Append)]
    state: Vec<String>,
    /// `human` or `json` (one array of job records).
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    format: ListFormat,
    /// The sync queue's SQS dead-letter queue to list instead (on AWS); nothing is consumed.
    #[arg(long, value_name = "URL", conflicts_with = "state")]
    queue_url: Option<String>,
    /// Blob store: `file:DIR` or `s3://BUCKET[/prefix]` (accepted like every state
    /// command's; jobs read none).
    #[arg(
        long = "blobs",
        env = "ASTROLIFT_BLOBS",
        default_value = DEFAULT_BLOBS
    )]
    blobs: String,
}

impl ListArgs {
    /// The state store (`--state URL`, else `ASTROLIFT_STATE`, else the default) and the
    /// job state to list, if any.
    fn split(&self) -> anyhow::Result<(StoreArgs, Option<JobState>)> {
        let (urls, filters): (Vec<&String>, Vec<&String>) =
            self.state.iter().partition(|value| value.contains(':'));
        let filter = match filters.as_slice() {
            [] => None,
            [name] => match STATES.iter().find(|(known, _)| known == name) {
                Some((_, state)) => Some(*state),
                None => bail!(
                    "--state {name:?}: expected queued, running or failed, or a state store URL \
                     (sqlite:PATH, dynamodb:TABLE)"
                ),
            },
            _ => bail!("--state names one job state (queued, running or failed), not several"),
        };
        Ok((self.stores(&urls)?, filter))
    }

    fn stores(&self, urls: &[&String]) -> anyhow::Result<StoreArgs> {
        let state = match urls {
            [] => std::env::var("ASTROLIFT_STATE")
                .ok()
                .filter(|url| !url.is_empty())
                .unwrap_or_else(|| DEFAULT_STATE.to_owned()),
            [url] => (*url).clone(),
            _ => bail!("--state names one state store, not several"),
        };
        Ok(StoreArgs {
            state,
            blobs: self.blobs.clone(),
        })
    }
}

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["job_id", "all_failed"])))]
pub struct RetryArgs {
    /// The failed job to queue again (its `id` in `jobs list`; with `--queue-url`, its
    /// `message_id`).
    #[arg(value_name = "JOB_ID|MESSAGE_ID")]
    job_id: Option<String>,
    /// Queue every failed job again.
    #[arg(long)]
    all_failed: bool,
    /// The sync queue's SQS dead-letter queue to redrive from instead (on AWS).
    #[arg(long, value_name = "URL")]
    queue_url: Option<String>,
    /// Where `--queue-url`'s jobs go (default: the queue whose redrive policy names it).
    #[arg(long, value_name = "URL", requires = "queue_url")]
    to_queue_url: Option<String>,
    #[command(flatten)]
    stores: StoreArgs,
}

pub fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    if let Some(url) = &args.queue_url {
        return list_queue(url, args.format);
    }
    let (stores, filter) = args.split()?;
    with_state(&stores, async |state| {
        let jobs = state.jobs().list_jobs(filter).await?;
        match args.format {
            ListFormat::Json => outln!("{}", serde_json::to_string(&jobs)?)?,
            ListFormat::Human => {
                for job in &jobs {
                    outln!("{}", describe(job))?;
                }
                outln!("{}", plural(jobs.len(), "job"))?;
            }
        }
        Ok(())
    })
}

pub fn retry(args: RetryArgs) -> anyhow::Result<ExitCode> {
    if let Some(url) = &args.queue_url {
        let which = match &args.job_id {
            Some(id) => Redrive::Message(id.clone()),
            None => Redrive::All,
        };
        return redrive_queue(url, &which, args.to_queue_url.as_deref());
    }
    with_state(&args.stores, async |state| {
        let jobs = state.jobs();
        let Some(id) = &args.job_id else {
            let retried = retry_failed(jobs, now()).await?;
            for id in &retried {
                outln!("queued job {id} again")?;
            }
            outln!("{} queued again", plural(retried.len(), "failed job"))?;
            return Ok(());
        };
        match retry_job(jobs, id, now()).await? {
            Retried::Queued => outln!("queued job {id} again")?,
            Retried::NotFailed(state) => {
                bail!(
                    "job {id} is {}, not failed: it runs already",
                    state.as_str()
                )
            }
            Retried::NotFound | Retried::OtherRepository => {
                bail!("no job {id} (`astrolift jobs list` shows the jobs)")
            }
        }
        Ok(())
    })
}

/// `jobs list --queue-url`: the DLQ's messages, made visible again once listed.
fn list_queue(url: &str, format: ListFormat) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(async {
        let letters = SqsDeadLetterQueue::from_env(url).await.list().await?;
        match format {
            ListFormat::Json => outln!("{}", serde_json::to_string(&letters)?)?,
            ListFormat::Human => {
                for letter in &letters {
                    outln!("{}", describe_letter(letter))?;
                }
                outln!("{}", plural(letters.len(), "message"))?;
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// `jobs retry --queue-url`: sends the messages back to the source queue.
fn redrive_queue(url: &str, which: &Redrive, to: Option<&str>) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(async {
        let sent = SqsDeadLetterQueue::from_env(url)
            .await
            .redrive(which, to)
            .await?;
        for letter in &sent {
            outln!("queued message {} again", letter.message_id)?;
        }
        if *which == Redrive::All {
            outln!("{} queued again", plural(sent.len(), "failed message"))?;
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// `MESSAGE_ID  5 receives  push OWNER/REPO@REF SHA  delivery DELIVERY_ID`, or the reason
/// the body is not a job.
fn describe_letter(letter: &DeadLetter) -> String {
    let receives = plural(
        usize::try_from(letter.receive_count).unwrap_or(usize::MAX),
        "receive",
    );
    let Some(job) = &letter.job else {
        let error = letter.error.as_deref().unwrap_or("not a sync job");
        return format!("{}  {receives}  {error}", letter.message_id);
    };
    let head: String = job.head_sha.chars().take(12).collect();
    let trigger = serde_json::to_value(job.trigger)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    format!(
        "{}  {receives}  {trigger} {}@{} {head}  delivery {}",
        letter.message_id,
        job.repository,
        job.branch.as_deref().unwrap_or("-"),
        job.delivery_id,
    )
}

/// `ID  failed  5 attempts  push octo/agents@main 0123456789ab: ERROR`.
fn describe(record: &JobRecord) -> String {
    let job = record.job.value();
    let field = |name: &str| job.get(name).and_then(|v| v.as_str()).unwrap_or("?");
    let head: String = field("head_sha").chars().take(12).collect();
    let mut line = format!(
        "{}  {}  {}  {} {}@{} {head}",
        record.id,
        record.state.as_str(),
        plural(
            usize::try_from(record.attempts).unwrap_or(usize::MAX),
            "attempt"
        ),
        field("trigger"),
        field("repository"),
        job.get("branch").and_then(|v| v.as_str()).unwrap_or("-"),
    );
    if let Some(error) = &record.error {
        line.push_str(": ");
        line.push_str(error);
    }
    line
}
