//! Resolved remote skills in a package (docs/reference.md §5.1, "Remote skills"): the files of each catalogue or
//! organization skill, read from its repository's already-fetched tree, packaged at the
//! package-relative directory the resolver assigned (`skills/<name>/`,
//! `skills/<alias>/<path>/`). The pins the snapshot records for them are
//! [`crate::snapshot::remote_pins`].
//!
//! No I/O beyond reading the trees it is handed: fetching is the caller's. A
//! [`MountedTree`] puts every remote skill's files at paths no repository path can take
//! (`/remote/<n>/<path>`: repository paths never start with `/`), reachable by path but
//! never listed, so the slice's listing passes (`include`, `exclude`, shared mounts) never
//! see them; only [`crate::slice_with_remote`] adds them, one by one.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Read;

use astrolift_manifest::remote_skill::RemoteSkill;
use astrolift_manifest::tree::{FileEntry, ReadError, SourceTree};

use crate::source::PayloadTree;

/// Where mounted files live in a [`MountedTree`].
const MOUNT_PREFIX: &str = "/remote/";

/// One resolved remote skill and the tree of the repository it was read from.
#[derive(Clone, Copy)]
pub struct RemoteSkillTree<'t> {
    pub skill: &'t RemoteSkill,
    pub tree: &'t dyn PayloadTree,
}

impl std::fmt::Debug for RemoteSkillTree<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteSkillTree")
            .field("skill", &self.skill.reference)
            .finish_non_exhaustive()
    }
}

/// The agent's tree with the files of its remote skills mounted (see the module docs).
pub struct MountedTree<'t> {
    base: &'t dyn PayloadTree,
    remote: Vec<RemoteSkillTree<'t>>,
    /// Mounted entries by mount path (each a copy of its repository entry, renamed).
    mounted: BTreeMap<String, FileEntry>,
}

impl std::fmt::Debug for MountedTree<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MountedTree")
            .field("remote", &self.remote)
            .field("mounted", &self.mounted.len())
            .finish_non_exhaustive()
    }
}

impl<'t> MountedTree<'t> {
    /// `base` with the files of `remote` mounted, in order.
    pub fn new(base: &'t dyn PayloadTree, remote: Vec<RemoteSkillTree<'t>>) -> Self {
        let mut mounted = BTreeMap::new();
        for (index, skill) in remote.iter().enumerate() {
            for path in &skill.skill.files {
                if let Some(entry) = skill.tree.entry(path) {
                    let mount = mount_path(index, path);
                    let renamed = FileEntry {
                        path: mount.clone(),
                        ..entry.clone()
                    };
                    mounted.insert(mount, renamed);
                }
            }
        }
        Self {
            base,
            remote,
            mounted,
        }
    }

    /// The remote skills, in order.
    pub fn remote(&self) -> &[RemoteSkillTree<'t>] {
        &self.remote
    }

    /// The repository tree and path a mount path stands for.
    fn route<'p>(&self, path: &'p str) -> Option<(&'t dyn PayloadTree, &'p str)> {
        let rest = path.strip_prefix(MOUNT_PREFIX)?;
        let (index, inner) = rest.split_once('/')?;
        let skill = self.remote.get(index.parse::<usize>().ok()?)?;
        Some((skill.tree, inner))
    }
}

/// Where file `path` of the `index`-th remote skill's repository is mounted.
pub(crate) fn mount_path(index: usize, path: &str) -> String {
    format!("{MOUNT_PREFIX}{index}/{path}")
}

impl SourceTree for MountedTree<'_> {
    fn entries(&self) -> &[FileEntry] {
        self.base.entries()
    }

    fn entry(&self, path: &str) -> Option<&FileEntry> {
        if path.starts_with(MOUNT_PREFIX) {
            return self.mounted.get(path);
        }
        self.base.entry(path)
    }

    fn read(&self, path: &str, limit: u64) -> Result<Cow<'_, [u8]>, ReadError> {
        match self.route(path) {
            Some((tree, inner)) => tree.read(inner, limit),
            None => self.base.read(path, limit),
        }
    }
}

impl PayloadTree for MountedTree<'_> {
    fn open_file(&self, path: &str) -> Result<Box<dyn Read + '_>, ReadError> {
        match self.route(path) {
            Some((tree, inner)) => tree.open_file(inner),
            None => self.base.open_file(path),
        }
    }
}
