//! The diagnostic codes of the importers (`crates/import`): the semantic
//! gaps `astrolift import` prints. They live here, beside every other code,
//! so that [`crate::catalogue`] is the one list renderers and docs check;
//! the import crate re-exports them.

use crate::diagnostic::{Code, Severity};

pub const RUNTIME_IMAGE_REQUIRED: Code = Code::new(
    "import/runtime-image-required",
    Severity::Warning,
    "The imported agent has no runtime image; pass `--image` before it can run.",
);
pub const UNRESOLVED_TOOL: Code = Code::new(
    "import/unresolved-tool",
    Severity::Warning,
    "A tool of the source became a tool slug with no binding yet.",
);
pub const MODEL: Code = Code::new(
    "import/model",
    Severity::Notice,
    "Model settings of the source (provider, model name, temperature) have no native equivalent.",
);
pub const MEMORY: Code = Code::new(
    "import/memory",
    Severity::Warning,
    "A conversation memory of the source has no native equivalent.",
);
pub const VECTOR_STORE: Code = Code::new(
    "import/vector-store",
    Severity::Warning,
    "A vector store, retriever or embedding of the source has no native equivalent.",
);
pub const DOCUMENT_LOADER: Code = Code::new(
    "import/document-loader",
    Severity::Warning,
    "A document loader or text splitter of the source has no native equivalent.",
);
pub const CUSTOM_CODE: Code = Code::new(
    "import/custom-code",
    Severity::Warning,
    "A custom code component of the source was not imported.",
);
pub const CREDENTIAL: Code = Code::new(
    "import/credential",
    Severity::Warning,
    "A credential of the source was not imported; declare a `secret://` reference instead.",
);
pub const UNSUPPORTED_NODE: Code = Code::new(
    "import/unsupported-node",
    Severity::Warning,
    "A node of the source with no native equivalent (routing, parsing, I/O, ...).",
);
pub const COMMAND_NOT_RUN: Code = Code::new(
    "import/command-not-run",
    Severity::Notice,
    "A command an AGENTS.md lists was copied as text and never run.",
);
pub const NO_INSTRUCTIONS: Code = Code::new(
    "import/no-instructions",
    Severity::Warning,
    "The source has no prompt or instruction text; the brief is a stub.",
);
pub const UNRESOLVED_LINK: Code = Code::new(
    "import/unresolved-link",
    Severity::Warning,
    "A link of an AGENTS.md names a file the import does not carry; it is kept as text.",
);
pub const FLATTENED: Code = Code::new(
    "import/flattened",
    Severity::Notice,
    "Several agents of the source were flattened into one agent's skills.",
);
pub const STAGE_BINDING: Code = Code::new(
    "import/stage-binding",
    Severity::Notice,
    "A federation workflow stage was derived from the graph; its payload binding is for you to write.",
);
pub const CYCLE: Code = Code::new(
    "import/cycle",
    Severity::Warning,
    "The source graph has a cycle between agents; the workflow keeps only the edges that follow the order.",
);
pub const MANIFEST_GENERATED: Code = Code::new(
    "import/manifest-generated",
    Severity::Notice,
    "The package held no `astrolift.toml`; one was generated from the archive (and the snapshot).",
);
pub const SNAPSHOT_ONLY: Code = Code::new(
    "import/snapshot-only",
    Severity::Notice,
    "A snapshot field that the archive cannot restore (catalogue or organization skills, secrets).",
);

/// The codes of the importers, for the catalogue.
pub const CODES: &[&Code] = &[
    &RUNTIME_IMAGE_REQUIRED,
    &UNRESOLVED_TOOL,
    &MODEL,
    &MEMORY,
    &VECTOR_STORE,
    &DOCUMENT_LOADER,
    &CUSTOM_CODE,
    &CREDENTIAL,
    &UNSUPPORTED_NODE,
    &COMMAND_NOT_RUN,
    &NO_INSTRUCTIONS,
    &UNRESOLVED_LINK,
    &FLATTENED,
    &STAGE_BINDING,
    &CYCLE,
    &MANIFEST_GENERATED,
    &SNAPSHOT_ONLY,
];
