//! The SkillSourceStore contract, run against SQLite and DynamoDB (moto): skill
//! repositories keyed by (project, alias), and the one catalogue.

use astrolift_store::state::*;

use crate::state_contract::Subject;

const NOW: UnixSeconds = 1_767_225_600;

fn skill_repo(project_id: &str, alias: &str, repository: &str) -> SkillRepo {
    SkillRepo {
        project_id: project_id.into(),
        alias: alias.into(),
        repository: repository.into(),
        updated_at: NOW,
    }
}

/// The keyed read a push asks: every project's skill repositories of one repository,
/// whatever the case of its name, following a move to another repository and a delete.
pub async fn skill_repos_are_found_by_repository(subject: Subject) {
    let store = subject.store.skills();
    let (p1, p2) = (
        astrolift_store::testing::unique_name("proj"),
        astrolift_store::testing::unique_name("proj"),
    );
    let shared = astrolift_store::testing::unique_name("acme/runbooks");
    let other = astrolift_store::testing::unique_name("acme/other");
    let a = skill_repo(&p1, "a", &shared);
    let b = skill_repo(&p2, "b", &shared.to_ascii_uppercase());
    let c = skill_repo(&p1, "c", &other);
    for repo in [&a, &b, &c] {
        store.put_skill_repo(repo).await.unwrap();
    }
    let keys = |repos: Vec<SkillRepo>| -> Vec<(String, String)> {
        repos.into_iter().map(|r| (r.project_id, r.alias)).collect()
    };
    let mut both = vec![(p1.clone(), "a".to_owned()), (p2.clone(), "b".to_owned())];
    both.sort();
    assert_eq!(keys(store.skill_repos_of(&shared).await.unwrap()), both);
    // Moved to the other repository: found there, no longer under the first.
    store
        .put_skill_repo(&skill_repo(&p1, "a", &other))
        .await
        .unwrap();
    assert_eq!(
        keys(store.skill_repos_of(&shared).await.unwrap()),
        [(p2.clone(), "b".to_owned())]
    );
    assert_eq!(
        keys(store.skill_repos_of(&other).await.unwrap()),
        [(p1.clone(), "a".to_owned()), (p1.clone(), "c".to_owned())]
    );
    assert!(store.delete_skill_repo(&p2, "b").await.unwrap());
    assert!(!store.delete_skill_repo(&p2, "b").await.unwrap());
    assert!(store.skill_repos_of(&shared).await.unwrap().is_empty());
    assert!(
        store
            .skill_repos_of("nobody/anything")
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn skill_repos_are_keyed_by_project_and_alias(subject: Subject) {
    let store = subject.store.skills();
    let project = astrolift_store::testing::unique_name("proj");
    let other = format!("{project}#b");
    let runbooks = skill_repo(&project, "steadymd", "steadymd/runbooks");
    store.put_skill_repo(&runbooks).await.unwrap();
    store
        .put_skill_repo(&skill_repo(&project, "acme", "acme/skills"))
        .await
        .unwrap();
    // The same alias in another project (whose id extends this one's) is another record.
    let elsewhere = skill_repo(&other, "steadymd", "evil/runbooks");
    store.put_skill_repo(&elsewhere).await.unwrap();

    let got = store.get_skill_repo(&project, "steadymd").await.unwrap();
    assert_eq!(got, Some(runbooks.clone()));
    let aliases = |repos: Vec<SkillRepo>| -> Vec<(String, String)> {
        repos.into_iter().map(|r| (r.alias, r.repository)).collect()
    };
    let listed = store.list_skill_repos(Some(&project)).await.unwrap();
    assert_eq!(
        aliases(listed),
        [
            ("acme".to_owned(), "acme/skills".to_owned()),
            ("steadymd".to_owned(), "steadymd/runbooks".to_owned())
        ]
    );
    let all = store.list_skill_repos(None).await.unwrap();
    let ours: Vec<&SkillRepo> = all
        .iter()
        .filter(|r| r.project_id.starts_with(&project))
        .collect();
    assert_eq!(ours.len(), 3);
    assert_eq!(ours[2], &elsewhere, "ordered by project, then alias");

    // Registering an alias again replaces its repository.
    let moved = skill_repo(&project, "steadymd", "steadymd/runbooks-v2");
    store.put_skill_repo(&moved).await.unwrap();
    let got = store.get_skill_repo(&project, "steadymd").await.unwrap();
    assert_eq!(got, Some(moved));

    assert!(store.delete_skill_repo(&project, "steadymd").await.unwrap());
    assert!(!store.delete_skill_repo(&project, "steadymd").await.unwrap());
    assert_eq!(
        store.get_skill_repo(&project, "steadymd").await.unwrap(),
        None
    );
    let kept = store.get_skill_repo(&other, "steadymd").await.unwrap();
    assert_eq!(
        kept,
        Some(elsewhere),
        "another project's alias is untouched"
    );
}

pub async fn the_catalogue_is_one_record(subject: Subject) {
    let store = subject.store.skills();
    let first = Catalogue {
        repository: "astrolift/catalogue".into(),
        registered_ref: "main".into(),
        updated_at: NOW,
    };
    store.put_catalogue(&first).await.unwrap();
    assert_eq!(store.get_catalogue().await.unwrap(), Some(first));
    let replaced = Catalogue {
        repository: "astrolift/skills".into(),
        registered_ref: "release".into(),
        updated_at: NOW + 1,
    };
    store.put_catalogue(&replaced).await.unwrap();
    assert_eq!(store.get_catalogue().await.unwrap(), Some(replaced));
}

concurrent_contract_tests!(
    skill_repos_are_keyed_by_project_and_alias,
    skill_repos_are_found_by_repository,
    the_catalogue_is_one_record,
);
