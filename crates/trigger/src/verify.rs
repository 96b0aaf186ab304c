//! Request verification, always before anything reads the body.
//!
//! Every comparison of a signature or token is constant-time: HMACs through
//! `Mac::verify_slice`, tokens through `subtle::ConstantTimeEq` on their
//! SHA-256 digests (so the lengths compared are equal and the token's length
//! does not leak either). Header names are case-insensitive (`HeaderMap`).

use astrolift_forge::webhook::{SignatureError, verify_signature};
use astrolift_manifest::triggers::Verify;
use hmac::{Hmac, KeyInit, Mac};
use http::HeaderMap;
use secrecy::ExposeSecret;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::TriggerError;
use crate::secrets::SecretResolver;

/// Why a request was refused; never names the secret or expected value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("missing {0} header")]
    Missing(String),
    #[error("malformed {header} header: {expected}")]
    Malformed { header: String, expected: String },
    #[error("{0} does not match")]
    Mismatch(String),
}

/// Verifies `body` and `headers` as `verify` says. A resolver failure is a
/// [`TriggerError::Secret`] (500 for the caller: the request may be fine).
pub async fn verify_request(
    verify: &Verify,
    headers: &HeaderMap,
    body: &[u8],
    secrets: &dyn SecretResolver,
) -> Result<(), TriggerError> {
    match verify {
        Verify::HmacSha256 {
            header,
            prefix,
            secret,
        } => {
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
            let key = secrets.resolve(secret).await?;
            let mut mac = Hmac::<Sha256>::new_from_slice(key.expose_secret().as_bytes())
                .map_err(|_| VerifyError::Mismatch(header.clone()))?;
            mac.update(body);
            mac.verify_slice(&expected)
                .map_err(|_| VerifyError::Mismatch(header.clone()))?;
            Ok(())
        }
        Verify::Token { header, secret } => {
            let value = header_value(headers, header)?;
            let token = secrets.resolve(secret).await?;
            let given = Sha256::digest(value.as_bytes());
            let wanted = Sha256::digest(token.expose_secret().as_bytes());
            if bool::from(given.as_slice().ct_eq(wanted.as_slice())) {
                Ok(())
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
            Ok(())
        }
    }
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
