//! Building the bot's parts from the environment (docs/reference.md §13), once per
//! process: a Lambda container's cold start or `serve`'s start.
//!
//! Secrets come from plain variables locally (`GITHUB_WEBHOOK_SECRET`,
//! `GITHUB_APP_PRIVATE_KEY[_FILE]`) or, on Lambda, from Secrets Manager ids
//! (`GITHUB_WEBHOOK_SECRET_ID`, `GITHUB_WEBHOOK_SECRET_PREVIOUS_ID`,
//! `GITHUB_APP_PRIVATE_KEY_SECRET_ID`), read once at cold start. A plain
//! variable wins over an id.

use std::sync::Arc;

use astrolift_dispatch::engine::{EngineSettingsError, WorkflowEngine};
use astrolift_dispatch::step_functions::StepFunctions;
use astrolift_forge::github::{
    AppCredentials, CredentialsError, GitHubApp, GitHubConfig, GitHubError,
};
use astrolift_forge::webhook::{SignatureError, WebhookSecrets};
use astrolift_store::{StateLocation, StoreError, blob_store_from_url, open_state_store};
use astrolift_sync::{InvalidConcurrency, Stores, SyncConcurrency};
use secrecy::{ExposeSecret as _, SecretString};
use tokio::sync::OnceCell;

use crate::queue::SqsJobQueue;
use crate::state_machines::StepFunctionsEngine;

/// The embedded defaults (docs/reference.md §13).
pub const DEFAULT_STATE: &str = "sqlite:.astrolift/state.db";
pub const DEFAULT_BLOBS: &str = "file:.astrolift/blobs";

/// A part of the configuration that is missing or wrong. Never holds a secret value.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0} is not set")]
    Missing(&'static str),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    GitHub(#[from] GitHubError),
    #[error(transparent)]
    Credentials(#[from] CredentialsError),
    #[error("invalid webhook secret: {0}")]
    WebhookSecret(#[from] SignatureError),
    #[error("cannot read the Secrets Manager secret named by {variable}: {reason}")]
    SecretsManager {
        variable: &'static str,
        reason: String,
    },
    #[error(transparent)]
    WorkflowEngine(#[from] EngineSettingsError),
    #[error(transparent)]
    Concurrency(#[from] InvalidConcurrency),
}

/// Reads environment variables and, when needed, Secrets Manager.
#[derive(Debug, Default)]
pub struct Environment {
    /// Loaded once, on first use, for every AWS client this environment makes.
    aws: OnceCell<aws_config::SdkConfig>,
    secrets_manager: OnceCell<aws_sdk_secretsmanager::Client>,
    /// Read once: the webhook ingress and the trigger service both need them.
    webhook: OnceCell<WebhookSecrets>,
    /// Built once: `serve`'s runner and its trigger service's reporter share one client,
    /// so one installation-token cache and one TLS setup.
    github: OnceCell<Arc<GitHubApp>>,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// `ASTROLIFT_DOCS_URL`: where the operator publishes `docs/diagnostics.md`
/// (a URL of the file; each code links to `#<anchor>` in it), for check runs
/// that link to a copy other than the project's default branch.
pub fn docs_url() -> Option<String> {
    var("ASTROLIFT_DOCS_URL")
}

impl Environment {
    pub fn new() -> Self {
        Self::default()
    }

    /// `ASTROLIFT_STATE` and `ASTROLIFT_BLOBS`, with the embedded defaults, at
    /// `ASTROLIFT_SYNC_CONCURRENCY`.
    pub async fn stores(&self) -> Result<Stores, ConfigError> {
        let state_url = var("ASTROLIFT_STATE").unwrap_or_else(|| DEFAULT_STATE.to_owned());
        // The SQLite store creates its file's directory when it opens it; a build
        // without SQLite (the functions) creates nothing before refusing `sqlite:`.
        let state = StateLocation::parse(&state_url)?;
        let blobs_url = var("ASTROLIFT_BLOBS").unwrap_or_else(|| DEFAULT_BLOBS.to_owned());
        Ok(Stores {
            state: open_state_store(&state).await?,
            blobs: blob_store_from_url(&blobs_url).await?,
            concurrency: SyncConcurrency::from_env()?,
        })
    }

    /// The App's webhook secrets: current and, during rotation, previous.
    /// Read once per environment; the two Secrets Manager reads run
    /// concurrently (one round trip of the cold start, not two).
    pub async fn webhook_secrets(&self) -> Result<WebhookSecrets, ConfigError> {
        self.webhook
            .get_or_try_init(|| self.read_webhook_secrets())
            .await
            .cloned()
    }

    async fn read_webhook_secrets(&self) -> Result<WebhookSecrets, ConfigError> {
        let (current, previous) = tokio::join!(
            self.secret("GITHUB_WEBHOOK_SECRET", "GITHUB_WEBHOOK_SECRET_ID"),
            self.secret(
                "GITHUB_WEBHOOK_SECRET_PREVIOUS",
                "GITHUB_WEBHOOK_SECRET_PREVIOUS_ID",
            ),
        );
        let current = current?.ok_or(ConfigError::Missing("GITHUB_WEBHOOK_SECRET"))?;
        let previous = previous?.map(|p| p.expose_secret().to_owned());
        Ok(WebhookSecrets::new(
            current.expose_secret().to_owned(),
            previous,
        )?)
    }

    /// The App (id, private key, `GITHUB_API_URL`).
    /// Built once per environment, however many parts ask for it.
    pub async fn github_app(&self) -> Result<Arc<GitHubApp>, ConfigError> {
        self.github
            .get_or_try_init(|| async { self.build_github_app().await.map(Arc::new) })
            .await
            .cloned()
    }

    async fn build_github_app(&self) -> Result<GitHubApp, ConfigError> {
        let key = self
            .secret("GITHUB_APP_PRIVATE_KEY", "GITHUB_APP_PRIVATE_KEY_SECRET_ID")
            .await?;
        let credentials = match key {
            Some(pem) => {
                let app_id = var("GITHUB_APP_ID").ok_or(ConfigError::Missing("GITHUB_APP_ID"))?;
                AppCredentials::from_lookup(|name| match name {
                    "GITHUB_APP_ID" => Some(app_id.clone()),
                    "GITHUB_APP_PRIVATE_KEY" => Some(pem.expose_secret().to_owned()),
                    _ => None,
                })?
            }
            None => AppCredentials::from_env()?,
        };
        Ok(GitHubApp::new(GitHubConfig::from_env()?, credentials)?)
    }

    /// The standard AWS configuration (`AWS_ENDPOINT_URL` included), loaded
    /// once per container however many clients are made from it.
    pub async fn aws_config(&self) -> &aws_config::SdkConfig {
        self.aws.get_or_init(astrolift_store::load_sdk_config).await
    }

    /// The Step Functions engine of workflow runs, when `ASTROLIFT_WORKFLOW_ENGINE` is
    /// `stepfunctions` (docs/reference.md §5.6); `None` for the state-store engine.
    pub async fn workflow_engine(&self) -> Result<Option<StepFunctionsEngine>, ConfigError> {
        let WorkflowEngine::StepFunctions(settings) = WorkflowEngine::from_env()? else {
            return Ok(None);
        };
        let client = aws_sdk_sfn::Client::new(self.aws_config().await);
        Ok(Some(StepFunctionsEngine {
            client: StepFunctions::new(client, settings.role_arn.clone()),
            settings,
        }))
    }

    /// The SQS FIFO sync queue, when `ASTROLIFT_SYNC_QUEUE_URL` is set.
    pub async fn sync_queue(&self) -> Option<SqsJobQueue> {
        let url = var("ASTROLIFT_SYNC_QUEUE_URL")?;
        let client = aws_sdk_sqs::Client::new(self.aws_config().await);
        Some(SqsJobQueue::new(client, url))
    }

    /// `plain` if set, else the Secrets Manager secret whose id is in `id_variable`.
    async fn secret(
        &self,
        plain: &'static str,
        id_variable: &'static str,
    ) -> Result<Option<SecretString>, ConfigError> {
        if let Some(value) = var(plain) {
            return Ok(Some(SecretString::from(value)));
        }
        let Some(secret_id) = var(id_variable) else {
            return Ok(None);
        };
        let client = self
            .secrets_manager
            .get_or_init(|| async { aws_sdk_secretsmanager::Client::new(self.aws_config().await) })
            .await;
        let output = client
            .get_secret_value()
            .secret_id(secret_id)
            .send()
            .await
            .map_err(|error| ConfigError::SecretsManager {
                variable: id_variable,
                reason: astrolift_store::describe_sdk_error(
                    "Secrets Manager",
                    "GetSecretValue",
                    &error,
                ),
            })?;
        let value = output.secret_string().ok_or(ConfigError::SecretsManager {
            variable: id_variable,
            reason: "the secret has no string value".to_owned(),
        })?;
        Ok(Some(SecretString::from(value.to_owned())))
    }
}
