//! How a failed command reports its error on stderr (docs/reference.md §3, "Errors"):
//! one line with what failed (each distinct cause once), then, where the kind of
//! failure is known (AWS, GitHub, I/O), a `hint:` line with what to do next. The full
//! chain, as it was, only with `--verbose` or `RUST_LOG`.

use std::io;

use astrolift_forge::github::GitHubError;
use astrolift_store::{AwsCause, StoreError};

/// The lines to print for `error`.
pub fn lines(error: &anyhow::Error, verbose: bool) -> Vec<String> {
    let mut lines = vec![format!("error: {}", summary(error))];
    if let Some(hint) = hint(error) {
        lines.push(format!("hint: {hint}"));
    }
    if verbose {
        lines.push("detail:".to_owned());
        lines.extend(error.chain().map(|cause| format!("  {cause}")));
    }
    lines
}

/// The messages of the chain joined by `: `, each distinct cause once: a message that
/// the one before it already contains is left out, and so is a part that repeats the
/// part just before it.
fn summary(error: &anyhow::Error) -> String {
    let mut kept: Vec<String> = Vec::new();
    for cause in error.chain() {
        let message = cause.to_string();
        if kept.last().is_some_and(|last| last.contains(&message)) {
            continue;
        }
        kept.push(message);
    }
    let joined = kept.join(": ");
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split(": ") {
        if parts.last() != Some(&part) {
            parts.push(part);
        }
    }
    parts.join(": ")
}

/// What to do next, for the kinds of failure we can tell apart.
fn hint(error: &anyhow::Error) -> Option<String> {
    error.chain().find_map(|cause| {
        if let Some(store) = cause.downcast_ref::<StoreError>() {
            store_hint(store)
        } else if let Some(github) = cause.downcast_ref::<GitHubError>() {
            github_hint(github)
        } else if let Some(io) = cause.downcast_ref::<io::Error>() {
            io_hint(io)
        } else {
            // Another AWS service's error (a queue, a secret), in the store's words.
            AwsCause::in_message(&cause.to_string()).map(aws_hint)
        }
    })
}

fn store_hint(error: &StoreError) -> Option<String> {
    match error {
        StoreError::Io { source, .. } => io_hint(source),
        StoreError::Backend { .. } | StoreError::Unavailable(_) => {
            let message = error.to_string();
            match AwsCause::in_message(&message) {
                Some(cause) => Some(aws_hint(cause)),
                None if message.contains("ResourceNotFound") || message.contains("NoSuchBucket") => {
                    Some("check the table or bucket that --state and --blobs (ASTROLIFT_STATE, ASTROLIFT_BLOBS) name, and AWS_REGION".into())
                }
                None => None,
            }
        }
        _ => None,
    }
}

/// The hint of an AWS cause, with the endpoint `AWS_ENDPOINT_URL` names when it is set.
fn aws_hint(cause: AwsCause) -> String {
    let endpoint = std::env::var("AWS_ENDPOINT_URL")
        .ok()
        .filter(|url| !url.is_empty())
        .map(|url| without_credentials(&url));
    match (cause, endpoint) {
        (AwsCause::Connect | AwsCause::Timeout, Some(url)) => {
            format!("{} (AWS_ENDPOINT_URL is {url})", cause.hint())
        }
        _ => cause.hint().to_owned(),
    }
}

/// `url` as an error may show it: a user name or password in it is dropped (secrets never
/// reach an error), and text that is not a URL is not echoed.
fn without_credentials(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            // Both only fail for URLs that cannot hold credentials (no host).
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            let shown = parsed.to_string();
            // The URL type adds the root path; show the endpoint as it was written.
            match shown.strip_suffix('/') {
                Some(bare) if !url.ends_with('/') => bare.to_owned(),
                _ => shown,
            }
        }
        Err(_) => "set but not a URL".to_owned(),
    }
}

fn github_hint(error: &GitHubError) -> Option<String> {
    let hint = match error {
        GitHubError::Status { status, .. } => match status.as_u16() {
            401 => "check GITHUB_TOKEN, or the App's GITHUB_APP_ID and private key",
            403 => "the token or App lacks a permission on this repository (or hit a limit)",
            404 => "check the repository's name, and that the token or App can see it",
            _ => return None,
        },
        GitHubError::RateLimited { .. } => "wait for the rate limit to reset, then retry",
        GitHubError::Transport { .. } => {
            "check the network, and GITHUB_API_URL when pointing at GitHub Enterprise or a fake"
        }
        GitHubError::Credentials(_) => {
            "check GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY (or GITHUB_APP_PRIVATE_KEY_FILE)"
        }
        _ => return None,
    };
    Some(hint.to_owned())
}

fn io_hint(error: &io::Error) -> Option<String> {
    let hint = match error.kind() {
        io::ErrorKind::NotFound => "check that the path exists",
        io::ErrorKind::PermissionDenied => "check the permissions of the path",
        _ => return None,
    };
    Some(hint.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_is_shown_without_its_credentials() {
        assert_eq!(
            without_credentials("http://key:secret@localhost:5000"),
            "http://localhost:5000"
        );
        assert_eq!(
            without_credentials("http://127.0.0.1:9/"),
            "http://127.0.0.1:9/"
        );
        assert_eq!(without_credentials("not a url"), "set but not a URL");
    }

    #[test]
    fn a_cause_repeated_in_the_chain_is_said_once() {
        let inner = anyhow::anyhow!("client error (Connect)");
        let error = inner
            .context("client error (Connect)")
            .context("cannot reach GitHub for POST /x: client error (Connect)")
            .context("cannot post suggestions on o/r#1");
        assert_eq!(
            summary(&error),
            "cannot post suggestions on o/r#1: cannot reach GitHub for POST /x: client error (Connect)"
        );
        let repeated = anyhow::anyhow!("cannot verify: cannot verify: secret `x` is empty");
        assert_eq!(summary(&repeated), "cannot verify: secret `x` is empty");
    }

    #[test]
    fn an_aws_failure_gets_its_hint() {
        let store = StoreError::Unavailable(format!(
            "DynamoDB Query: {}: region",
            AwsCause::NoRegion.words()
        ));
        let error = anyhow::Error::from(store).context("cannot list agents");
        let lines = lines(&error, false);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[1].contains("AWS_REGION"), "{lines:?}");
        let verbose = super::lines(&error, true);
        assert_eq!(
            verbose[2..],
            [
                "detail:",
                "  cannot list agents",
                "  store unavailable (retryable): DynamoDB Query: no AWS region set: region"
            ]
        );
    }

    #[test]
    fn a_missing_file_gets_its_hint() {
        let error = anyhow::Error::from(io::Error::from(io::ErrorKind::NotFound))
            .context("cannot read body.json");
        assert_eq!(hint(&error).as_deref(), Some("check that the path exists"));
    }
}
