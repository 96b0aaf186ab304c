//! `POST /app/installations/{id}/access_tokens`: App JWT in, installation token out.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use axum::extract::{Path, State as AxumState};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::json;

use crate::{
    IssuedToken, Shared, TEST_APP_ID, TEST_PUBLIC_KEY_PEM, bearer, github_error, json_response,
};

const DOCS: &str =
    "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app";
/// GitHub refuses App JWTs that live longer than this.
const MAX_JWT_LIFETIME: u64 = 600;
/// Installation tokens live one hour.
const TOKEN_LIFETIME: Duration = Duration::from_secs(3600);

static TOKEN_SERIAL: AtomicU64 = AtomicU64::new(1);

#[derive(Debug, Deserialize)]
struct Claims {
    iat: u64,
    exp: u64,
}

pub(crate) async fn access_token(
    AxumState(state): AxumState<Shared>,
    Path(id): Path<u64>,
    headers: HeaderMap,
) -> Response {
    let now = state.lock().now();
    if let Err(message) = verify_app_jwt(&headers, now) {
        return github_error(StatusCode::UNAUTHORIZED, message, DOCS);
    }
    let mut state = state.lock();
    if !state.installations.contains(&id) {
        return github_error(StatusCode::NOT_FOUND, "Not Found", DOCS);
    }
    let serial = TOKEN_SERIAL.fetch_add(1, Ordering::Relaxed);
    let token = format!("ghs_fake{serial:032}");
    let expires_at = now + TOKEN_LIFETIME;
    let issued = IssuedToken {
        expires_at,
        installation_id: Some(id),
    };
    state.tokens.insert(token.clone(), issued);
    let body = json!({
        "token": token,
        "expires_at": rfc3339(expires_at),
        "permissions": { "checks": "write", "contents": "read", "metadata": "read" },
        "repository_selection": "all",
    });
    json_response(StatusCode::CREATED, body, HeaderMap::new())
}

/// GitHub's checks and messages for an App JWT.
pub(crate) fn verify_app_jwt(headers: &HeaderMap, now: SystemTime) -> Result<(), &'static str> {
    const UNDECODABLE: &str = "A JSON web token could not be decoded";
    let jwt = bearer(headers).ok_or(UNDECODABLE)?;
    let key = DecodingKey::from_rsa_pem(TEST_PUBLIC_KEY_PEM.as_bytes()).map_err(|_| UNDECODABLE)?;
    let mut validation = Validation::new(Algorithm::RS256);
    // We check time ourselves, against the fake's (offsettable) clock.
    validation.validate_exp = false;
    validation.leeway = 0;
    validation.set_required_spec_claims(&["exp", "iat", "iss"]);
    validation.set_issuer(&[TEST_APP_ID.to_string()]);
    let claims =
        jsonwebtoken::decode::<Claims>(jwt, &key, &validation).map_err(|e| match e.kind() {
            ErrorKind::InvalidIssuer => "'Issuer' claim ('iss') must be an Integer",
            _ => UNDECODABLE,
        })?;
    let now = epoch(now);
    let Claims { iat, exp } = claims.claims;
    if exp <= now {
        return Err(
            "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires",
        );
    }
    if iat > now + 60 {
        return Err(
            "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued",
        );
    }
    if exp.saturating_sub(iat) > MAX_JWT_LIFETIME {
        return Err("'Expiration time' claim ('exp') is too far in the future");
    }
    Ok(())
}

pub(crate) fn epoch(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `2026-11-29T18:00:00Z`.
pub(crate) fn rfc3339(time: SystemTime) -> String {
    let seconds = i64::try_from(epoch(time)).unwrap_or(0);
    jiff::Timestamp::from_second(seconds)
        .map(|t| t.to_string())
        .unwrap_or_default()
}
