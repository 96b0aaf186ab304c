//! Resolving `secret://` references (docs/reference.md §13, `ASTROLIFT_SECRETS`).
//!
//! Every reference is resolved *for a project*: the project of the agent
//! registration whose binding or dispatch names it.
//!
//! - `env` (the default): `secret://agents/jira-hook` reads the variable
//!   `ASTROLIFT_SECRET_AGENTS_JIRA_HOOK` ([`env_var_name`]). The project is
//!   ignored: this resolver is for local, single-tenant use (one operator, one
//!   environment), never for an App installed by several owners.
//! - `aws`: the Secrets Manager secret `${ASTROLIFT_SECRET_PREFIX}<project>/agents/jira-hook`
//!   ([`scoped_secret_id`]; prefix default [`DEFAULT_PREFIX`]), cached per
//!   full secret id for [`AwsSecretResolver::DEFAULT_TTL`]. A reference can
//!   only name secrets under its own project's prefix: the project id may not
//!   contain `/`, so `secret://../B/x` or `secret://B/x` under project `A` is
//!   `astrolift/A/../B/x` or `astrolift/A/B/x`, never a secret of project `B`.
//!
//! Errors are classified for the HTTP answer: [`SecretError::is_unavailable`]
//! (Secrets Manager unreachable, throttled or failing: 503, retry) against
//! everything else (missing secret, access denied, bad reference: a
//! configuration error, 500).
//!
//! The App's own webhook secret (for `verify.kind = "github"`) is not a
//! `secret://` reference: it is `GITHUB_WEBHOOK_SECRET` (and
//! `GITHUB_WEBHOOK_SECRET_PREVIOUS` during a rotation), handed to a resolver
//! with `with_github_webhook`.
//!
//! Secret values are [`SecretString`]s: never printed by `Debug`, never part
//! of an error message (errors name the reference only).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use astrolift_forge::webhook::WebhookSecrets;
use astrolift_store::BoxFuture;
use secrecy::SecretString;

const SCHEME: &str = "secret://";

/// Why a secret could not be resolved. Names the reference, never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    #[error("`{0}` is not a secret:// reference")]
    NotAReference(String),
    #[error("secret `{reference}` is not set (expected the environment variable {variable})")]
    MissingEnv { reference: String, variable: String },
    #[error("secret `{0}` is empty")]
    Empty(String),
    /// Secrets Manager answered that the secret does not exist, or refused
    /// it (access denied, invalid): a configuration error.
    #[error("secret `{reference}` could not be read from Secrets Manager: {reason}")]
    Aws { reference: String, reason: String },
    /// Secrets Manager could not be reached, or failed on its side: retry.
    #[error("Secrets Manager is unavailable for secret `{reference}`: {reason}")]
    Unavailable { reference: String, reason: String },
    /// The project id cannot scope a secret name (empty, or not made of
    /// `A-Z a-z 0-9 _ + = . @ -`).
    #[error("project id `{0}` cannot scope a secret name")]
    InvalidProject(String),
    #[error("the GitHub App webhook secret is not configured (GITHUB_WEBHOOK_SECRET)")]
    NoGithubSecret,
    #[error("ASTROLIFT_SECRETS must be `env` or `aws`, not `{0}`")]
    UnknownBackend(String),
}

impl SecretError {
    /// Whether the secret store itself is unavailable (503, retry), rather
    /// than the secret missing or misconfigured (500).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, SecretError::Unavailable { .. })
    }
}

/// The default of `ASTROLIFT_SECRET_PREFIX`.
pub const DEFAULT_PREFIX: &str = "astrolift/";

/// Resolves `secret://` references to values, for one project at a time.
/// Implementations cache as they see fit; the Lambda builds one at cold start
/// and keeps it.
pub trait SecretResolver: Send + Sync + std::fmt::Debug {
    /// The value of `reference` (`secret://…`) as the project `project` sees it.
    fn resolve<'a>(
        &'a self,
        project: &'a str,
        reference: &'a str,
    ) -> BoxFuture<'a, Result<SecretString, SecretError>>;
    /// The GitHub App's webhook secret(s), for `verify.kind = "github"`.
    fn github_webhook(&self) -> Option<&WebhookSecrets>;
}

/// The environment variable that holds `reference` under `ASTROLIFT_SECRETS=env`:
/// `ASTROLIFT_SECRET_` + the part after `secret://`, upper-cased, every
/// character other than A–Z and 0–9 turned into `_`.
pub fn env_var_name(reference: &str) -> Result<String, SecretError> {
    let name = secret_name(reference)?;
    let suffix: String = name
        .chars()
        .map(|c| {
            let c = c.to_ascii_uppercase();
            if c.is_ascii_uppercase() || c.is_ascii_digit() {
                c
            } else {
                '_'
            }
        })
        .collect();
    Ok(format!("ASTROLIFT_SECRET_{suffix}"))
}

/// The part after `secret://`.
pub fn secret_name(reference: &str) -> Result<&str, SecretError> {
    reference
        .strip_prefix(SCHEME)
        .filter(|name| !name.is_empty())
        .ok_or_else(|| SecretError::NotAReference(redact_reference(reference)))
}

/// The Secrets Manager secret id of `reference` for `project`:
/// `{prefix}{project}/{name}`. The project id must be non-empty and made of
/// the characters Secrets Manager allows in a name other than `/`, and not
/// `.` or `..`: so no project id is a prefix path of another's, and no
/// reference leaves its project's prefix.
pub fn scoped_secret_id(
    prefix: &str,
    project: &str,
    reference: &str,
) -> Result<String, SecretError> {
    let name = secret_name(reference)?;
    if !valid_project_id(project) {
        return Err(SecretError::InvalidProject(project.to_owned()));
    }
    Ok(format!("{prefix}{project}/{name}"))
}

/// Whether `project` can scope secret names (see [`scoped_secret_id`]): 1–128 of
/// `A-Z a-z 0-9 _ + = . @ -`, and not `.` or `..`. The CLI refuses any other
/// `--project-id`, so that every registered project's secrets resolve.
pub fn valid_project_id(project: &str) -> bool {
    !project.is_empty()
        && project.len() <= 128
        && project != "."
        && project != ".."
        && project
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_+=.@-".contains(&b))
}

/// A string that is not a reference might be a pasted secret: show its shape only.
fn redact_reference(text: &str) -> String {
    if text.starts_with(SCHEME) {
        text.to_owned()
    } else {
        "<not shown>".to_owned()
    }
}

/// The GitHub App webhook secrets from `GITHUB_WEBHOOK_SECRET` (and `_PREVIOUS`), if set.
pub fn github_webhook_from_env() -> Option<WebhookSecrets> {
    let current = std::env::var("GITHUB_WEBHOOK_SECRET").ok()?;
    let previous = std::env::var("GITHUB_WEBHOOK_SECRET_PREVIOUS")
        .ok()
        .filter(|p| !p.is_empty());
    WebhookSecrets::new(current, previous).ok()
}

/// `ASTROLIFT_SECRETS=env`: secrets from environment variables, read on every call.
#[derive(Debug, Default)]
pub struct EnvSecretResolver {
    github: Option<WebhookSecrets>,
}

impl EnvSecretResolver {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_github_webhook(mut self, secrets: WebhookSecrets) -> Self {
        self.github = Some(secrets);
        self
    }

    fn lookup(reference: &str) -> Result<SecretString, SecretError> {
        let variable = env_var_name(reference)?;
        match std::env::var(&variable) {
            Ok(value) if value.is_empty() => Err(SecretError::Empty(reference.to_owned())),
            Ok(value) => Ok(SecretString::from(value)),
            Err(_) => Err(SecretError::MissingEnv {
                reference: reference.to_owned(),
                variable,
            }),
        }
    }
}

impl SecretResolver for EnvSecretResolver {
    /// Single-tenant: the project is not part of the variable name.
    fn resolve<'a>(
        &'a self,
        _project: &'a str,
        reference: &'a str,
    ) -> BoxFuture<'a, Result<SecretString, SecretError>> {
        Box::pin(async move { Self::lookup(reference) })
    }

    fn github_webhook(&self) -> Option<&WebhookSecrets> {
        self.github.as_ref()
    }
}

/// `ASTROLIFT_SECRETS=aws`: Secrets Manager `GetSecretValue` of the
/// project-scoped secret id, cached per secret id for a TTL.
#[derive(Debug)]
pub struct AwsSecretResolver {
    client: aws_sdk_secretsmanager::Client,
    prefix: String,
    ttl: Duration,
    cache: Mutex<HashMap<String, (Instant, SecretString)>>,
    github: Option<WebhookSecrets>,
}

impl AwsSecretResolver {
    /// How long a fetched value is reused.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(300);

    /// A resolver with the default prefix ([`DEFAULT_PREFIX`]).
    pub fn new(client: aws_sdk_secretsmanager::Client, ttl: Duration) -> Self {
        Self {
            client,
            prefix: DEFAULT_PREFIX.to_owned(),
            ttl,
            cache: Mutex::new(HashMap::new()),
            github: None,
        }
    }

    /// Secret ids are `{prefix}{project}/{name}`.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// A client from the standard AWS configuration (`AWS_ENDPOINT_URL`
    /// included), with the prefix of `ASTROLIFT_SECRET_PREFIX`.
    pub async fn from_env() -> Self {
        let config = astrolift_store::load_sdk_config().await;
        let prefix =
            std::env::var("ASTROLIFT_SECRET_PREFIX").unwrap_or_else(|_| DEFAULT_PREFIX.to_owned());
        Self::new(
            aws_sdk_secretsmanager::Client::new(&config),
            Self::DEFAULT_TTL,
        )
        .with_prefix(prefix)
    }

    pub fn with_github_webhook(mut self, secrets: WebhookSecrets) -> Self {
        self.github = Some(secrets);
        self
    }

    fn cached(&self, name: &str) -> Option<SecretString> {
        let cache = self.cache.lock().ok()?;
        let (fetched, value) = cache.get(name)?;
        (fetched.elapsed() < self.ttl).then(|| value.clone())
    }

    async fn fetch(&self, project: &str, reference: &str) -> Result<SecretString, SecretError> {
        // The cache is keyed by the full, project-scoped id: a value fetched
        // for one project is never served to another.
        let name = scoped_secret_id(&self.prefix, project, reference)?;
        let name = name.as_str();
        if let Some(value) = self.cached(name) {
            return Ok(value);
        }
        let output = self
            .client
            .get_secret_value()
            .secret_id(name)
            .send()
            .await
            .map_err(|error| aws_error(reference, &error))?;
        let value = output
            .secret_string()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| SecretError::Empty(reference.to_owned()))?;
        let value = SecretString::from(value.to_owned());
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(name.to_owned(), (Instant::now(), value.clone()));
        }
        Ok(value)
    }
}

/// A service answer about the secret (not found, access denied, invalid) is
/// a configuration error; no answer, or the service failing or throttling,
/// is [`SecretError::Unavailable`].
fn aws_error(
    reference: &str,
    error: &aws_sdk_secretsmanager::error::SdkError<
        aws_sdk_secretsmanager::operation::get_secret_value::GetSecretValueError,
        aws_sdk_secretsmanager::config::http::HttpResponse,
    >,
) -> SecretError {
    use aws_sdk_secretsmanager::error::{ProvideErrorMetadata, SdkError};
    // The service error's code and message name the secret, never its value.
    let reason = astrolift_store::describe_sdk_error("Secrets Manager", "GetSecretValue", error);
    let reference = reference.to_owned();
    let service_side = match error {
        SdkError::ServiceError(service) => {
            let code = service.err().code().unwrap_or_default();
            service.raw().status().as_u16() >= 500
                || code == "InternalServiceError"
                || code.contains("Throttling")
                || code == "ServiceUnavailable"
        }
        _ => true,
    };
    if service_side {
        SecretError::Unavailable { reference, reason }
    } else {
        SecretError::Aws { reference, reason }
    }
}

impl SecretResolver for AwsSecretResolver {
    fn resolve<'a>(
        &'a self,
        project: &'a str,
        reference: &'a str,
    ) -> BoxFuture<'a, Result<SecretString, SecretError>> {
        Box::pin(self.fetch(project, reference))
    }

    fn github_webhook(&self) -> Option<&WebhookSecrets> {
        self.github.as_ref()
    }
}

/// The resolver `ASTROLIFT_SECRETS` selects (`env` when unset), with the App's
/// webhook secret from `GITHUB_WEBHOOK_SECRET` when set.
pub async fn resolver_from_env() -> Result<Box<dyn SecretResolver>, SecretError> {
    let backend = std::env::var("ASTROLIFT_SECRETS").unwrap_or_else(|_| "env".to_owned());
    let github = github_webhook_from_env();
    match backend.as_str() {
        "" | "env" => {
            let resolver = EnvSecretResolver::new();
            Ok(Box::new(match github {
                Some(g) => resolver.with_github_webhook(g),
                None => resolver,
            }))
        }
        "aws" => {
            let resolver = AwsSecretResolver::from_env().await;
            Ok(Box::new(match github {
                Some(g) => resolver.with_github_webhook(g),
                None => resolver,
            }))
        }
        other => Err(SecretError::UnknownBackend(other.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use aws_sdk_secretsmanager::error::{ConnectorError, SdkError};

    use super::aws_error;

    #[test]
    fn an_unreachable_secrets_manager_is_unavailable_in_one_line() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let error = SdkError::dispatch_failure(ConnectorError::io(Box::new(refused)));
        let error = aws_error("secret://agents/x", &error);
        assert!(error.is_unavailable());
        assert_eq!(
            error.to_string(),
            "Secrets Manager is unavailable for secret `secret://agents/x`: \
             Secrets Manager GetSecretValue: cannot connect to AWS: connection refused"
        );
    }
}
