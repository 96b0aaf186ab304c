//! `X-Hub-Signature-256`: HMAC-SHA256 of the raw body, hex, prefixed `sha256=`.

use hmac::{Hmac, KeyInit, Mac};
use secrecy::{ExposeSecret, SecretString};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

const PREFIX: &str = "sha256=";

/// The webhook secret, and during a rotation the previous one too.
/// `Debug` never shows either value.
#[derive(Debug, Clone)]
pub struct WebhookSecrets {
    current: SecretString,
    previous: Option<SecretString>,
}

impl WebhookSecrets {
    /// Both secrets must be non-empty: an empty HMAC key would accept
    /// signatures anyone can compute.
    pub fn new(current: String, previous: Option<String>) -> Result<Self, SignatureError> {
        if current.is_empty() || previous.as_deref() == Some("") {
            return Err(SignatureError::EmptySecret);
        }
        Ok(Self {
            current: current.into(),
            previous: previous.map(Into::into),
        })
    }

    fn candidates(&self) -> impl Iterator<Item = &SecretString> {
        std::iter::once(&self.current).chain(self.previous.as_ref())
    }
}

/// Why a signature was refused. Messages never include the secret or the
/// expected signature.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("missing X-Hub-Signature-256 header")]
    Missing,
    #[error("malformed X-Hub-Signature-256 header: expected sha256=<64 hex digits>")]
    Malformed,
    #[error("signature does not match")]
    Mismatch,
    #[error("a webhook secret must not be empty")]
    EmptySecret,
}

/// Checks `header` against the HMAC of `body` under the current secret, then
/// the previous one. The comparison is constant-time (`Mac::verify_slice`).
pub fn verify_signature(
    body: &[u8],
    header: Option<&str>,
    secrets: &WebhookSecrets,
) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let digits = header
        .trim()
        .strip_prefix(PREFIX)
        .ok_or(SignatureError::Malformed)?;
    let expected = hex::decode(digits).map_err(|_| SignatureError::Malformed)?;
    if expected.len() != 32 {
        return Err(SignatureError::Malformed);
    }
    let matches = secrets.candidates().any(|secret| {
        let mut mac = keyed(secret.expose_secret());
        mac.update(body);
        mac.verify_slice(&expected).is_ok()
    });
    if matches {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

/// The `X-Hub-Signature-256` value GitHub would send for `body`: used by the
/// tests, the fake GitHub and `astrolift replay`.
pub fn sign(body: &[u8], secret: &str) -> String {
    let mut mac = keyed(secret);
    mac.update(body);
    format!("{PREFIX}{}", hex::encode(mac.finalize().into_bytes()))
}

fn keyed(secret: &str) -> HmacSha256 {
    // HMAC accepts keys of any length, so this cannot fail; fall back to an
    // empty-keyed MAC rather than panic (it will never match a real signature
    // because WebhookSecrets refuses empty secrets).
    HmacSha256::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| HmacSha256::new(&Default::default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(previous: Option<&str>) -> WebhookSecrets {
        WebhookSecrets::new(
            "It's a Secret to Everybody".into(),
            previous.map(str::to_owned),
        )
        .expect("valid")
    }

    #[test]
    fn githubs_documented_example_verifies() {
        // The example from GitHub's "Validating webhook deliveries" page.
        let header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        assert_eq!(
            verify_signature(b"Hello, World!", Some(header), &secrets(None)),
            Ok(())
        );
        assert_eq!(sign(b"Hello, World!", "It's a Secret to Everybody"), header);
    }

    #[test]
    fn previous_secret_is_accepted_during_rotation() {
        let header = sign(b"{}", "old-secret");
        assert_eq!(
            verify_signature(b"{}", Some(&header), &secrets(None)),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_signature(b"{}", Some(&header), &secrets(Some("old-secret"))),
            Ok(())
        );
    }

    #[test]
    fn missing_malformed_and_tampered_are_refused() {
        let s = secrets(None);
        assert_eq!(
            verify_signature(b"x", None, &s),
            Err(SignatureError::Missing)
        );
        assert_eq!(
            verify_signature(b"x", Some("sha1=abc"), &s),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            verify_signature(b"x", Some("sha256=zz"), &s),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            verify_signature(b"x", Some("sha256=abcd"), &s),
            Err(SignatureError::Malformed)
        );
        let good = sign(b"x", "It's a Secret to Everybody");
        assert_eq!(
            verify_signature(b"y", Some(&good), &s),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn empty_secrets_are_refused_and_never_debug_printed() {
        assert!(WebhookSecrets::new(String::new(), None).is_err());
        let debug = format!("{:?}", secrets(Some("old-secret")));
        assert!(!debug.contains("Secret to Everybody") && !debug.contains("old-secret"));
    }
}
