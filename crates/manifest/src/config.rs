//! Modular config manifests (docs/reference.md §5.3):
//! loading, include resolution, deep merge and assembly.
//!
//! A config manifest is a TOML file that an environment spec names
//! (`manifest_path`) or that the CLI is given with `--config PATH`:
//!
//! ```toml
//! include = ["base/runtime.toml", "skills/emr.toml"]
//!
//! [skills.triage]
//! system_prompt_file = "prompts/triage.md"
//! tools = ["jira-search"]
//! files = ["references/severity.md"]
//! scripts = ["scripts/collect.sh"]
//! binaries = ["bin/redactor"]
//!
//! [assets]
//! files = ["schemas/finding.json"]
//!
//! [environment]
//! tool_preset = "dev+cloud"
//! allow_install = false
//! LOG_LEVEL = "info"
//!
//! [secrets]
//! JIRA_TOKEN = { secret_name = "secret://agents/jira" }
//! ```
//!
//! Assembly rules:
//! - Every path a file declares (`include`, `system_prompt_file`, `files`,
//!   `scripts`, `binaries`, `[assets] files`) is relative to *that* file and is
//!   resolved to a repo-relative path before merging, so a value keeps its
//!   meaning whichever file it ends up coming from.
//! - Includes load in order and are deep-merged recursively: tables merge key
//!   by key, later includes win over earlier ones, and the including file wins
//!   over all its includes.
//! - **Arrays are replaced, not concatenated.** A later `tools = [...]`
//!   replaces an earlier one wholesale. Concatenation would make a value's
//!   origin ambiguous and would give no way to remove an inherited entry;
//!   replacement keeps "the last writer wins" true for every key.
//! - The main file is level 0; a chain of [`Limits::include_depth`] (16)
//!   includes is allowed, one more level is an error.
//! - Cycles, too-deep chains, missing files, non-UTF-8 files and paths that
//!   escape the repository are errors on the `include` entry (or path value)
//!   that causes them.
//!
//! Bounded work (includes are hostile input: six small files that each
//! include the next one 16 times would otherwise be 16⁵ loads):
//! - **Each file is loaded once per assembly.** A file reached again (a
//!   diamond, or the same entry listed twice) reuses what its first load
//!   found: its own keys, the order in which its includes apply, and how deep
//!   its includes go. Its diagnostics are reported once.
//! - **A file included several times applies at its last position.** The
//!   merge is a fold of each file's own keys in one *applied order*: the
//!   include order, depth first, keeping only the last occurrence of a file.
//!   That gives the same values (and origins) as merging every occurrence,
//!   since merging the same layer again only re-asserts what it set; only
//!   the order of keys a repeated file introduces may differ. A file that
//!   lists the same include twice gets a `config/duplicate-include` warning.
//! - **At most [`Limits::config_files`] (256) distinct files** are loaded,
//!   the main file included; the include that would load one more is a
//!   `config/too-many-includes` error, and no further new file is loaded.
//!   So assembly reads at most 256 files and merges each one's keys once.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;

use serde_json::{Map, Value, json};
use toml::de::{DeTable, DeValue};

use crate::diagnostic::{Code, Diagnostic, Severity, Span};
use crate::limits::Limits;
use crate::paths::{self, SLUG_RULE, is_slug};
use crate::reserved_env::refuse_reserved;
use crate::toml_walk::{self, TomlFile};
use crate::tree::{ReadError, SourceTree};

pub const INCLUDE_CYCLE: Code = Code::new(
    "config/include-cycle",
    Severity::Error,
    "An `include` entry leads back to a file that is already being loaded.",
);
pub const INCLUDE_DEPTH: Code = Code::new(
    "config/include-depth",
    Severity::Error,
    "Includes nest deeper than the limit (16 levels below the main file).",
);
pub const INCLUDE_MISSING: Code = Code::new(
    "config/include-missing",
    Severity::Error,
    "An `include` entry names a file that does not exist.",
);
pub const PATH_ESCAPE: Code = Code::new(
    "config/path-escape",
    Severity::Error,
    "A path in a config manifest is absolute or climbs out of the repository.",
);
pub const NOT_UTF8: Code = Code::new(
    "config/not-utf8",
    Severity::Error,
    "An included config file or a prompt file is not valid UTF-8.",
);
pub const FILE_TOO_LARGE: Code = Code::new(
    "config/file-too-large",
    Severity::Error,
    "An included config file or a prompt file is over the size limit.",
);
pub const MISSING_FILE: Code = Code::new(
    "config/missing-file",
    Severity::Error,
    "A file that a config manifest references does not exist.",
);
pub const INVALID_SKILL_SLUG: Code = Code::new(
    "config/invalid-skill-slug",
    Severity::Error,
    "A `[skills.<slug>]` table whose slug is not kebab-case.",
);
pub const RESERVED_ENV_VAR: Code = Code::new(
    "config/reserved-env",
    Severity::Warning,
    "`[environment]` or `[secrets]` sets a variable the dispatcher owns; it is ignored.",
);
pub const PLAINTEXT_SECRET: Code = Code::new(
    "config/plaintext-secret",
    Severity::Error,
    "A `[secrets]` entry is not `{ secret_name = \"secret://…\" }`.",
);
pub const SKILL_SLUG_ALIAS: Code = Code::new(
    "config/skill-slug-alias",
    Severity::Warning,
    "A hand-authored top-level `skill_slug`: it is a computed compatibility alias.",
);
pub const DUPLICATE_INCLUDE: Code = Code::new(
    "config/duplicate-include",
    Severity::Warning,
    "An `include` list names the same file twice; it is loaded once and applies at its last position.",
);
pub const TOO_MANY_INCLUDES: Code = Code::new(
    "config/too-many-includes",
    Severity::Error,
    "An assembly would load more distinct config files than the limit (256, the main file included).",
);
pub const NO_BLOB_STORE: Code = Code::new(
    "config/no-blob-store",
    Severity::Error,
    "The config requests files but no blob store is configured to deliver them.",
);

/// The codes of this module, for the catalogue.
pub const CODES: &[&Code] = &[
    &INCLUDE_CYCLE,
    &INCLUDE_DEPTH,
    &INCLUDE_MISSING,
    &PATH_ESCAPE,
    &NOT_UTF8,
    &FILE_TOO_LARGE,
    &MISSING_FILE,
    &INVALID_SKILL_SLUG,
    &RESERVED_ENV_VAR,
    &PLAINTEXT_SECRET,
    &SKILL_SLUG_ALIAS,
    &DUPLICATE_INCLUDE,
    &TOO_MANY_INCLUDES,
    &NO_BLOB_STORE,
];

pub(crate) const TOP_KEYS: &[&str] = &[
    "include",
    "skills",
    "assets",
    "environment",
    "secrets",
    "skill_slug",
];
const SKILL_KEYS: &[&str] = &[
    "system_prompt_file",
    "tools",
    "files",
    "scripts",
    "binaries",
];
const ASSET_KEYS: &[&str] = &["files"];
const SECRET_KEYS: &[&str] = &["secret_name"];

/// What `load_config` is told beyond the tree and the path.
#[derive(Debug, Clone, Copy)]
pub struct ConfigOptions {
    pub limits: Limits,
    /// True when a blob store can deliver referenced files. When false, a
    /// config that references files is an error rather than a silent success.
    pub blob_store: bool,
}

impl Default for ConfigOptions {
    fn default() -> Self {
        Self {
            limits: Limits::DEFAULT,
            blob_store: true,
        }
    }
}

/// The assembled config: the merged document, where each value came from,
/// the files read (main file first, then includes in load order) and the diagnostics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigResult {
    /// The merged document, with repo-relative paths. `include` is consumed.
    pub document: Value,
    /// JSON pointer (into `document`) of each scalar and array → repo-relative origin file.
    pub origins: BTreeMap<String, String>,
    pub files: Vec<String>,
    pub diagnostics: Vec<Diagnostic>,
}

impl ConfigResult {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// What `astrolift assemble` prints: the document, or with `origins`
    /// `{"document": …, "origins": {pointer: file}}`.
    pub fn to_json(&self, with_origins: bool) -> Value {
        if with_origins {
            json!({ "document": self.document, "origins": self.origins })
        } else {
            self.document.clone()
        }
    }
}

/// One file an assembled config requests: a skill's `system_prompt_file`, `files`,
/// `scripts` or `binaries`, or an `[assets] files` entry (repo-relative).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RequestedFile {
    pub path: String,
    /// A script or a binary: delivered with mode 0755 (else 0644).
    pub executable: bool,
}

/// Every file the assembled `document` requests, each once, sorted by path bytes. A path
/// requested both as a plain file and as a script or binary is executable.
pub fn requested_files(document: &Value) -> Vec<RequestedFile> {
    let mut found: BTreeMap<String, bool> = BTreeMap::new();
    let mut add = |value: &Value, executable: bool| {
        let path = value
            .as_str()
            .or_else(|| value.get("path").and_then(Value::as_str));
        if let Some(path) = path {
            *found.entry(path.to_owned()).or_default() |= executable;
        }
    };
    let skills = document.get("skills").and_then(Value::as_object);
    for skill in skills.into_iter().flat_map(|skills| skills.values()) {
        if let Some(prompt) = skill.get("system_prompt_file") {
            add(prompt, false);
        }
        for (key, executable) in [("files", false), ("scripts", true), ("binaries", true)] {
            for entry in skill
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                add(entry, executable);
            }
        }
    }
    let assets = document.pointer("/assets/files").and_then(Value::as_array);
    for entry in assets.into_iter().flatten() {
        add(entry, false);
    }
    found
        .into_iter()
        .map(|(path, executable)| RequestedFile { path, executable })
        .collect()
}

/// Loads `path` with the default options (a blob store is available).
pub fn load_config(tree: &dyn SourceTree, path: &str, limits: &Limits) -> ConfigResult {
    let options = ConfigOptions {
        limits: *limits,
        blob_store: true,
    };
    load_config_with(tree, path, &options)
}

/// Loads, validates and assembles the config manifest at `path` (repo-relative).
/// Never fails: every problem is a diagnostic.
pub fn load_config_with(
    tree: &dyn SourceTree,
    path: &str,
    options: &ConfigOptions,
) -> ConfigResult {
    let mut loader = Loader {
        tree,
        options,
        stack: Vec::new(),
        files: Vec::new(),
        loaded: Vec::new(),
        by_path: HashMap::new(),
        unreadable: HashMap::new(),
        refused_more_files: false,
        diagnostics: Vec::new(),
        file_refs: Vec::new(),
    };
    let mut layer = match tree.read_text(path, options.limits.manifest_file) {
        Ok(text) => {
            let main = loader.load(path, &text, 0);
            loader.assemble(main)
        }
        Err(error) => {
            let code = read_error_code(&error);
            loader.diagnostics.push(Diagnostic::new(
                code,
                path,
                Span::FILE,
                format!("cannot read config manifest `{path}`: {error}"),
            ));
            Layer::default()
        }
    };
    set_skill_slug_alias(&mut layer);
    loader.check_blob_store();
    let mut diagnostics = loader.diagnostics;
    crate::diagnostic::sort(&mut diagnostics);
    ConfigResult {
        document: Value::Object(layer.value),
        origins: layer.origins,
        files: loader.files,
        diagnostics,
    }
}

fn read_error_code(error: &ReadError) -> &'static Code {
    match error {
        ReadError::NotUtf8 => &NOT_UTF8,
        ReadError::TooLarge { .. } => &FILE_TOO_LARGE,
        _ => &MISSING_FILE,
    }
}

/// The diagnostic on an `include` entry whose file cannot be read.
fn report_unreadable(
    file: &mut TomlFile<'_>,
    target: &str,
    range: Range<usize>,
    error: &ReadError,
) {
    match error {
        ReadError::NotFound | ReadError::NotAFile => {
            file.report(
                &INCLUDE_MISSING,
                range,
                format!("included file `{target}` does not exist"),
            )
            .help = Some("includes are relative to the including file".to_owned());
        }
        error => {
            file.report(
                read_error_code(error),
                range,
                format!("cannot include `{target}`: {error}"),
            );
        }
    }
}

/// The applied order of a file (see the module docs): the applied orders of
/// its includes in entry order, then the file itself, keeping only the last
/// occurrence of each file. Walked backwards, so each file is placed once
/// and a target whose order is already placed is skipped whole: linear in
/// the entries plus the distinct files, however often files repeat.
fn applied_order(loaded: &[LoadedFile], includes: &[usize], own: usize) -> Vec<usize> {
    let mut placed = HashSet::from([own]);
    let mut reversed = vec![own];
    for &target in includes.iter().rev() {
        // A placed target came with its whole order: a file's order holds
        // the order of every file it includes.
        if placed.contains(&target) {
            continue;
        }
        for &index in loaded[target].order.iter().rev() {
            if placed.insert(index) {
                reversed.push(index);
            }
        }
    }
    reversed.reverse();
    reversed
}

/// The compatibility alias of older runtimes: the first composed skill.
fn set_skill_slug_alias(layer: &mut Layer) {
    let first = layer
        .value
        .get("skills")
        .and_then(Value::as_object)
        .and_then(|skills| skills.keys().next().cloned());
    if let Some(first) = first {
        layer
            .value
            .insert("skill_slug".to_owned(), Value::String(first));
        layer
            .origins
            .insert("/skill_slug".to_owned(), "(computed)".to_owned());
    }
}

/// One file's contribution (or a merge of several): a JSON object and the
/// origin file of each of its scalars and arrays.
#[derive(Debug, Clone, Default)]
struct Layer {
    value: Map<String, Value>,
    origins: BTreeMap<String, String>,
}

/// A file reference, remembered to report `config/no-blob-store` where it is written.
#[derive(Debug)]
struct FileRef {
    path: String,
    span: Span,
}

/// What one load of a config file found, kept for every later include of it.
#[derive(Debug)]
struct LoadedFile {
    /// The file's own keys (everything but `include`), paths resolved.
    /// Taken (left empty) when the document is assembled.
    own: Layer,
    /// The files (indices into `Loader::loaded`) whose own keys including
    /// this file applies, in applied order, each once; ends with this file.
    order: Vec<usize>,
    /// Levels of includes loaded below this file (0 without includes).
    height: usize,
}

struct Loader<'a> {
    tree: &'a dyn SourceTree,
    options: &'a ConfigOptions,
    /// Files being loaded, outermost first: for cycle detection and messages.
    stack: Vec<String>,
    /// Files loaded, in load order, each once: the count the file limit bounds.
    files: Vec<String>,
    /// Files whose load finished, by index.
    loaded: Vec<LoadedFile>,
    by_path: HashMap<String, usize>,
    /// Included files that could not be read, with why: each is read once.
    unreadable: HashMap<String, ReadError>,
    /// Set once the file limit refused an include (reported once).
    refused_more_files: bool,
    diagnostics: Vec<Diagnostic>,
    file_refs: Vec<FileRef>,
}

impl Loader<'_> {
    /// Loads `path` (its includes first) and returns its index in `loaded`.
    fn load(&mut self, path: &str, text: &str, level: usize) -> usize {
        self.stack.push(path.to_owned());
        self.files.push(path.to_owned());
        let (mut file, root) = TomlFile::parse(path, text);
        let root = root.get_ref();
        file.check_keys(root, TOP_KEYS, "a config manifest");
        let (includes, height) = self.load_includes(&mut file, root, level);
        let own = self.own_layer(&mut file, root);
        self.diagnostics.append(&mut file.diagnostics);
        self.stack.pop();
        let index = self.loaded.len();
        let order = applied_order(&self.loaded, &includes, index);
        self.loaded.push(LoadedFile { own, order, height });
        self.by_path.insert(path.to_owned(), index);
        index
    }

    /// The merged layer of the file at `main`: each file's own keys once,
    /// in applied order.
    fn assemble(&mut self, main: usize) -> Layer {
        let order = std::mem::take(&mut self.loaded[main].order);
        let mut layer = Layer::default();
        for index in order {
            let own = std::mem::take(&mut self.loaded[index].own);
            merge_layer(&mut layer, own);
        }
        layer
    }

    /// Loads (or reuses) every entry of the file's `include`; returns the
    /// loaded targets in entry order (a repeated entry repeats its target)
    /// and the levels of includes below this file.
    fn load_includes<'i>(
        &mut self,
        file: &mut TomlFile<'i>,
        root: &DeTable<'i>,
        level: usize,
    ) -> (Vec<usize>, usize) {
        let mut targets = Vec::new();
        let mut height = 0;
        // Each target's first entry line, and whether its repeat was reported.
        let mut listed: HashMap<String, (u32, bool)> = HashMap::new();
        let dir = paths::parent(&file.path).to_owned();
        for (entry, range) in file.str_array(root, "include").unwrap_or_default() {
            let Some(target) = self.resolve(file, &dir, &entry, range.clone(), "include") else {
                continue;
            };
            if let Some((first_line, reported)) = listed.get_mut(&target) {
                if !*reported {
                    *reported = true;
                    let first_line = *first_line;
                    file.report(
                        &DUPLICATE_INCLUDE,
                        range,
                        format!("`{target}` is already included on line {first_line}; it is loaded once and applies at its last position"),
                    )
                    .help = Some("list each file once, where it should apply".to_owned());
                }
                targets.extend(self.by_path.get(&target).copied());
                continue;
            }
            listed.insert(target.clone(), (file.span(range.clone()).line, false));
            if let Some(index) = self.include(file, &target, range, level) {
                targets.push(index);
                height = height.max(1 + self.loaded[index].height);
            }
        }
        (targets, height)
    }

    /// The file one `include` entry names, loaded now or reused from its
    /// first load; `None`, with a diagnostic on the entry, when it cannot be.
    fn include(
        &mut self,
        file: &mut TomlFile<'_>,
        target: &str,
        range: Range<usize>,
        level: usize,
    ) -> Option<usize> {
        let limit = self.options.limits.include_depth;
        if let Some(start) = self.stack.iter().position(|p| p == target) {
            let mut cycle: Vec<&str> = self.stack[start..].iter().map(String::as_str).collect();
            cycle.push(target);
            file.report(
                &INCLUDE_CYCLE,
                range,
                format!("include cycle: {}", cycle.join(" → ")),
            )
            .help = Some("remove one of the includes that close the cycle".to_owned());
            return None;
        }
        if let Some(&index) = self.by_path.get(target) {
            let deepest = level + 1 + self.loaded[index].height;
            if deepest > limit {
                file.report(
                    &INCLUDE_DEPTH,
                    range,
                    format!("including `{target}` here would take its includes to level {deepest}; at most {limit} levels of includes are allowed below the main file"),
                );
                return None;
            }
            return Some(index);
        }
        if let Some(error) = self.unreadable.get(target).cloned() {
            report_unreadable(file, target, range, &error);
            return None;
        }
        if level + 1 > limit {
            file.report(
                &INCLUDE_DEPTH,
                range,
                format!("including `{target}` would be level {}; at most {limit} levels of includes are allowed below the main file", level + 1),
            );
            return None;
        }
        let max_files = self.options.limits.config_files;
        if self.files.len() >= max_files {
            if !self.refused_more_files {
                self.refused_more_files = true;
                file.report(
                    &TOO_MANY_INCLUDES,
                    range,
                    format!("including `{target}` would load config file number {}; an assembly loads at most {max_files} distinct files, the main file included (this and any further new include are not loaded)", self.files.len() + 1),
                )
                .help = Some("merge small config files, or include shared files once from a common parent".to_owned());
            }
            return None;
        }
        match self
            .tree
            .read_text(target, self.options.limits.manifest_file)
        {
            Ok(text) => Some(self.load(target, &text, level + 1)),
            Err(error) => {
                report_unreadable(file, target, range, &error);
                self.unreadable.insert(target.to_owned(), error);
                None
            }
        }
    }

    /// Resolves a path written in `file` against `dir`; reports an escape.
    fn resolve<'i>(
        &mut self,
        file: &mut TomlFile<'i>,
        dir: &str,
        written: &str,
        range: Range<usize>,
        what: &str,
    ) -> Option<String> {
        let absolute = written.starts_with('/') || written.contains('\\') || written.contains(':');
        let resolved = if absolute {
            None
        } else {
            paths::resolve_lexically(dir, written).filter(|p| !p.is_empty())
        };
        if resolved.is_none() {
            file.report(
                &PATH_ESCAPE,
                range,
                format!("`{what}` path `{written}` escapes the repository"),
            )
            .help = Some(
                "write a `/`-separated path relative to this file that stays inside the repository"
                    .to_owned(),
            );
        }
        resolved
    }

    /// The file's own keys (everything but `include`), validated and with paths resolved.
    fn own_layer<'i>(&mut self, file: &mut TomlFile<'i>, root: &DeTable<'i>) -> Layer {
        let mut value = Map::new();
        if let Some((skills, _)) = file.table(root, "skills") {
            let skills = self.skills(file, skills);
            value.insert("skills".to_owned(), Value::Object(skills));
        }
        if let Some((assets, _)) = file.table(root, "assets") {
            file.check_keys(assets, ASSET_KEYS, "[assets]");
            let mut out = Map::new();
            if let Some(files) = self.file_list(file, assets, "files", false) {
                out.insert("files".to_owned(), files);
            }
            value.insert("assets".to_owned(), Value::Object(out));
        }
        if let Some((env, _)) = file.table(root, "environment") {
            value.insert(
                "environment".to_owned(),
                Value::Object(environment(file, env)),
            );
        }
        if let Some((secrets, _)) = file.table(root, "secrets") {
            value.insert(
                "secrets".to_owned(),
                Value::Object(secrets_table(file, secrets)),
            );
        }
        if let Some(range) = toml_walk::key_span(root, "skill_slug") {
            file.report(
                &SKILL_SLUG_ALIAS,
                range,
                "`skill_slug` is a compatibility alias computed from the first `[skills.<slug>]` table; authoring it has no effect",
            )
            .help = Some("remove `skill_slug` and order the `[skills.<slug>]` tables instead".to_owned());
        }
        let mut layer = Layer {
            value,
            origins: BTreeMap::new(),
        };
        let value = Value::Object(std::mem::take(&mut layer.value));
        record_origins(&value, String::new(), &file.path, &mut layer.origins);
        if let Value::Object(map) = value {
            layer.value = map;
        }
        layer
    }

    fn skills<'i>(&mut self, file: &mut TomlFile<'i>, skills: &DeTable<'i>) -> Map<String, Value> {
        let mut out = Map::new();
        for (key, item) in skills.iter() {
            let slug = key.get_ref().as_ref();
            if !is_slug(slug) {
                file.report(
                    &INVALID_SKILL_SLUG,
                    key.span(),
                    format!("skill slug `{slug}` is not kebab-case"),
                )
                .help = Some(SLUG_RULE.to_owned());
            }
            let DeValue::Table(table) = item.get_ref() else {
                file.report(
                    &toml_walk::WRONG_TYPE,
                    item.span(),
                    format!(
                        "`skills.{slug}` must be a table, found {}",
                        item.get_ref().type_str()
                    ),
                );
                continue;
            };
            out.insert(
                slug.to_owned(),
                Value::Object(self.skill(file, table, slug)),
            );
        }
        out
    }

    fn skill<'i>(
        &mut self,
        file: &mut TomlFile<'i>,
        table: &DeTable<'i>,
        slug: &str,
    ) -> Map<String, Value> {
        file.check_keys(table, SKILL_KEYS, &format!("[skills.{slug}]"));
        let mut out = Map::new();
        if let Some((prompt, range)) = file.str(table, "system_prompt_file") {
            let prompt = prompt.to_owned();
            if let Some(path) = self.prompt_file(file, &prompt, range) {
                out.insert("system_prompt_file".to_owned(), Value::String(path));
            }
        }
        if let Some(tools) = file.str_array(table, "tools") {
            let tools = tools.into_iter().map(|(t, _)| Value::String(t)).collect();
            out.insert("tools".to_owned(), Value::Array(tools));
        }
        for (key, executable) in [("files", false), ("scripts", true), ("binaries", true)] {
            if let Some(list) = self.file_list(file, table, key, executable) {
                out.insert(key.to_owned(), list);
            }
        }
        out
    }

    /// A prompt file must exist, be UTF-8 and fit the size limit.
    fn prompt_file<'i>(
        &mut self,
        file: &mut TomlFile<'i>,
        written: &str,
        range: Range<usize>,
    ) -> Option<String> {
        let dir = paths::parent(&file.path).to_owned();
        let path = self.resolve(file, &dir, written, range.clone(), "system_prompt_file")?;
        match self
            .tree
            .read_text(&path, self.options.limits.manifest_file)
        {
            Ok(_) => {}
            Err(ReadError::NotFound | ReadError::NotAFile) => {
                file.report(
                    &MISSING_FILE,
                    range,
                    format!("prompt file `{path}` does not exist"),
                );
            }
            Err(error) => {
                file.report(
                    read_error_code(&error),
                    range,
                    format!("prompt file `{path}`: {error}"),
                );
            }
        }
        Some(path)
    }

    /// A list of referenced files: each must exist. Scripts and binaries come
    /// out as `{ "path", "executable": true }`, plain files as paths.
    fn file_list<'i>(
        &mut self,
        file: &mut TomlFile<'i>,
        table: &DeTable<'i>,
        key: &str,
        executable: bool,
    ) -> Option<Value> {
        let items = file.str_array(table, key)?;
        let dir = paths::parent(&file.path).to_owned();
        let mut out = Vec::with_capacity(items.len());
        for (written, range) in items {
            let Some(path) = self.resolve(file, &dir, &written, range.clone(), key) else {
                continue;
            };
            if !self.tree.is_file(&path) {
                file.report(
                    &MISSING_FILE,
                    range.clone(),
                    format!("`{key}` entry `{path}` does not exist"),
                )
                .help = Some("paths are relative to the file that declares them".to_owned());
            }
            self.file_refs.push(FileRef {
                path: file.path.clone(),
                span: file.span(range),
            });
            out.push(if executable {
                json!({ "path": path, "executable": true })
            } else {
                Value::String(path)
            });
        }
        Some(Value::Array(out))
    }

    fn check_blob_store(&mut self) {
        if self.options.blob_store {
            return;
        }
        if let Some(first) = self.file_refs.first() {
            let count = self.file_refs.len();
            self.diagnostics.push(
                Diagnostic::new(
                    &NO_BLOB_STORE,
                    first.path.clone(),
                    first.span,
                    format!("the config requests {count} file(s) but no blob store is configured to deliver them"),
                )
                .with_help("configure a blob store (ASTROLIFT_BLOBS) or remove the file references"),
            );
        }
    }
}

/// `[environment]`: `tool_preset` (string), `allow_install` (boolean) and
/// plain string variables. Reserved runtime variables are dropped with a warning.
fn environment<'i>(file: &mut TomlFile<'i>, env: &DeTable<'i>) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, item) in env.iter() {
        let name = key.get_ref().as_ref();
        if name == "allow_install" {
            if let Some((b, _)) = file.bool(env, name) {
                out.insert(name.to_owned(), Value::Bool(b));
            }
            continue;
        }
        if refused_as_reserved(file, "[environment]", "value", key, item) {
            continue;
        }
        match item.get_ref() {
            DeValue::String(s) => {
                out.insert(name.to_owned(), Value::String(s.to_string()));
            }
            other => {
                file.report(
                    &toml_walk::WRONG_TYPE,
                    item.span(),
                    format!("`{name}` must be a string, found {}", other.type_str()),
                );
            }
        }
    }
    out
}

/// Whether `key` of `section` names a reserved runtime variable: then it is reported
/// ([`refuse_reserved`]) and the caller drops the entry.
fn refused_as_reserved(
    file: &mut TomlFile<'_>,
    section: &str,
    what: &str,
    key: &toml::Spanned<std::borrow::Cow<'_, str>>,
    item: &toml::Spanned<DeValue<'_>>,
) -> bool {
    let name = key.get_ref().as_ref();
    let message = format!("`{name}` is set by the dispatcher; this {what} is ignored");
    let entry_end = Some(item.span().end);
    refuse_reserved(
        file,
        &RESERVED_ENV_VAR,
        section,
        name,
        key.span(),
        entry_end,
        message,
    )
    .is_some()
}

/// `[secrets] NAME = { secret_name = "secret://…" }`. A plaintext value is an
/// error whose message never includes the value.
fn secrets_table<'i>(file: &mut TomlFile<'i>, secrets: &DeTable<'i>) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, item) in secrets.iter() {
        let name = key.get_ref().as_ref();
        if refused_as_reserved(file, "[secrets]", "secret", key, item) {
            continue;
        }
        let reference = match item.get_ref() {
            DeValue::Table(table) => {
                file.check_keys(table, SECRET_KEYS, &format!("secret `{name}`"));
                match file.str(table, "secret_name") {
                    Some((value, range)) => Some((value.to_owned(), range)),
                    None => {
                        if table.get("secret_name").is_none() {
                            file.missing(item.span(), "secret_name", &format!("secret `{name}`"));
                        }
                        None
                    }
                }
            }
            DeValue::String(s) if is_secret_ref(s) => Some((s.to_string(), item.span())),
            _ => Some((String::new(), item.span())),
        };
        let Some((reference, range)) = reference else {
            continue;
        };
        if is_secret_ref(&reference) {
            out.insert(name.to_owned(), json!({ "secret_name": reference }));
        } else {
            file.report(
                &PLAINTEXT_SECRET,
                range,
                format!("secret `{name}` is not a `secret://` reference (the value is not shown)"),
            )
            .help = Some(format!(
                "write `{name} = {{ secret_name = \"secret://…\" }}` and store the value in the secret store"
            ));
        }
    }
    out
}

/// A `secret://` reference with a non-empty name.
pub fn is_secret_ref(value: &str) -> bool {
    value
        .strip_prefix("secret://")
        .is_some_and(|rest| !rest.trim().is_empty())
}

/// Deep merge: `over` wins. Objects merge key by key, recursively; any other
/// value (arrays included) replaces what was there.
pub fn deep_merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(&key) {
                    Some(existing) => deep_merge(existing, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, over) => *base = over,
    }
}

/// [`deep_merge`] of layers, carrying origins: a replaced subtree takes the
/// origins of what replaced it.
fn merge_layer(base: &mut Layer, over: Layer) {
    merge_at(
        &mut base.value,
        over.value,
        "",
        &mut base.origins,
        &over.origins,
    );
}

fn merge_at(
    base: &mut Map<String, Value>,
    over: Map<String, Value>,
    pointer: &str,
    origins: &mut BTreeMap<String, String>,
    over_origins: &BTreeMap<String, String>,
) {
    for (key, value) in over {
        let child = format!("{pointer}/{}", escape_pointer(&key));
        match (base.get_mut(&key), value) {
            (Some(Value::Object(existing)), Value::Object(value)) => {
                merge_at(existing, value, &child, origins, over_origins);
            }
            (_, value) => {
                retain_outside(origins, &child);
                for (p, f) in under(over_origins, &child) {
                    origins.insert(p.clone(), f.clone());
                }
                base.insert(key, value);
            }
        }
    }
}

/// Origins at `pointer` and below it.
fn under<'m>(
    origins: &'m BTreeMap<String, String>,
    pointer: &'m str,
) -> impl Iterator<Item = (&'m String, &'m String)> + 'm {
    origins
        .range(pointer.to_owned()..)
        .take_while(move |(p, _)| p.starts_with(pointer))
        .filter(move |(p, _)| p.len() == pointer.len() || p.as_bytes()[pointer.len()] == b'/')
}

fn retain_outside(origins: &mut BTreeMap<String, String>, pointer: &str) {
    let doomed: Vec<String> = under(origins, pointer).map(|(p, _)| p.clone()).collect();
    for p in doomed {
        origins.remove(&p);
    }
}

/// Records `file` as the origin of every scalar and array below `pointer`.
fn record_origins(
    value: &Value,
    pointer: String,
    file: &str,
    origins: &mut BTreeMap<String, String>,
) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                record_origins(
                    child,
                    format!("{pointer}/{}", escape_pointer(key)),
                    file,
                    origins,
                );
            }
        }
        _ => {
            origins.insert(pointer, file.to_owned());
        }
    }
}

/// RFC 6901 escaping of one reference token.
pub fn escape_pointer(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_are_replaced_and_tables_merged() {
        let mut base = json!({"a": {"x": 1, "list": [1, 2]}, "b": 1});
        deep_merge(&mut base, json!({"a": {"y": 2, "list": [3]}}));
        assert_eq!(base, json!({"a": {"x": 1, "y": 2, "list": [3]}, "b": 1}));
    }
}
