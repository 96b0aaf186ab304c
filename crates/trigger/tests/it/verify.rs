//! Each verification kind: good, bad, missing, wrong prefix; header names case-insensitive.

use astrolift_forge::webhook::sign;
use astrolift_manifest::triggers::{TriggerSource, Verify};
use astrolift_trigger::{CompiledBinding, Outcome, TriggerError, evaluate};
use http::HeaderMap;

use crate::support::{
    APP_SECRET, FixedSecrets, HOOK_REF, HOOK_SECRET, PROJECT, headers, hmac_hex, hmac_verify,
    limits, spec,
};

const BODY: &[u8] = br#"{"issue":{"key":"A-1"}}"#;

async fn run(verify: Verify, headers: &HeaderMap) -> Result<Outcome, TriggerError> {
    let mut spec = spec(Some(verify.clone()), None, Some("{key: .issue.key}"));
    if verify == Verify::Github {
        spec.source = TriggerSource::Github;
        spec.events = vec!["issues".to_owned()];
    }
    let binding = CompiledBinding::from_spec("t-1", spec).expect("compiles");
    evaluate(
        &binding,
        PROJECT,
        headers,
        BODY,
        &FixedSecrets::new(),
        &limits(),
    )
    .await
}

fn assert_401(result: Result<Outcome, TriggerError>, expect: &str) {
    let error = result.expect_err("refused");
    assert_eq!(error.status(), 401, "{error}");
    let message = error.to_string();
    assert!(message.contains(expect), "{message}");
    assert!(
        !message.contains(HOOK_SECRET) && !message.contains(APP_SECRET),
        "{message}"
    );
}

#[tokio::test]
async fn hmac_good_bad_missing_wrong_prefix() {
    let good = format!("sha256={}", hmac_hex(BODY, HOOK_SECRET));
    assert!(
        run(hmac_verify(), &headers(&[("x-signature", &good)]))
            .await
            .is_ok()
    );
    assert!(
        run(hmac_verify(), &headers(&[("X-SIGNATURE", &good)]))
            .await
            .is_ok()
    );
    let bad = format!("sha256={}", hmac_hex(BODY, "another-secret"));
    assert_401(
        run(hmac_verify(), &headers(&[("X-Signature", &bad)])).await,
        "does not match",
    );
    assert_401(
        run(hmac_verify(), &HeaderMap::new()).await,
        "missing X-Signature",
    );
    let unprefixed = hmac_hex(BODY, HOOK_SECRET);
    assert_401(
        run(hmac_verify(), &headers(&[("X-Signature", &unprefixed)])).await,
        "expected the prefix `sha256=`",
    );
    let wrong = format!("sha1={}", hmac_hex(BODY, HOOK_SECRET));
    assert_401(
        run(hmac_verify(), &headers(&[("X-Signature", &wrong)])).await,
        "prefix",
    );
    assert_401(
        run(hmac_verify(), &headers(&[("X-Signature", "sha256=zz")])).await,
        "hex",
    );
}

#[tokio::test]
async fn hmac_without_prefix_takes_bare_hex() {
    let verify = Verify::HmacSha256 {
        header: "X-Hook-Signature".to_owned(),
        prefix: None,
        secret: HOOK_REF.to_owned(),
        timestamp_header: None,
        tolerance_seconds: None,
    };
    let good = hmac_hex(BODY, HOOK_SECRET);
    assert!(
        run(verify.clone(), &headers(&[("X-Hook-Signature", &good)]))
            .await
            .is_ok()
    );
    let prefixed = format!("sha256={good}");
    assert_401(
        run(verify, &headers(&[("X-Hook-Signature", &prefixed)])).await,
        "hex",
    );
}

#[tokio::test]
async fn github_good_bad_missing_wrong_prefix() {
    let good = sign(BODY, APP_SECRET);
    assert!(
        run(Verify::Github, &headers(&[("x-hub-signature-256", &good)]))
            .await
            .is_ok()
    );
    let bad = sign(BODY, "not-the-app-secret");
    assert_401(
        run(Verify::Github, &headers(&[("X-Hub-Signature-256", &bad)])).await,
        "does not match",
    );
    assert_401(
        run(Verify::Github, &HeaderMap::new()).await,
        "missing X-Hub-Signature-256",
    );
    let wrong = good.replacen("sha256=", "sha1=", 1);
    assert_401(
        run(Verify::Github, &headers(&[("X-Hub-Signature-256", &wrong)])).await,
        "malformed",
    );
}

#[tokio::test]
async fn token_good_bad_missing_wrong_prefix() {
    let verify = Verify::Token {
        header: "X-Token".to_owned(),
        secret: HOOK_REF.to_owned(),
    };
    assert!(
        run(verify.clone(), &headers(&[("x-token", HOOK_SECRET)]))
            .await
            .is_ok()
    );
    assert_401(
        run(verify.clone(), &headers(&[("X-Token", "guess")])).await,
        "does not match",
    );
    assert_401(
        run(verify.clone(), &HeaderMap::new()).await,
        "missing X-Token",
    );
    // A token kind has no prefix: a prefixed value is simply a different token.
    let prefixed = format!("Bearer {HOOK_SECRET}");
    assert_401(
        run(verify.clone(), &headers(&[("X-Token", &prefixed)])).await,
        "does not match",
    );
    let longer = format!("{HOOK_SECRET}x");
    assert_401(
        run(verify, &headers(&[("X-Token", &longer)])).await,
        "does not match",
    );
}

#[tokio::test]
async fn unresolvable_secret_is_a_500_without_the_value() {
    let verify = Verify::Token {
        header: "X-Token".to_owned(),
        secret: "secret://nope/missing".to_owned(),
    };
    let error = run(verify, &headers(&[("X-Token", "anything")]))
        .await
        .expect_err("no secret");
    assert_eq!(error.status(), 500);
    assert!(
        error.to_string().contains("secret://nope/missing"),
        "the log line names the reference: {error}"
    );
    let public = error.public_message();
    for internal in ["secret://", "nope/missing", "ASTROLIFT_SECRET", "X-Token"] {
        assert!(
            !public.contains(internal),
            "the body names {internal}: {public}"
        );
    }
}

#[tokio::test]
async fn refusals_tell_the_caller_nothing_about_the_expected_headers() {
    for (verify, request) in [
        (hmac_verify(), headers(&[])),
        (hmac_verify(), headers(&[("X-Signature", "sha1=00")])),
        (hmac_verify(), headers(&[("X-Signature", "sha256=00")])),
        (Verify::Github, headers(&[])),
    ] {
        let error = run(verify, &request).await.expect_err("refused");
        assert_eq!(error.status(), 401);
        let public = error.public_message().to_ascii_lowercase();
        for internal in [
            "x-signature",
            "x-hub-signature",
            "sha256=",
            "prefix",
            "secret",
        ] {
            assert!(!public.contains(internal), "{internal} in {public}");
        }
    }
}

#[test]
fn env_var_names_follow_the_design() {
    use astrolift_trigger::secrets::env_var_name;
    assert_eq!(
        env_var_name("secret://agents/jira-hook").as_deref(),
        Ok("ASTROLIFT_SECRET_AGENTS_JIRA_HOOK")
    );
    assert_eq!(
        env_var_name("secret://a.b/c_d9").as_deref(),
        Ok("ASTROLIFT_SECRET_A_B_C_D9")
    );
    let error = env_var_name("hunter2").expect_err("not a reference");
    assert!(!error.to_string().contains("hunter2"), "{error}");
}

#[tokio::test]
async fn env_resolver_reports_the_variable_it_wanted() {
    use astrolift_trigger::{EnvSecretResolver, SecretResolver};
    let error = EnvSecretResolver::new()
        .resolve(PROJECT, "secret://tests/never-set-w2")
        .await
        .expect_err("unset");
    assert!(
        error
            .to_string()
            .contains("ASTROLIFT_SECRET_TESTS_NEVER_SET_W2"),
        "{error}"
    );
}

/// Run by [`env_resolver_reads_the_mapped_variable`] in a child process with
/// the variable set (tests cannot set variables in-process: `set_var` is unsafe).
#[tokio::test]
#[ignore = "run as a child of env_resolver_reads_the_mapped_variable"]
async fn env_resolver_child() {
    use astrolift_trigger::{EnvSecretResolver, SecretResolver};
    use secrecy::ExposeSecret;
    let value = EnvSecretResolver::new()
        .resolve(PROJECT, HOOK_REF)
        .await
        .expect("set by the parent");
    assert_eq!(value.expose_secret(), HOOK_SECRET);
}

/// Runs the ignored test `name` of this binary alone in a child process with `HOOK_SECRET`
/// in the mapped variable. The child's summary must count one passed test: a filter that
/// matches no test (a renamed child) exits 0 too, and must fail here.
fn run_env_child(name: &str) -> Result<(), String> {
    let exe = std::env::current_exe().expect("test binary");
    let output = std::process::Command::new(exe)
        .args(["--exact", name, "--ignored", "--test-threads=1"])
        .env("ASTROLIFT_SECRET_AGENTS_JIRA_HOOK", HOOK_SECRET)
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    if output.status.success() && stdout.contains("test result: ok. 1 passed") {
        Ok(())
    } else {
        Err(format!(
            "{stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

#[test]
fn env_resolver_reads_the_mapped_variable() {
    if let Err(output) = run_env_child("verify::env_resolver_child") {
        panic!("the child did not pass exactly one test: {output}");
    }
    // The check itself fails on a filter that matches nothing.
    assert!(run_env_child("verify::no_such_child").is_err());
}
