//! A person's permission on a repository:
//! `GET /repos/{owner}/{repo}/collaborators/{username}/permission`, which the
//! "Accept drift" requested action asks before it honours a click.
//!
//! GitHub answers `permission` in the legacy set (`admin`, `write`, `read`,
//! `none`: `maintain` shows as `write`, `triage` as `read`) and `role_name`
//! in the fine-grained one (`admin`, `maintain`, `write`, `triage`, `read`,
//! or a custom role's name); a user who is not a collaborator is a 404.

use http::StatusCode;
use serde::Deserialize;

use super::client::{GitHubError, Installation, JsonMethod, RepoPath};

/// What GitHub says of one user's access to a repository.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RepositoryPermission {
    /// `admin`, `write`, `read` or `none`.
    pub permission: String,
    /// `admin`, `maintain`, `write`, `triage`, `read`, or a custom role.
    #[serde(default)]
    pub role_name: Option<String>,
}

impl RepositoryPermission {
    /// Write, maintain or admin: may change what the repository's checks accept.
    pub fn can_write(&self) -> bool {
        let writes = |level: &str| matches!(level, "admin" | "maintain" | "write");
        writes(&self.permission) || self.role_name.as_deref().is_some_and(writes)
    }

    /// The name to show: the role when GitHub gives one, else the permission.
    pub fn shown(&self) -> &str {
        self.role_name.as_deref().unwrap_or(&self.permission)
    }
}

impl Installation {
    /// `username`'s permission on `repo`; `None` when GitHub answers 404 (not a
    /// collaborator, or no such user).
    pub async fn collaborator_permission(
        &self,
        repo: &RepoPath,
        username: &str,
    ) -> Result<Option<RepositoryPermission>, GitHubError> {
        let segments = [
            "repos",
            &repo.owner,
            &repo.name,
            "collaborators",
            username,
            "permission",
        ];
        match self
            .send_json(JsonMethod::Get, &segments, None::<&()>)
            .await
        {
            Ok(permission) => Ok(Some(permission)),
            Err(error) if error.status() == Some(StatusCode::NOT_FOUND) => Ok(None),
            Err(error) => Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn permission(permission: &str, role: Option<&str>) -> RepositoryPermission {
        RepositoryPermission {
            permission: permission.to_owned(),
            role_name: role.map(str::to_owned),
        }
    }

    #[test]
    fn write_maintain_and_admin_may_write_triage_and_read_may_not() {
        assert!(permission("admin", Some("admin")).can_write());
        assert!(permission("write", Some("maintain")).can_write());
        assert!(permission("write", None).can_write());
        assert!(!permission("read", Some("triage")).can_write());
        assert!(!permission("none", None).can_write());
        assert_eq!(permission("write", Some("maintain")).shown(), "maintain");
        assert_eq!(permission("read", None).shown(), "read");
    }
}
