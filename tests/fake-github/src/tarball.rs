//! `GET /repos/{owner}/{repo}/tarball/{ref}` and the download it redirects to.
//!
//! The archive is shaped like GitHub's: a pax global header whose `comment`
//! is the commit sha, then every entry under `owner-repo-<sha7>/`, directories
//! included, with fixed times and modes 644/755.

use std::io::{self, Write};
use std::path::Path as FsPath;

use axum::extract::{Path, State as AxumState};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use flate2::Compression;
use flate2::write::GzEncoder;
use tar::{EntryType, Header};

use crate::{FakeRepo, Shared, github_error, repo_refusal};

const DOCS: &str = "https://docs.github.com/rest/repos/contents#download-a-repository-archive-tar";
/// GitHub's archives carry the commit time; the fake uses a fixed one.
const MTIME: u64 = 1_700_000_000;

pub(crate) async fn redirect(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo, git_ref)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let state = state.lock();
    if let Some(refused) = repo_refusal(&state, &headers, &owner, &repo, DOCS) {
        return refused;
    }
    let Some(found) = find(&state, &owner, &repo, &git_ref) else {
        return github_error(StatusCode::NOT_FOUND, "Not Found", DOCS);
    };
    let location = format!(
        "{}/_codeload/{owner}/{repo}/legacy.tar.gz/{}?token=GHSAT0FAKEDOWNLOADTOKEN",
        state.download_base_url, found.sha
    );
    let mut response = StatusCode::FOUND.into_response();
    if let Ok(location) = HeaderValue::from_str(&location) {
        response.headers_mut().insert("location", location);
    }
    response
}

pub(crate) async fn download(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo, sha)): Path<(String, String, String)>,
) -> Response {
    let found = find(&state.lock(), &owner, &repo, &sha);
    let Some(found) = found else {
        return (StatusCode::NOT_FOUND, "Not Found").into_response();
    };
    let sha7: String = found.sha.chars().take(7).collect();
    let top = format!("{owner}-{repo}-{sha7}");
    match build_tarball(&found.fixture, &top, &found.sha) {
        Ok(bytes) => {
            let disposition = format!("attachment; filename={top}.tar.gz");
            let mut response = bytes.into_response();
            let headers = response.headers_mut();
            headers.insert(
                "content-type",
                HeaderValue::from_static("application/x-gzip"),
            );
            if let Ok(value) = HeaderValue::from_str(&disposition) {
                headers.insert("content-disposition", value);
            }
            response
        }
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
    }
}

/// The commit `git_ref` names: a sha, or a ref, which points at the commit added for it
/// last (adding a ref again moves it, as a push does).
pub(crate) fn find(
    state: &crate::State,
    owner: &str,
    repo: &str,
    git_ref: &str,
) -> Option<FakeRepo> {
    let short = git_ref.strip_prefix("refs/heads/").unwrap_or(git_ref);
    let entries = state.repos.get(&(owner.to_owned(), repo.to_owned()))?;
    let by_sha = entries.iter().find(|r| r.sha == git_ref);
    by_sha
        .or_else(|| {
            entries
                .iter()
                .rev()
                .find(|r| r.git_ref == git_ref || r.git_ref == short)
        })
        .cloned()
}

/// The fixture directory as GitHub's `tar.gz`.
pub fn build_tarball(fixture: &FsPath, top: &str, sha: &str) -> io::Result<Vec<u8>> {
    let gz = GzEncoder::new(Vec::new(), Compression::fast());
    let mut builder = tar::Builder::new(gz);
    append_global_header(&mut builder, sha)?;
    append_dir(&mut builder, &format!("{top}/"))?;
    let walk = walkdir::WalkDir::new(fixture)
        .min_depth(1)
        .sort_by_file_name()
        .follow_links(false);
    for entry in walk {
        let entry = entry.map_err(io::Error::other)?;
        let relative = entry
            .path()
            .strip_prefix(fixture)
            .map_err(io::Error::other)?;
        let name = format!("{top}/{}", relative.to_string_lossy().replace('\\', "/"));
        append_entry(&mut builder, &entry, &name)?;
    }
    builder.into_inner()?.finish()
}

fn append_entry<W: Write>(
    builder: &mut tar::Builder<W>,
    entry: &walkdir::DirEntry,
    name: &str,
) -> io::Result<()> {
    let kind = entry.file_type();
    if kind.is_dir() {
        return append_dir(builder, &format!("{name}/"));
    }
    if kind.is_symlink() {
        let target = std::fs::read_link(entry.path())?;
        let mut header = header(EntryType::Symlink, 0o777, 0);
        return builder.append_link(&mut header, name, target);
    }
    let data = std::fs::read(entry.path())?;
    let mode = if is_executable(entry)? { 0o755 } else { 0o644 };
    let mut header = header(EntryType::Regular, mode, data.len() as u64);
    builder.append_data(&mut header, name, data.as_slice())
}

fn append_dir<W: Write>(builder: &mut tar::Builder<W>, name: &str) -> io::Result<()> {
    let mut header = header(EntryType::Directory, 0o775, 0);
    builder.append_data(&mut header, name, io::empty())
}

fn append_global_header<W: Write>(builder: &mut tar::Builder<W>, sha: &str) -> io::Result<()> {
    let record = pax_record("comment", sha);
    let mut header = header(EntryType::XGlobalHeader, 0o666, record.len() as u64);
    builder.append_data(&mut header, "pax_global_header", record.as_bytes())
}

/// One pax record, `"<len> <key>=<value>\n"`, where `<len>` counts itself.
fn pax_record(key: &str, value: &str) -> String {
    let rest = key.len() + value.len() + 3; // ' ', '=', '\n'
    let mut len = rest + 1;
    while len != rest + len.to_string().len() {
        len = rest + len.to_string().len();
    }
    format!("{len} {key}={value}\n")
}

fn header(kind: EntryType, mode: u32, size: u64) -> Header {
    let mut header = Header::new_ustar();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_size(size);
    header.set_mtime(MTIME);
    header.set_uid(0);
    header.set_gid(0);
    header
}

#[cfg(unix)]
fn is_executable(entry: &walkdir::DirEntry) -> io::Result<bool> {
    use std::os::unix::fs::PermissionsExt;
    Ok(entry
        .metadata()
        .map_err(io::Error::other)?
        .permissions()
        .mode()
        & 0o111
        != 0)
}

#[cfg(not(unix))]
fn is_executable(_entry: &walkdir::DirEntry) -> io::Result<bool> {
    Ok(false)
}
