//! A collaborator's permission against the fake: each role in GitHub's legacy
//! `permission` and its own `role_name`, a changed or removed role, and 404 (`None`) for
//! anyone who is not a collaborator.

use super::{OWNER, REPO, setup};

#[tokio::test]
async fn each_role_is_answered_in_both_sets_and_only_writers_may_write() {
    let setup = setup().await;
    let (gh, repo) = (setup.installation(), setup.repo());
    let roles = [
        ("ada", "admin", "admin", true),
        ("mona", "maintain", "write", true),
        ("wren", "write", "write", true),
        ("tia", "triage", "read", false),
        ("rae", "read", "read", false),
    ];
    for (login, role, ..) in roles {
        setup.fake.add_collaborator(OWNER, REPO, login, role);
    }
    for (login, role, legacy, writes) in roles {
        let found = gh
            .collaborator_permission(&repo, login)
            .await
            .expect("asked")
            .unwrap_or_else(|| panic!("{login} is a collaborator"));
        assert_eq!(found.permission, legacy, "{login}");
        assert_eq!(found.role_name.as_deref(), Some(role), "{login}");
        assert_eq!(found.can_write(), writes, "{login}");
        assert_eq!(found.shown(), role);
    }
    // Logins compare without case, as on GitHub.
    let upper = gh
        .collaborator_permission(&repo, "MONA")
        .await
        .expect("asked");
    assert!(upper.is_some_and(|p| p.can_write()));
}

#[tokio::test]
async fn a_stranger_or_a_removed_collaborator_is_none_and_a_changed_role_holds() {
    let setup = setup().await;
    let (gh, repo) = (setup.installation(), setup.repo());
    assert_eq!(
        gh.collaborator_permission(&repo, "stranger")
            .await
            .expect("asked"),
        None
    );
    setup.fake.add_collaborator(OWNER, REPO, "mona", "write");
    setup.fake.add_collaborator(OWNER, REPO, "mona", "read");
    let demoted = gh
        .collaborator_permission(&repo, "mona")
        .await
        .expect("asked");
    assert!(demoted.is_some_and(|p| !p.can_write()));
    setup.fake.remove_collaborator(OWNER, REPO, "mona");
    assert_eq!(
        gh.collaborator_permission(&repo, "mona")
            .await
            .expect("asked"),
        None
    );
}
