//! App JWT and installation-token caching.

use std::time::{Duration, SystemTime};

use astrolift_fake_github::TEST_PRIVATE_KEY_PEM;
use astrolift_forge::github::{AppCredentials, AppJwtClaims, GitHubError};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use secrecy::{ExposeSecret, SecretString};

use super::{INSTALLATION, setup};

const TOKENS_PATH: &str = "/app/installations/77/access_tokens";

fn credentials() -> AppCredentials {
    AppCredentials::new(4242, SecretString::from(TEST_PRIVATE_KEY_PEM.to_owned()))
        .expect("the test key loads")
}

#[test]
fn jwt_claims_span_sixty_seconds_back_to_nine_minutes_ahead() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let jwt = credentials().jwt(now).expect("signs");
    let key = DecodingKey::from_rsa_pem(astrolift_fake_github::TEST_PUBLIC_KEY_PEM.as_bytes())
        .expect("public key");
    let mut validation = Validation::new(Algorithm::RS256);
    validation.validate_exp = false;
    let claims = jsonwebtoken::decode::<AppJwtClaims>(jwt.expose_secret(), &key, &validation)
        .expect("verifies")
        .claims;
    assert_eq!(claims.iat, 1_800_000_000 - 60);
    assert_eq!(claims.exp, 1_800_000_000 + 9 * 60);
    assert_eq!(claims.iss, "4242");
    assert!(claims.exp - claims.iat <= 600);
}

#[test]
fn credentials_never_show_the_key() {
    let shown = format!("{:?}", credentials());
    assert!(!shown.contains("PRIVATE KEY"), "{shown}");
    let bad = AppCredentials::new(
        1,
        SecretString::from("-----BEGIN RSA PRIVATE KEY-----\nnope".to_owned()),
    );
    let error = bad.expect_err("not a key").to_string();
    assert!(!error.contains("nope"), "{error}");
}

#[test]
fn credentials_come_from_the_environment_variables() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key_file = dir.path().join("key.pem");
    std::fs::write(&key_file, TEST_PRIVATE_KEY_PEM).expect("write key");
    let key_file = key_file.to_string_lossy().into_owned();
    let from_file = AppCredentials::from_lookup(|name| match name {
        "GITHUB_APP_ID" => Some("99".to_owned()),
        "GITHUB_APP_PRIVATE_KEY_FILE" => Some(key_file.clone()),
        _ => None,
    });
    assert_eq!(from_file.map(|c| c.app_id()).ok(), Some(99));
    let missing =
        AppCredentials::from_lookup(|name| (name == "GITHUB_APP_ID").then(|| "1".to_owned()));
    assert!(missing.is_err());
    let bad_id = AppCredentials::from_lookup(|_| Some("x".to_owned()));
    assert!(bad_id.is_err());
}

#[tokio::test]
async fn one_token_serves_many_calls_until_five_minutes_before_expiry() {
    let setup = setup().await;
    let installation = setup.installation();
    let first = installation.token().await.expect("token");
    for _ in 0..10 {
        let again = installation.token().await.expect("cached token");
        assert_eq!(again.expose_secret(), first.expose_secret());
    }
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let installation = installation.clone();
            tokio::spawn(async move { installation.token().await.map(|_| ()) })
        })
        .collect();
    for task in tasks {
        task.await.expect("joins").expect("token");
    }
    assert_eq!(setup.fake.requests_to("POST", TOKENS_PATH).len(), 1);

    // 54 minutes on: 6 minutes left, still fresh. 56: refreshed.
    setup.clock.advance(Duration::from_secs(54 * 60));
    setup.fake.advance_clock(Duration::from_secs(54 * 60));
    installation.token().await.expect("still cached");
    assert_eq!(setup.fake.requests_to("POST", TOKENS_PATH).len(), 1);
    setup.clock.advance(Duration::from_secs(2 * 60));
    setup.fake.advance_clock(Duration::from_secs(2 * 60));
    let renewed = installation.token().await.expect("renewed");
    assert_ne!(renewed.expose_secret(), first.expose_secret());
    assert_eq!(setup.fake.requests_to("POST", TOKENS_PATH).len(), 2);
}

#[tokio::test]
async fn the_token_request_carries_the_api_headers_and_a_bearer_jwt() {
    let setup = setup().await;
    setup.installation().token().await.expect("token");
    let requests = setup.fake.requests_to("POST", TOKENS_PATH);
    let request = &requests[0];
    assert_eq!(
        request.header("accept"),
        Some("application/vnd.github+json")
    );
    assert_eq!(request.header("x-github-api-version"), Some("2022-11-28"));
    assert_eq!(request.header("authorization"), Some("Bearer [redacted]"));
    assert!(
        request
            .header("user-agent")
            .is_some_and(|ua| ua.starts_with("astrolift"))
    );
}

#[tokio::test]
async fn the_fake_refuses_expired_and_far_future_jwts() {
    let setup = setup().await;
    let url = format!("{}{TOKENS_PATH}", setup.fake.base_url());
    let now = SystemTime::now();
    let expired = credentials()
        .jwt(now - Duration::from_secs(3600))
        .expect("signs");
    let future = credentials()
        .jwt(now + Duration::from_secs(3600))
        .expect("signs");
    let http = reqwest::Client::new();
    for jwt in [expired, future] {
        let answer = http
            .post(&url)
            .bearer_auth(jwt.expose_secret())
            .send()
            .await
            .expect("answers");
        assert_eq!(answer.status().as_u16(), 401);
    }
    let unsigned = "eyJhbGciOiJub25lIn0.eyJpc3MiOiI0MjQyIn0.";
    let answer = http
        .post(&url)
        .bearer_auth(unsigned)
        .send()
        .await
        .expect("answers");
    assert_eq!(answer.status().as_u16(), 401);
}

#[tokio::test]
async fn a_revoked_token_fails_once_then_is_replaced() {
    let setup = super::setup().await;
    let gh = setup.installation();
    let repo = setup.repo();
    gh.create_in_progress(&repo, super::SHA, "Astrolift")
        .await
        .expect("created");
    setup.fake.revoke_tokens();
    let error = gh
        .create_in_progress(&repo, super::SHA, "Astrolift")
        .await
        .expect_err("revoked");
    assert_eq!(error.status().map(|s| s.as_u16()), Some(401), "{error}");
    gh.create_in_progress(&repo, super::SHA, "Astrolift")
        .await
        .expect("a new token");
    assert_eq!(setup.fake.requests_to("POST", TOKENS_PATH).len(), 2);
}

#[tokio::test]
async fn an_unknown_installation_is_a_404_not_retried() {
    let setup = setup().await;
    let error = setup
        .app
        .installation(INSTALLATION + 1)
        .token()
        .await
        .expect_err("unknown");
    assert!(
        matches!(&error, GitHubError::Status { status, .. } if status.as_u16() == 404),
        "{error}"
    );
    assert_eq!(setup.fake.requests().len(), 1);
    assert!(error.to_string().contains("Not Found"), "{error}");
}
