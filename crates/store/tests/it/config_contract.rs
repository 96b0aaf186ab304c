//! The ConfigPackageStore contract, run against SQLite and DynamoDB (moto): a config
//! manifest's packaged bundle, registered with versions per (repository, manifest path).

use astrolift_store::StoreError;
use astrolift_store::state::*;

use crate::state_contract::Subject;

fn package(repository: &str, path: &str, bundle: &str, version: u64) -> ConfigPackage {
    ConfigPackage {
        repository: repository.into(),
        manifest_path: path.into(),
        bundle_hash: bundle.into(),
        commit: format!("c{version}"),
        updated_at: 1_767_225_600,
        version,
    }
}

pub async fn config_packages_are_registered_with_versions(subject: Subject) {
    let store = subject.store.config_packages();
    let repository = astrolift_store::testing::unique_name("octo/config");
    let path = "envs/triage.toml";
    assert_eq!(
        store.get_config_package(&repository, path).await.unwrap(),
        None
    );
    let first = package(&repository, path, "b1", 1);
    store.put_config_package(&first, None).await.unwrap();
    let again = store.put_config_package(&first, None).await;
    assert!(matches!(again, Err(StoreError::Conflict(_))), "{again:?}");
    let stale = store
        .put_config_package(&package(&repository, path, "b3", 3), Some(2))
        .await;
    assert!(matches!(stale, Err(StoreError::Conflict(_))), "{stale:?}");
    let second = package(&repository, path, "b2", 2);
    store.put_config_package(&second, Some(1)).await.unwrap();
    let other = package(&repository, "envs/other.toml", "o1", 1);
    store.put_config_package(&other, None).await.unwrap();

    let read = store.get_config_package(&repository, path).await.unwrap();
    assert_eq!(read, Some(second));
    let elsewhere = store
        .get_config_package("octo/nowhere", path)
        .await
        .unwrap();
    assert_eq!(elsewhere, None);
}

concurrent_contract_tests!(config_packages_are_registered_with_versions);
