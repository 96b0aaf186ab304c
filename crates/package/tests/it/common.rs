//! Shared helpers: hand-built manifests and raw tarball writers.

use std::io::Write;

use astrolift_manifest::model::{AgentManifest, Brief, DEFAULT_EXCLUDES, PackageSpec, SkillRef};
use astrolift_manifest::{Limits, MemTree};
use astrolift_package::{PackageOutput, PayloadTree, Slice, write_archive};
use flate2::Compression;
use flate2::write::GzEncoder;
use tar::{EntryType, Header};

/// A manifest at `dir`/astrolift.toml with a declared default `[package]`.
pub fn manifest(name: &str, dir: &str) -> AgentManifest {
    let manifest = if dir.is_empty() {
        "astrolift.toml".to_owned()
    } else {
        format!("{dir}/astrolift.toml")
    };
    AgentManifest {
        manifest,
        dir: dir.to_owned(),
        name: name.to_owned(),
        alias: None,
        enabled: true,
        brief: None,
        skills: Vec::new(),
        workload: None,
        environment: Default::default(),
        secrets: Default::default(),
        triggers: Vec::new(),
        reference_spans: Default::default(),
        trigger_spans: Default::default(),
        package: PackageSpec {
            declared: true,
            root: dir.to_owned(),
            include: vec!["**".to_owned()],
            exclude: DEFAULT_EXCLUDES.iter().map(|s| (*s).to_owned()).collect(),
            executables: Vec::new(),
            shared: Vec::new(),
        },
    }
}

pub fn local_skill(local_name: &str, dir: &str) -> SkillRef {
    SkillRef::Local {
        local_name: local_name.to_owned(),
        dir: dir.to_owned(),
        skill: None,
    }
}

pub fn brief(path: &str, context: &[&str]) -> Option<Brief> {
    Some(Brief {
        path: path.to_owned(),
        context_files: context.iter().map(|s| (*s).to_owned()).collect(),
    })
}

/// Slices and archives into memory; panics on failure (tests only).
pub fn package(agent: &AgentManifest, tree: &dyn PayloadTree) -> (Slice, PackageOutput, Vec<u8>) {
    let slice = astrolift_package::slice(agent, tree, &Limits::DEFAULT)
        .unwrap_or_else(|d| panic!("slice failed: {d:#?}"));
    let mut bytes = Vec::new();
    let output = write_archive(&slice, tree, &mut bytes).expect("archive");
    (slice, output, bytes)
}

pub fn dests(slice: &Slice) -> Vec<(&str, bool)> {
    slice
        .files
        .iter()
        .map(|f| (f.dest.as_str(), f.executable))
        .collect()
}

pub fn mem_tree(files: &[(&str, &str)]) -> MemTree {
    MemTree::from_files(files.iter().map(|(p, b)| (*p, b.as_bytes().to_vec())))
}

/// Writes tar entries with raw headers: names are copied byte for byte into
/// the header, so `..`, absolute paths and any entry type can be produced.
#[derive(Default)]
pub struct RawTar {
    bytes: Vec<u8>,
}

impl RawTar {
    pub fn new() -> Self {
        Self::default()
    }

    /// A GitHub-style start: the global PAX header with the commit, then the top directory.
    pub fn github(top: &str) -> Self {
        let mut tar = Self::new();
        tar.entry(
            b"pax_global_header",
            EntryType::XGlobalHeader,
            &pax_record("comment", "0123456789abcdef0123456789abcdef01234567"),
        );
        tar.entry(format!("{top}/").as_bytes(), EntryType::Directory, b"");
        tar
    }

    pub fn entry(&mut self, name: &[u8], kind: EntryType, data: &[u8]) -> &mut Self {
        self.entry_sized(name, kind, data, data.len() as u64, 0o644)
    }

    pub fn file(&mut self, name: &str, data: &[u8], mode: u32) -> &mut Self {
        self.entry_sized(
            name.as_bytes(),
            EntryType::Regular,
            data,
            data.len() as u64,
            mode,
        )
    }

    /// An entry whose header declares `size` bytes but carries `data`.
    pub fn entry_sized(
        &mut self,
        name: &[u8],
        kind: EntryType,
        data: &[u8],
        size: u64,
        mode: u32,
    ) -> &mut Self {
        let mut header = Header::new_gnu();
        header.as_old_mut().name[..name.len()].copy_from_slice(name);
        header.set_entry_type(kind);
        header.set_size(size);
        header.set_mode(mode);
        header.set_mtime(1_700_000_000);
        header.set_cksum();
        self.bytes.extend_from_slice(header.as_bytes());
        self.bytes.extend_from_slice(data);
        let pad = (512 - data.len() % 512) % 512;
        self.bytes.extend(std::iter::repeat_n(0u8, pad));
        self
    }

    pub fn symlink(&mut self, name: &str, target: &str) -> &mut Self {
        let mut header = Header::new_gnu();
        header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        header.as_old_mut().linkname[..target.len()].copy_from_slice(target.as_bytes());
        header.set_entry_type(EntryType::Symlink);
        header.set_size(0);
        header.set_mode(0o777);
        header.set_cksum();
        self.bytes.extend_from_slice(header.as_bytes());
        self
    }

    pub fn tar_bytes(&self) -> Vec<u8> {
        let mut bytes = self.bytes.clone();
        bytes.extend(std::iter::repeat_n(0u8, 1024));
        bytes
    }

    pub fn gzip(&self) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
        encoder.write_all(&self.tar_bytes()).expect("gzip");
        encoder.finish().expect("gzip")
    }
}

/// One PAX record: "<len> <key>=<value>\n", where len counts the whole record.
pub fn pax_record(key: &str, value: &str) -> Vec<u8> {
    let body = format!(" {key}={value}\n");
    let mut len = body.len() + 1;
    while format!("{len}{body}").len() != len {
        len += 1;
    }
    format!("{len}{body}").into_bytes()
}
