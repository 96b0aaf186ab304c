//! Request verification, always before anything reads the body.
//!
//! Secrets are resolved for the project of the binding's registration
//! (`crate::secrets`): a binding cannot verify with another project's secret.
//!
//! **Replay protection** (`hmac-sha256` with `timestamp_header`): the
//! signature covers `"{timestamp}.{body}"`, the timestamp is Unix seconds and
//! must be within `tolerance_seconds` of now (either way). A missing,
//! malformed or stale timestamp is 401. A verified request returns its
//! [`Verified::replay_key`] (the timestamp and the signature): the caller
//! makes it the dispatch's idempotency key, so within the window a replay is
//! a duplicate whatever its `Idempotency-Key`, and after it a 401.
//!
//! Every comparison of a signature or token is constant-time: HMACs through
//! `Mac::verify_slice`, tokens through `subtle::ConstantTimeEq` on their
//! SHA-256 digests (so the lengths compared are equal and the token's length
//! does not leak either). Header names are case-insensitive (`HeaderMap`).

use astrolift_forge::webhook::{SignatureError, verify_signature};
use astrolift_manifest::triggers::{DEFAULT_TOLERANCE_SECONDS, Verify};
use hmac::{Hmac, KeyInit, Mac};
use http::HeaderMap;
use secrecy::ExposeSecret;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::TriggerError;
pub use crate::error::VerifyError;
use crate::secrets::SecretResolver;

/// What a verified request proves beyond "it is genuine".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verified {
    /// For a timestamped signature: `{timestamp}:{signature hex}`, the same
    /// for every replay of the request (see the module docs).
    pub replay_key: Option<String>,
}

/// Verifies `body` and `headers` as `verify` says, with the secrets of
/// `project`. A resolver failure is a [`TriggerError::Secret`] (500 for
/// the caller, or 503 when the secret store is unavailable: the request
/// may be fine).
pub async fn verify_request(
    verify: &Verify,
    headers: &HeaderMap,
    body: &[u8],
    secrets: &dyn SecretResolver,
    project: &str,
) -> Result<Verified, TriggerError> {
    verify_at(verify, headers, body, secrets, project, now_seconds()).await
}

/// [`verify_request`] at the time `now` (Unix seconds).
pub async fn verify_at(
    verify: &Verify,
    headers: &HeaderMap,
    body: &[u8],
    secrets: &dyn SecretResolver,
    project: &str,
    now: i64,
) -> Result<Verified, TriggerError> {
    match verify {
        Verify::HmacSha256 {
            header,
            prefix,
            secret,
            timestamp_header,
            tolerance_seconds,
        } => {
            let timestamp = match timestamp_header {
                Some(name) => Some((name, timestamp_value(headers, name)?)),
                None => None,
            };
            let value = header_value(headers, header)?;
            let digits =
                match prefix {
                    Some(prefix) => value.strip_prefix(prefix.as_str()).ok_or_else(|| {
                        VerifyError::Malformed {
                            header: header.clone(),
                            expected: format!("expected the prefix `{prefix}`"),
                        }
                    })?,
                    None => value,
                };
            let expected = hex::decode(digits.trim()).map_err(|_| VerifyError::Malformed {
                header: header.clone(),
                expected: "expected a hex HMAC-SHA256".to_owned(),
            })?;
            let key = secrets.resolve(project, secret).await?;
            let mut mac = Hmac::<Sha256>::new_from_slice(key.expose_secret().as_bytes())
                .map_err(|_| VerifyError::Mismatch(header.clone()))?;
            if let Some((_, (text, _))) = &timestamp {
                mac.update(text.as_bytes());
                mac.update(b".");
            }
            mac.update(body);
            mac.verify_slice(&expected)
                .map_err(|_| VerifyError::Mismatch(header.clone()))?;
            // Only a genuine request learns that its timestamp is stale.
            let Some((name, (text, seconds))) = timestamp else {
                return Ok(Verified::default());
            };
            let tolerance = tolerance_seconds.unwrap_or(DEFAULT_TOLERANCE_SECONDS);
            let skew = now.abs_diff(seconds);
            if skew > tolerance {
                return Err(VerifyError::Stale {
                    header: name.clone(),
                    skew,
                    tolerance,
                }
                .into());
            }
            Ok(Verified {
                replay_key: Some(format!("{text}:{}", hex::encode(&expected))),
            })
        }
        Verify::Token { header, secret } => {
            let value = header_value(headers, header)?;
            let token = secrets.resolve(project, secret).await?;
            let given = Sha256::digest(value.as_bytes());
            let wanted = Sha256::digest(token.expose_secret().as_bytes());
            if bool::from(given.as_slice().ct_eq(wanted.as_slice())) {
                Ok(Verified::default())
            } else {
                Err(VerifyError::Mismatch(header.clone()).into())
            }
        }
        Verify::Github => {
            let app = secrets
                .github_webhook()
                .ok_or(crate::secrets::SecretError::NoGithubSecret)?;
            let header = "X-Hub-Signature-256";
            let value = headers.get(header).and_then(|v| v.to_str().ok());
            verify_signature(body, value, app).map_err(|error| match error {
                SignatureError::Missing => VerifyError::Missing(header.to_owned()),
                SignatureError::Malformed => VerifyError::Malformed {
                    header: header.to_owned(),
                    expected: "expected sha256=<64 hex digits>".to_owned(),
                },
                SignatureError::Mismatch | SignatureError::EmptySecret => {
                    VerifyError::Mismatch(header.to_owned())
                }
            })?;
            Ok(Verified::default())
        }
    }
}

/// The current Unix time in seconds.
pub fn now_seconds() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// The timestamp header: its text and its value, Unix seconds (at most 12
/// ASCII digits, so the year stays below 33,000 and parsing cannot overflow).
fn timestamp_value<'h>(headers: &'h HeaderMap, name: &str) -> Result<(&'h str, i64), VerifyError> {
    let text = header_value(headers, name)?.trim();
    let malformed = || VerifyError::Malformed {
        header: name.to_owned(),
        expected: "expected Unix seconds".to_owned(),
    };
    if text.is_empty() || text.len() > 12 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(malformed());
    }
    let seconds = text.parse::<i64>().map_err(|_| malformed())?;
    Ok((text, seconds))
}

fn header_value<'h>(headers: &'h HeaderMap, name: &str) -> Result<&'h str, VerifyError> {
    let value = headers
        .get(name)
        .ok_or_else(|| VerifyError::Missing(name.to_owned()))?;
    value.to_str().map_err(|_| VerifyError::Malformed {
        header: name.to_owned(),
        expected: "expected visible ASCII".to_owned(),
    })
}
