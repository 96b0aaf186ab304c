//! The diagnostic codes of packaging. Every failure of a tarball or of an
//! agent's slice maps to one of these; `docs/diagnostics.md` lists them.

use astrolift_manifest::{Code, Severity};

pub const SYMLINK: Code = Code::new(
    "package/symlink",
    Severity::Error,
    "A symlink inside an agent's slice; packages hold regular files only.",
);
pub const SPECIAL_FILE: Code = Code::new(
    "package/special-file",
    Severity::Error,
    "A hard link, device, fifo or socket inside an agent's slice.",
);
pub const PATH_ESCAPE: Code = Code::new(
    "package/path-escape",
    Severity::Error,
    "A path that leaves its tree or package: `..`, absolute, or outside the tarball's top directory.",
);
pub const DUPLICATE_DESTINATION: Code = Code::new(
    "package/duplicate-destination",
    Severity::Error,
    "Two different sources reach one destination in the package.",
);
pub const TOO_LARGE: Code = Code::new(
    "package/too-large",
    Severity::Error,
    "A package or a tarball over its size limit.",
);
pub const TOO_MANY_FILES: Code = Code::new(
    "package/too-many-files",
    Severity::Error,
    "A repository tarball with more entries than the file-count limit.",
);
pub const EMPTY: Code = Code::new(
    "package/empty",
    Severity::Error,
    "An agent whose slice holds no file.",
);
pub const MISSING_SOURCE: Code = Code::new(
    "package/missing-source",
    Severity::Error,
    "A shared mount, skill, brief or context file that names no file or directory.",
);
pub const INVALID_GLOB: Code = Code::new(
    "package/invalid-glob",
    Severity::Error,
    "An include, exclude or executables glob that does not compile.",
);
pub const BAD_TARBALL: Code = Code::new(
    "package/bad-tarball",
    Severity::Error,
    "A repository tarball that cannot be read: corrupt, sparse entries, duplicate or non-UTF-8 paths.",
);
pub const READ_FAILED: Code = Code::new(
    "package/read-failed",
    Severity::Error,
    "A file of the slice could not be read while the archive was written.",
);

pub const DEPENDENCY_FILE_UNREADABLE: Code = Code::new(
    "package/dependency-file-unreadable",
    Severity::Error,
    "A requirements.txt, package.json or lock file that is over 1 MiB, not UTF-8, or (package.json) not a JSON object.",
);
pub const DEPENDENCIES_UNLOCKED: Code = Code::new(
    "package/dependencies-unlocked",
    Severity::Warning,
    "A package.json that lists dependencies with no lock file next to it.",
);

pub const PACKAGER_DISPATCHED: Code = Code::new(
    "package/packager-dispatched",
    Severity::Notice,
    "The package needs dependency layers: the packager agent was dispatched to build them.",
);
pub const PACKAGER_NOT_CONFIGURED: Code = Code::new(
    "package/packager-not-configured",
    Severity::Warning,
    "The package needs dependency layers, but no packager agent can build them.",
);
pub const PACKAGER_FAILED: Code = Code::new(
    "package/packager-failed",
    Severity::Warning,
    "The packager agent could not be dispatched, or its last run failed, to build the package's dependency layers.",
);

/// The codes of this crate, for the catalogue.
pub const CODES: &[&Code] = &[
    &SYMLINK,
    &SPECIAL_FILE,
    &PATH_ESCAPE,
    &DUPLICATE_DESTINATION,
    &TOO_LARGE,
    &TOO_MANY_FILES,
    &EMPTY,
    &MISSING_SOURCE,
    &INVALID_GLOB,
    &BAD_TARBALL,
    &READ_FAILED,
    &DEPENDENCY_FILE_UNREADABLE,
    &DEPENDENCIES_UNLOCKED,
    &PACKAGER_DISPATCHED,
    &PACKAGER_NOT_CONFIGURED,
    &PACKAGER_FAILED,
];
