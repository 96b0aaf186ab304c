//! Resolving `secret://` references (docs/reference.md §13, `ASTROLIFT_SECRETS`).
//!
//! - `env` (the default): `secret://agents/jira-hook` reads the variable
//!   `ASTROLIFT_SECRET_AGENTS_JIRA_HOOK` ([`env_var_name`]).
//! - `aws`: the Secrets Manager secret named `agents/jira-hook`, cached for
//!   [`AwsSecretResolver::DEFAULT_TTL`].
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
    #[error("secret `{reference}` could not be read from Secrets Manager: {reason}")]
    Aws { reference: String, reason: String },
    #[error("the GitHub App webhook secret is not configured (GITHUB_WEBHOOK_SECRET)")]
    NoGithubSecret,
    #[error("ASTROLIFT_SECRETS must be `env` or `aws`, not `{0}`")]
    UnknownBackend(String),
}

/// Resolves `secret://` references to values. Implementations cache as they
/// see fit; the Lambda builds one at cold start and keeps it.
pub trait SecretResolver: Send + Sync + std::fmt::Debug {
    /// The value of `reference` (`secret://…`).
    fn resolve<'a>(
        &'a self,
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
    fn resolve<'a>(
        &'a self,
        reference: &'a str,
    ) -> BoxFuture<'a, Result<SecretString, SecretError>> {
        Box::pin(async move { Self::lookup(reference) })
    }

    fn github_webhook(&self) -> Option<&WebhookSecrets> {
        self.github.as_ref()
    }
}

/// `ASTROLIFT_SECRETS=aws`: Secrets Manager `GetSecretValue`, cached per name for a TTL.
#[derive(Debug)]
pub struct AwsSecretResolver {
    client: aws_sdk_secretsmanager::Client,
    ttl: Duration,
    cache: Mutex<HashMap<String, (Instant, SecretString)>>,
    github: Option<WebhookSecrets>,
}

impl AwsSecretResolver {
    /// How long a fetched value is reused.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(300);

    pub fn new(client: aws_sdk_secretsmanager::Client, ttl: Duration) -> Self {
        Self {
            client,
            ttl,
            cache: Mutex::new(HashMap::new()),
            github: None,
        }
    }

    /// A client from the standard AWS configuration (`AWS_ENDPOINT_URL` included).
    pub async fn from_env() -> Self {
        let config = aws_config::load_from_env().await;
        Self::new(
            aws_sdk_secretsmanager::Client::new(&config),
            Self::DEFAULT_TTL,
        )
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

    async fn fetch(&self, reference: &str) -> Result<SecretString, SecretError> {
        let name = secret_name(reference)?;
        if let Some(value) = self.cached(name) {
            return Ok(value);
        }
        let output = self
            .client
            .get_secret_value()
            .secret_id(name)
            .send()
            .await
            .map_err(|error| SecretError::Aws {
                reference: reference.to_owned(),
                // The service error's code and message name the secret, never its value.
                reason: aws_sdk_secretsmanager::error::DisplayErrorContext(&error).to_string(),
            })?;
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

impl SecretResolver for AwsSecretResolver {
    fn resolve<'a>(
        &'a self,
        reference: &'a str,
    ) -> BoxFuture<'a, Result<SecretString, SecretError>> {
        Box::pin(self.fetch(reference))
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
