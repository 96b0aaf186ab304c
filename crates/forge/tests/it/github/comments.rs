//! Comments and their reactions against the fake: a reaction is created (201), left
//! again without a second one (200), refused for content outside GitHub's set (422) and
//! for an unknown repository (404); comments are listed across pages.

use astrolift_fake_github::APP_BOT_LOGIN;
use astrolift_forge::github::{REACTION_CONTENTS, REACTION_EYES, RepoPath};

use super::{OWNER, REPO, setup};

const COMMENT: u64 = 492_700_400;

#[tokio::test]
async fn a_reaction_is_created_once_and_left_again_as_a_success() {
    let setup = setup().await;
    let (gh, repo) = (setup.installation(), setup.repo());
    let first = gh
        .create_comment_reaction(&repo, COMMENT, REACTION_EYES)
        .await
        .expect("created");
    assert_eq!(first.content, "eyes");
    assert_eq!(
        first.user.as_ref().map(|u| u.login.as_str()),
        Some(APP_BOT_LOGIN)
    );
    let again = gh
        .create_comment_reaction(&repo, COMMENT, REACTION_EYES)
        .await
        .expect("already there is a success");
    assert_eq!(again.id, first.id);

    let reactions = setup.fake.reactions();
    assert_eq!(reactions.len(), 1, "{reactions:#?}");
    assert_eq!(
        (reactions[0].comment_id, reactions[0].content.as_str()),
        (COMMENT, "eyes")
    );
    let posts = setup.fake.requests_to(
        "POST",
        &format!("/repos/{OWNER}/{REPO}/issues/comments/{COMMENT}/reactions"),
    );
    assert_eq!(posts.len(), 2);
    assert_eq!(posts[0].json(), serde_json::json!({ "content": "eyes" }));
}

#[tokio::test]
async fn content_outside_githubs_set_is_a_422_and_every_listed_one_is_accepted() {
    let setup = setup().await;
    let (gh, repo) = (setup.installation(), setup.repo());
    let error = gh
        .create_comment_reaction(&repo, COMMENT, "thumbsup")
        .await
        .expect_err("refused");
    assert_eq!(error.status().map(|s| s.as_u16()), Some(422), "{error}");
    assert!(error.to_string().contains("Validation Failed"), "{error}");
    for content in REACTION_CONTENTS {
        gh.create_comment_reaction(&repo, COMMENT, content)
            .await
            .unwrap_or_else(|e| panic!("{content}: {e}"));
    }
    assert_eq!(setup.fake.reactions().len(), REACTION_CONTENTS.len());
}

#[tokio::test]
async fn a_reaction_in_an_unknown_repository_is_a_404() {
    let setup = setup().await;
    let gh = setup.installation();
    let elsewhere = RepoPath::parse("octo/elsewhere").expect("valid");
    let error = gh
        .create_comment_reaction(&elsewhere, COMMENT, REACTION_EYES)
        .await
        .expect_err("unknown repository");
    assert_eq!(error.status().map(|s| s.as_u16()), Some(404), "{error}");
    assert!(setup.fake.reactions().is_empty());
}

#[tokio::test]
async fn a_revoked_token_is_a_401_then_replaced() {
    let setup = setup().await;
    let (gh, repo) = (setup.installation(), setup.repo());
    gh.create_comment_reaction(&repo, COMMENT, REACTION_EYES)
        .await
        .expect("created");
    setup.fake.revoke_tokens();
    let error = gh
        .create_comment_reaction(&repo, COMMENT, "rocket")
        .await
        .expect_err("revoked");
    assert_eq!(error.status().map(|s| s.as_u16()), Some(401), "{error}");
    gh.create_comment_reaction(&repo, COMMENT, "rocket")
        .await
        .expect("a new token");
}

#[tokio::test]
async fn comments_are_listed_across_pages_with_their_authors() {
    let setup = setup().await;
    let (gh, repo) = (setup.installation(), setup.repo());
    let seeded: Vec<u64> = (0..130)
        .map(|n| {
            setup
                .fake
                .add_issue_comment(OWNER, REPO, 7, "mona", &format!("comment {n}"))
        })
        .collect();
    setup
        .fake
        .add_issue_comment(OWNER, REPO, 8, "mona", "elsewhere");
    let reply = gh
        .create_issue_comment(&repo, 7, "a reply")
        .await
        .expect("created");
    let listed = gh.issue_comments(&repo, 7).await.expect("listed");
    assert_eq!(listed.len(), 131);
    assert_eq!(listed[0].id, seeded[0]);
    assert_eq!(listed[0].body.as_deref(), Some("comment 0"));
    assert!(!listed[0].by_a_bot());
    let last = &listed[130];
    assert_eq!(last.id, reply.id);
    assert!(last.by_a_bot(), "{last:?}");
    let pages = setup
        .fake
        .requests_to("GET", &format!("/repos/{OWNER}/{REPO}/issues/7/comments"));
    assert_eq!(pages.len(), 2);
}
