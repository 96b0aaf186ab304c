//! The pre-flight of dependency layers (docs/reference.md "Dependency layers"): which
//! dependency files a package holds, whether they name anything to install, and the layer
//! key that a set of built layers is reused under.
//!
//! Pure: it reads the slice's files from the source tree and nothing else.
//!
//! - **Dependency files** are the slice's top-level `requirements.txt` and `package.json`,
//!   with the lock file next to the latter (`package-lock.json`, `npm-shrinkwrap.json`,
//!   `yarn.lock` or `pnpm-lock.yaml`) when there is one.
//! - **No layer** ([`preflight`] returns `None`, a *pass-through*) when every
//!   `requirements.txt` line is blank, a comment, a pip option that names no package, or a
//!   requirement whose name is a Python standard-library top-level module
//!   ([`PYTHON_STDLIB`]) or runtime-injected ([`RUNTIME_INJECTED`]), and `package.json`
//!   has no `dependencies` or an empty object.
//! - **The layer key** is sha256 over [`LAYER_KEY_FORMAT`], then per dependency file in
//!   path order its path, a NUL byte, its length (8 bytes, big-endian) and its bytes, then
//!   the runtime image (empty when the manifest names none).

use std::io::Read;

use astrolift_manifest::{Diagnostic, Span};
use sha2::{Digest, Sha256};

use crate::codes;
use crate::slice::Slice;
use crate::source::PayloadTree;

/// The largest dependency file read (1 MiB); a larger one is an error on it.
pub const DEPENDENCY_FILE_MAX_BYTES: u64 = 1024 * 1024;

/// The prefix hashed first into a layer key: its format version.
pub const LAYER_KEY_FORMAT: &str = "astrolift.layers/v1";

/// Modules the runtime provides (on `PYTHONPATH`), never installed.
pub const RUNTIME_INJECTED: &[&str] = &["autonoetic_sdk"];

/// Python's standard-library top-level modules (Python 3.12's `sys.stdlib_module_names`,
/// without the private `_` ones): a requirement naming one installs nothing the runtime
/// lacks.
pub const PYTHON_STDLIB: &[&str] = &[
    "abc",
    "aifc",
    "antigravity",
    "argparse",
    "array",
    "ast",
    "asynchat",
    "asyncio",
    "asyncore",
    "atexit",
    "audioop",
    "base64",
    "bdb",
    "binascii",
    "bisect",
    "builtins",
    "bz2",
    "cProfile",
    "calendar",
    "cgi",
    "cgitb",
    "chunk",
    "cmath",
    "cmd",
    "code",
    "codecs",
    "codeop",
    "collections",
    "colorsys",
    "compileall",
    "concurrent",
    "configparser",
    "contextlib",
    "contextvars",
    "copy",
    "copyreg",
    "crypt",
    "csv",
    "ctypes",
    "curses",
    "dataclasses",
    "datetime",
    "dbm",
    "decimal",
    "difflib",
    "dis",
    "distutils",
    "doctest",
    "email",
    "encodings",
    "ensurepip",
    "enum",
    "errno",
    "faulthandler",
    "fcntl",
    "filecmp",
    "fileinput",
    "fnmatch",
    "fractions",
    "ftplib",
    "functools",
    "gc",
    "genericpath",
    "getopt",
    "getpass",
    "gettext",
    "glob",
    "graphlib",
    "grp",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "http",
    "idlelib",
    "imaplib",
    "imghdr",
    "imp",
    "importlib",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "keyword",
    "lib2to3",
    "linecache",
    "locale",
    "logging",
    "lzma",
    "mailbox",
    "mailcap",
    "marshal",
    "math",
    "mimetypes",
    "mmap",
    "modulefinder",
    "msilib",
    "msvcrt",
    "multiprocessing",
    "netrc",
    "nis",
    "nntplib",
    "nt",
    "ntpath",
    "nturl2path",
    "numbers",
    "opcode",
    "operator",
    "optparse",
    "os",
    "ossaudiodev",
    "pathlib",
    "pdb",
    "pickle",
    "pickletools",
    "pipes",
    "pkgutil",
    "platform",
    "plistlib",
    "poplib",
    "posix",
    "posixpath",
    "pprint",
    "profile",
    "pstats",
    "pty",
    "pwd",
    "py_compile",
    "pyclbr",
    "pydoc",
    "pydoc_data",
    "pyexpat",
    "queue",
    "quopri",
    "random",
    "re",
    "readline",
    "reprlib",
    "resource",
    "rlcompleter",
    "runpy",
    "sched",
    "secrets",
    "select",
    "selectors",
    "shelve",
    "shlex",
    "shutil",
    "signal",
    "site",
    "smtpd",
    "smtplib",
    "sndhdr",
    "socket",
    "socketserver",
    "spwd",
    "sqlite3",
    "sre_compile",
    "sre_constants",
    "sre_parse",
    "ssl",
    "stat",
    "statistics",
    "string",
    "stringprep",
    "struct",
    "subprocess",
    "sunau",
    "symtable",
    "sys",
    "sysconfig",
    "syslog",
    "tabnanny",
    "tarfile",
    "telnetlib",
    "tempfile",
    "termios",
    "textwrap",
    "this",
    "threading",
    "time",
    "timeit",
    "tkinter",
    "token",
    "tokenize",
    "tomllib",
    "trace",
    "traceback",
    "tracemalloc",
    "tty",
    "turtle",
    "turtledemo",
    "types",
    "typing",
    "unicodedata",
    "unittest",
    "urllib",
    "uu",
    "uuid",
    "venv",
    "warnings",
    "wave",
    "weakref",
    "webbrowser",
    "winreg",
    "winsound",
    "wsgiref",
    "xdrlib",
    "xml",
    "xmlrpc",
    "zipapp",
    "zipfile",
    "zipimport",
    "zlib",
    "zoneinfo",
];

/// The Python dependency file.
pub const REQUIREMENTS: &str = "requirements.txt";
/// The Node.js dependency file.
pub const PACKAGE_JSON: &str = "package.json";
/// The lock files read next to `package.json`, in the order looked for.
pub const LOCK_FILES: &[&str] = &[
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
];

/// One dependency file of a package, as the packager's payload names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct DependencyFile {
    /// Package-relative path (`requirements.txt`).
    pub path: String,
    /// sha256 (hex) of its bytes.
    pub sha256: String,
}

/// A package that needs dependency layers: its dependency files and their layer key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerNeed {
    /// [`layer_key`] of the files and the runtime image (64 hex digits).
    pub layer_key: String,
    /// Every dependency file of the package, by path (lock files included).
    pub files: Vec<DependencyFile>,
}

/// The pre-flight of one slice: `Ok(None)` for a package with no dependency file or only
/// pass-through ones, `Ok(Some(_))` when the packager must build layers, `Err` when a
/// dependency file cannot be read (over [`DEPENDENCY_FILE_MAX_BYTES`], not UTF-8, or a
/// `package.json` that is not a JSON object). A `package.json` that needs layers without a
/// lock file adds a warning to `warnings`.
pub fn preflight(
    slice: &Slice,
    tree: &dyn PayloadTree,
    runtime_image: Option<&str>,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Option<LayerNeed>, Vec<Diagnostic>> {
    let mut read = Vec::new();
    let mut errors = Vec::new();
    for file in slice.files.iter().filter(|f| is_dependency_file(&f.dest)) {
        match read_dependency_file(tree, &file.source, file.size) {
            Ok(bytes) => read.push((file.dest.clone(), file.source.clone(), bytes)),
            Err(diagnostic) => errors.push(*diagnostic),
        }
    }
    let mut needs = false;
    for (dest, source, bytes) in &read {
        match needs_layers(dest, source, bytes) {
            Ok(true) => needs = true,
            Ok(false) => {}
            Err(diagnostic) => errors.push(*diagnostic),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if !needs {
        return Ok(None);
    }
    if let Some((_, source, _)) = read.iter().find(|(dest, _, _)| dest == PACKAGE_JSON)
        && !read
            .iter()
            .any(|(dest, _, _)| LOCK_FILES.contains(&dest.as_str()))
        && package_json_has_dependencies(&read)
    {
        warnings.push(
            Diagnostic::new(
                &codes::DEPENDENCIES_UNLOCKED,
                source.clone(),
                Span::FILE,
                "package.json lists dependencies but the package holds no lock file: the layers the packager builds may differ from one build to the next",
            )
            .with_help("commit package-lock.json (npm install --package-lock-only) next to package.json"),
        );
    }
    let files: Vec<(String, Vec<u8>)> = read.into_iter().map(|(d, _, b)| (d, b)).collect();
    let mut described: Vec<DependencyFile> = files
        .iter()
        .map(|(path, bytes)| DependencyFile {
            path: path.clone(),
            sha256: hex::encode(Sha256::digest(bytes)),
        })
        .collect();
    described.sort();
    Ok(Some(LayerNeed {
        layer_key: layer_key(&files, runtime_image),
        files: described,
    }))
}

fn package_json_has_dependencies(read: &[(String, String, Vec<u8>)]) -> bool {
    read.iter()
        .filter(|(dest, _, _)| dest == PACKAGE_JSON)
        .any(|(_, _, bytes)| {
            std::str::from_utf8(bytes)
                .ok()
                .and_then(|text| package_json_needs_layers(text).ok())
                .unwrap_or(false)
        })
}

/// Whether a package-relative path is one of the dependency files read.
pub fn is_dependency_file(dest: &str) -> bool {
    dest == REQUIREMENTS || dest == PACKAGE_JSON || LOCK_FILES.contains(&dest)
}

fn read_dependency_file(
    tree: &dyn PayloadTree,
    source: &str,
    size: u64,
) -> Result<Vec<u8>, Box<Diagnostic>> {
    let unreadable = |message: String| {
        Box::new(Diagnostic::new(
            &codes::DEPENDENCY_FILE_UNREADABLE,
            source,
            Span::FILE,
            message,
        ))
    };
    if size > DEPENDENCY_FILE_MAX_BYTES {
        return Err(unreadable(format!(
            "the dependency file is {size} bytes, over the {DEPENDENCY_FILE_MAX_BYTES}-byte limit"
        )));
    }
    let reader = tree
        .open_file(source)
        .map_err(|e| unreadable(format!("the dependency file cannot be read: {e}")))?;
    let mut bytes = Vec::new();
    reader
        .take(DEPENDENCY_FILE_MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| unreadable(format!("the dependency file cannot be read: {e}")))?;
    if bytes.len() as u64 > DEPENDENCY_FILE_MAX_BYTES {
        return Err(unreadable(format!(
            "the dependency file is over the {DEPENDENCY_FILE_MAX_BYTES}-byte limit"
        )));
    }
    Ok(bytes)
}

/// Whether one read dependency file names something to install (lock files never decide).
fn needs_layers(dest: &str, source: &str, bytes: &[u8]) -> Result<bool, Box<Diagnostic>> {
    if LOCK_FILES.contains(&dest) {
        return Ok(false);
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        let line = u32::try_from(line).unwrap_or(u32::MAX);
        Box::new(Diagnostic::new(
            &codes::DEPENDENCY_FILE_UNREADABLE,
            source,
            Span::new(line, 1, line, 1),
            "the dependency file is not UTF-8 text",
        ))
    })?;
    if dest == REQUIREMENTS {
        return Ok(requirements_need_layers(text));
    }
    package_json_needs_layers(text).map_err(|e| {
        let line = u32::try_from(e.line().max(1)).unwrap_or(u32::MAX);
        let column = u32::try_from(e.column().max(1)).unwrap_or(u32::MAX);
        Box::new(Diagnostic::new(
            &codes::DEPENDENCY_FILE_UNREADABLE,
            source,
            Span::new(line, column, line, column),
            format!("package.json is not a JSON object: {e}"),
        ))
    })
}

/// Whether a `requirements.txt` names a package to install: a requirement that is neither
/// standard library nor runtime-injected, a URL or path, or a `-r`/`-c`/`-e` option
/// (which names files or sources the pre-flight does not follow). Blank lines, comments
/// and other options (`--index-url`, `--pre`, …) name nothing.
pub fn requirements_need_layers(text: &str) -> bool {
    joined_lines(text).iter().any(|line| line_needs_layer(line))
}

/// The logical lines of a requirements file: a trailing `\` continues a line, comments
/// (`#` at the start or after whitespace) are dropped, and blank lines skipped.
fn joined_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    for raw in text.lines() {
        let line = strip_comment(raw);
        match line.strip_suffix('\\') {
            Some(continued) => current.push_str(continued),
            None => {
                current.push_str(line);
                let done = std::mem::take(&mut current);
                if !done.trim().is_empty() {
                    lines.push(done.trim().to_owned());
                }
            }
        }
    }
    if !current.trim().is_empty() {
        lines.push(current.trim().to_owned());
    }
    lines
}

fn strip_comment(line: &str) -> &str {
    if line.trim_start().starts_with('#') {
        return "";
    }
    match line.find(" #").or_else(|| line.find("\t#")) {
        Some(at) => &line[..at],
        None => line,
    }
}

fn line_needs_layer(line: &str) -> bool {
    if let Some(long) = line.strip_prefix("--") {
        let name = long.split(['=', ' ', '\t']).next().unwrap_or("");
        return matches!(name, "requirement" | "constraint" | "editable");
    }
    if let Some(short) = line.strip_prefix('-') {
        return short.starts_with(['r', 'c', 'e']);
    }
    let name: String = line
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        .collect();
    if name.is_empty() || line[name.len()..].trim_start().starts_with(['@', ':', '/']) {
        // A URL, a path, or a direct reference: something to install.
        return true;
    }
    !is_provided_module(&name)
}

/// Whether a requirement name (any case, `-`, `_` and `.` alike, as pip compares them)
/// is a standard-library or runtime-injected module.
pub fn is_provided_module(name: &str) -> bool {
    let normalised = normalise(name);
    RUNTIME_INJECTED
        .iter()
        .chain(PYTHON_STDLIB)
        .any(|module| normalise(module) == normalised)
}

fn normalise(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            '-' | '.' => '_',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// Whether a `package.json` names dependencies to install: its `dependencies` is a
/// non-empty object (absent, `null` or `{}` name nothing). `Err` when the text is not a
/// JSON object.
pub fn package_json_needs_layers(text: &str) -> Result<bool, serde_json::Error> {
    let object: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text)?;
    Ok(match object.get("dependencies") {
        Some(serde_json::Value::Object(deps)) => !deps.is_empty(),
        // `null` or absent names nothing; any other value is something npm would refuse,
        // so the packager reports it rather than the pre-flight dropping it.
        Some(serde_json::Value::Null) | None => false,
        Some(_) => true,
    })
}

/// The layer key of dependency files (package-relative path and bytes, any order) and a
/// runtime image: 64 hex digits (see the module docs).
pub fn layer_key(files: &[(String, Vec<u8>)], runtime_image: Option<&str>) -> String {
    let mut sorted: Vec<&(String, Vec<u8>)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut hasher = Sha256::new();
    hasher.update(LAYER_KEY_FORMAT.as_bytes());
    hasher.update([0]);
    for (path, bytes) in sorted {
        hasher.update(path.as_bytes());
        hasher.update([0]);
        hasher.update((bytes.len() as u64).to_be_bytes());
        hasher.update(bytes);
    }
    hasher.update(runtime_image.unwrap_or("").as_bytes());
    hex::encode(hasher.finalize())
}
