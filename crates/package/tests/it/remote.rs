//! Resolved remote skills in a package: their files come from their repository's tree,
//! land at the resolver's package directory (`scripts/` executable), are pinned in the
//! snapshot, and collide with a local file like any two sources.

use astrolift_manifest::Limits;
use astrolift_manifest::model::{LocalSkill, SkillRef};
use astrolift_manifest::remote_skill::RemoteSkill;
use astrolift_package::{
    MountedTree, RemoteSkillTree, package_agent_with_remote, skill_dir_sha256,
};

use crate::common::{dests, local_skill, manifest, mem_tree};

const COMMIT: &str = "1111111111111111111111111111111111111111";

fn runbooks() -> astrolift_manifest::MemTree {
    let mut tree = mem_tree(&[
        (
            "runbooks/clinical-triage/SKILL.md",
            "---\nname: clinical-triage\n---\nPage.\n",
        ),
        ("runbooks/clinical-triage/NOTES.txt", "not packaged\n"),
        ("runbooks/other/SKILL.md", "---\nname: other\n---\n"),
    ]);
    tree.insert(
        "runbooks/clinical-triage/scripts/page.sh",
        "#!/bin/sh\n",
        false,
    );
    tree
}

fn resolved() -> RemoteSkill {
    RemoteSkill {
        reference: "steadymd/runbooks/clinical-triage@main".to_owned(),
        repository: "steadymd/runbooks".to_owned(),
        commit: Some(COMMIT.to_owned()),
        dir: "runbooks/clinical-triage".to_owned(),
        package_dir: "skills/steadymd/runbooks/clinical-triage".to_owned(),
        skill: LocalSkill {
            name: "clinical-triage".to_owned(),
            description: "Triage.".to_owned(),
            license: None,
            compatibility: None,
            metadata: Default::default(),
            allowed_tools: Vec::new(),
            instructions: "Page.\n".to_owned(),
        },
        files: vec![
            "runbooks/clinical-triage/SKILL.md".to_owned(),
            "runbooks/clinical-triage/scripts/page.sh".to_owned(),
        ],
    }
}

fn agent() -> astrolift_manifest::model::AgentManifest {
    let mut agent = manifest("triage", "");
    agent.skills = vec![
        local_skill("emr", "skills/emr"),
        SkillRef::Org {
            repo_alias: "steadymd".to_owned(),
            path: "runbooks/clinical-triage".to_owned(),
            git_ref: "main".to_owned(),
        },
    ];
    agent
}

fn agent_tree() -> astrolift_manifest::MemTree {
    mem_tree(&[
        ("astrolift.toml", "name = \"triage\"\n"),
        ("skills/emr/SKILL.md", "---\nname: emr\n---\nRead.\n"),
    ])
}

#[test]
fn remote_skill_files_are_packaged_at_their_directory_and_pinned() {
    let (base, repository, skill) = (agent_tree(), runbooks(), resolved());
    let remote = vec![RemoteSkillTree {
        skill: &skill,
        tree: &repository,
    }];
    let tree = MountedTree::new(&base, remote);
    let packaged = package_agent_with_remote(&agent(), &tree, &Limits::DEFAULT, Vec::new())
        .unwrap_or_else(|d| panic!("{d:#?}"));
    assert_eq!(
        dests(&packaged.slice),
        [
            ("astrolift.toml", false),
            ("skills/emr/SKILL.md", false),
            ("skills/steadymd/runbooks/clinical-triage/SKILL.md", false),
            (
                "skills/steadymd/runbooks/clinical-triage/scripts/page.sh",
                true
            ),
        ],
        "the repository's other files are not packaged"
    );
    let value = serde_json::to_value(&packaged.snapshot).expect("value");
    let org = &value["skills"][1];
    assert_eq!(org["commit"], COMMIT);
    let sha256 = skill_dir_sha256(&repository, &skill.dir, &skill.files).expect("hashed");
    assert_eq!(org["sha256"], sha256);
    assert!(value["skills"][0].get("commit").is_none(), "a local skill");
}

#[test]
fn a_local_file_at_a_remote_skills_directory_is_a_duplicate_destination() {
    let mut base = agent_tree();
    base.insert(
        "skills/steadymd/runbooks/clinical-triage/SKILL.md",
        "---\nname: clinical-triage\n---\nLocal.\n",
        false,
    );
    let (repository, skill) = (runbooks(), resolved());
    let remote = vec![RemoteSkillTree {
        skill: &skill,
        tree: &repository,
    }];
    let tree = MountedTree::new(&base, remote);
    let failed = package_agent_with_remote(&agent(), &tree, &Limits::DEFAULT, Vec::new())
        .expect_err("two sources for one destination");
    let codes: Vec<&str> = failed.iter().map(|d| d.code.as_str()).collect();
    assert_eq!(codes, ["package/duplicate-destination"], "{failed:#?}");
}
