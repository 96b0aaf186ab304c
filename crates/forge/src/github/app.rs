//! GitHub App authentication: the App JWT and cached installation tokens.
//!
//! The App signs a short JWT (RS256) with its private key and trades it for
//! an installation token (valid one hour). Tokens are cached per installation
//! until [`TOKEN_REFRESH_MARGIN`] before they expire, so one token serves many
//! events; concurrent callers for one installation share one refresh through
//! a per-installation `tokio` mutex.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, SystemTime};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

/// How far back `iat` is set, against clock drift (GitHub's advice).
pub const JWT_BACKDATE: Duration = Duration::from_secs(60);
/// How far ahead `exp` is set; GitHub refuses more than 10 minutes.
pub const JWT_LIFETIME: Duration = Duration::from_secs(9 * 60);
/// A cached token is refreshed this long before it expires.
pub const TOKEN_REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

/// The time, injectable so expiry is testable.
pub trait Clock: Send + Sync + fmt::Debug {
    fn now(&self) -> SystemTime;
}

/// The real clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// Why the App's credentials could not be loaded or used.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    #[error("{0} is not set")]
    Missing(&'static str),
    #[error("GITHUB_APP_ID must be a positive integer")]
    BadAppId,
    #[error("cannot read GITHUB_APP_PRIVATE_KEY_FILE {path}: {source}")]
    KeyFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The key is not an RSA PEM. The key itself is never shown.
    #[error("the GitHub App private key is not a valid RSA PEM key ({0})")]
    BadKey(#[source] jsonwebtoken::errors::Error),
    #[error("cannot sign the App JWT ({0})")]
    Sign(#[source] jsonwebtoken::errors::Error),
}

/// The App id and its private key. `Debug` never shows the key.
#[derive(Clone)]
pub struct AppCredentials {
    app_id: u64,
    private_key: SecretString,
}

impl fmt::Debug for AppCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppCredentials")
            .field("app_id", &self.app_id)
            .field("private_key", &"[REDACTED]")
            .finish()
    }
}

/// The claims of an App JWT.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppJwtClaims {
    pub iat: u64,
    pub exp: u64,
    pub iss: String,
}

impl AppJwtClaims {
    /// The claims for a JWT signed at `now`.
    pub fn at(app_id: u64, now: SystemTime) -> Self {
        let now = epoch_seconds(now);
        Self {
            iat: now.saturating_sub(JWT_BACKDATE.as_secs()),
            exp: now + JWT_LIFETIME.as_secs(),
            iss: app_id.to_string(),
        }
    }
}

impl AppCredentials {
    /// Credentials from an App id and a PEM private key; the key is checked
    /// now, so a bad key fails at start-up rather than on the first event.
    pub fn new(app_id: u64, private_key_pem: SecretString) -> Result<Self, CredentialsError> {
        EncodingKey::from_rsa_pem(private_key_pem.expose_secret().as_bytes())
            .map_err(CredentialsError::BadKey)?;
        Ok(Self {
            app_id,
            private_key: private_key_pem,
        })
    }

    /// `GITHUB_APP_ID` plus `GITHUB_APP_PRIVATE_KEY` (PEM) or, when that is
    /// unset, the file named by `GITHUB_APP_PRIVATE_KEY_FILE`.
    pub fn from_env() -> Result<Self, CredentialsError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// As [`AppCredentials::from_env`], reading variables through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, CredentialsError> {
        let app_id = lookup("GITHUB_APP_ID").ok_or(CredentialsError::Missing("GITHUB_APP_ID"))?;
        let app_id = app_id
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|id| *id > 0)
            .ok_or(CredentialsError::BadAppId)?;
        let pem = match lookup("GITHUB_APP_PRIVATE_KEY").filter(|k| !k.trim().is_empty()) {
            Some(pem) => pem,
            None => read_key_file(&lookup)?,
        };
        Self::new(app_id, SecretString::from(pem))
    }

    pub fn app_id(&self) -> u64 {
        self.app_id
    }

    /// A signed App JWT valid from 60 s before `now` to 9 minutes after.
    pub fn jwt(&self, now: SystemTime) -> Result<SecretString, CredentialsError> {
        let key = EncodingKey::from_rsa_pem(self.private_key.expose_secret().as_bytes())
            .map_err(CredentialsError::BadKey)?;
        let claims = AppJwtClaims::at(self.app_id, now);
        jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &key)
            .map(SecretString::from)
            .map_err(CredentialsError::Sign)
    }
}

fn read_key_file(lookup: &impl Fn(&str) -> Option<String>) -> Result<String, CredentialsError> {
    let path = lookup("GITHUB_APP_PRIVATE_KEY_FILE").ok_or(CredentialsError::Missing(
        "GITHUB_APP_PRIVATE_KEY or GITHUB_APP_PRIVATE_KEY_FILE",
    ))?;
    let path = PathBuf::from(path);
    std::fs::read_to_string(&path).map_err(|source| CredentialsError::KeyFile { path, source })
}

/// Seconds since the Unix epoch (0 for a clock before 1970).
pub fn epoch_seconds(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// An installation token and when it stops being valid.
#[derive(Clone)]
pub struct InstallationToken {
    pub token: SecretString,
    pub expires_at: SystemTime,
}

impl fmt::Debug for InstallationToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InstallationToken")
            .field("token", &"[REDACTED]")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

impl InstallationToken {
    /// Usable at `now`: more than the refresh margin left.
    pub fn is_fresh(&self, now: SystemTime) -> bool {
        now + TOKEN_REFRESH_MARGIN < self.expires_at
    }
}

type Slot = Arc<tokio::sync::Mutex<Option<InstallationToken>>>;

/// Installation tokens by installation id.
#[derive(Debug, Default)]
pub struct TokenCache {
    slots: StdMutex<HashMap<u64, Slot>>,
}

impl TokenCache {
    /// The slot for one installation; hold its lock while refreshing so
    /// concurrent callers wait for the one refresh instead of racing.
    pub fn slot(&self, installation_id: u64) -> Slot {
        let mut slots = match self.slots.lock() {
            Ok(slots) => slots,
            // A panic elsewhere while holding this lock leaves the map valid.
            Err(poisoned) => poisoned.into_inner(),
        };
        slots.entry(installation_id).or_default().clone()
    }
}

/// How long the installation found for a repository is kept: installations change rarely
/// (an App uninstalled and installed again gets a new id), and a token request for a gone
/// installation fails loudly, so the cost of a stale entry is bounded by this.
pub const REPOSITORY_INSTALLATION_TTL: Duration = Duration::from_secs(10 * 60);

/// The installation of the App found for each repository (`GET /repos/{o}/{r}/installation`),
/// kept [`REPOSITORY_INSTALLATION_TTL`] by the injected clock. Only found installations are
/// kept: a repository the App is not installed on is asked again, so an installation is
/// noticed at once. Keyed by the repository's lower-cased full name (GitHub's names are
/// case-insensitive).
#[derive(Debug, Default)]
pub struct RepositoryInstallations {
    found: StdMutex<HashMap<String, (u64, SystemTime)>>,
}

impl RepositoryInstallations {
    /// The installation kept for `repository`, if it is younger than the TTL at `now`.
    pub fn get(&self, repository: &str, now: SystemTime) -> Option<u64> {
        let found = self.found.lock().ok()?;
        let (id, at) = found.get(&repository.to_ascii_lowercase())?;
        let age = now.duration_since(*at).unwrap_or(Duration::ZERO);
        (age < REPOSITORY_INSTALLATION_TTL).then_some(*id)
    }

    /// Keeps `id` as `repository`'s installation, found at `now`.
    pub fn put(&self, repository: &str, id: u64, now: SystemTime) {
        if let Ok(mut found) = self.found.lock() {
            // Bounded: entries older than the TTL go whenever one is added.
            found.retain(|_, (_, at)| {
                now.duration_since(*at).unwrap_or(Duration::ZERO) < REPOSITORY_INSTALLATION_TTL
            });
            found.insert(repository.to_ascii_lowercase(), (id, now));
        }
    }
}

#[cfg(test)]
mod repository_installation_tests {
    use super::*;

    #[test]
    fn a_found_installation_is_kept_until_the_ttl_by_any_case_of_its_name() {
        let kept = RepositoryInstallations::default();
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        kept.put("Octo/Agents", 31, at);
        assert_eq!(kept.get("octo/agents", at), Some(31));
        let just_before = at + REPOSITORY_INSTALLATION_TTL - Duration::from_secs(1);
        assert_eq!(kept.get("octo/agents", just_before), Some(31));
        assert_eq!(
            kept.get("octo/agents", at + REPOSITORY_INSTALLATION_TTL),
            None
        );
        assert_eq!(kept.get("octo/other", at), None);
    }
}
