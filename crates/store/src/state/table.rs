//! The one definition of the DynamoDB table's shape.
//!
//! `DynamoStateStore::create_table` builds the table from it, and the SAM template in
//! `infra/` is checked against its JSON form by a test, so the two cannot drift apart.

use serde::{Deserialize, Serialize};

/// Partition key attribute.
pub const PK: &str = "pk";
/// Sort key attribute.
pub const SK: &str = "sk";
/// The project/agent-name index.
pub const GSI_NAME: &str = "gsi1";
/// Partition key of the index: `PROJECT#<project_id>`, or `RUNNING_WORKFLOW_RUNS`.
pub const GSI_PK: &str = "gsi1pk";
/// Sort key of the index: `AGENT#<name>` (an agent) or `PREVIEW#<name>` (an active
/// preview) in a project's partition; a run's id among the running workflow runs.
pub const GSI_SK: &str = "gsi1sk";
/// The TTL attribute (epoch seconds), set on webhook deliveries.
pub const TTL_ATTRIBUTE: &str = "expires_at";

/// A key attribute and its role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyShape {
    /// Attribute name.
    pub attribute: String,
    /// `HASH` or `RANGE`.
    pub key_type: String,
}

/// A key attribute's type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttributeShape {
    /// Attribute name.
    pub name: String,
    /// `S` (all our keys are strings).
    pub attribute_type: String,
}

/// A global secondary index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexShape {
    /// Index name.
    pub name: String,
    /// Its key schema.
    pub key_schema: Vec<KeyShape>,
    /// `ALL`.
    pub projection: String,
}

/// The table's shape, as data: serialisable to JSON for checks against `infra/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableShape {
    /// Attribute definitions of every key (table and index).
    pub attribute_definitions: Vec<AttributeShape>,
    /// The table's key schema.
    pub key_schema: Vec<KeyShape>,
    /// Global secondary indexes.
    pub global_secondary_indexes: Vec<IndexShape>,
    /// The TTL attribute.
    pub ttl_attribute: String,
    /// `PAY_PER_REQUEST`.
    pub billing_mode: String,
}

fn key(attribute: &str, key_type: &str) -> KeyShape {
    KeyShape {
        attribute: attribute.into(),
        key_type: key_type.into(),
    }
}

/// The state table: `pk`/`sk`, index `gsi1` on `gsi1pk`/`gsi1sk`, TTL on `expires_at`.
///
/// Item layout (`pk` | `sk`):
/// - registration: `REGISTRATIONS` | `<owner/name>` (of every manifest) or
///   `REGISTRATIONS` | `<owner/name>#<manifest path>` (of one manifest); its repository's
///   guard `REPO#<owner/name>` | `REGISTRATIONS` (a `version` every registration write bumps,
///   so the overlap check and the write are atomic)
/// - installation: `INSTALLATIONS` | `<id>`
/// - env spec: `ENV_SPECS` | `<name>`
/// - trigger binding: `TRIGGERS` | `<trigger_id>`, a copy at `REPO#<owner/name>` |
///   `TRIGGER#<trigger_id>` (the repository's listing), and for a `github` binding one copy
///   per GitHub event it lists at `REPO#<owner/name>` | `EVENT#<event>#TRIGGER#<trigger_id>`
///   (a delivery of `<event>` queries that prefix), all written in the same transaction;
///   migration markers `MIGRATIONS` | `REPO_TRIGGER_COPIES` and `REPO_TRIGGER_EVENT_COPIES`
/// - synced commit: `REPO#<owner/name>` | `REF#<ref>`
/// - agent: `REPO#<owner/name>` | `AGENT#<manifest path>`, indexed `PROJECT#<project>` | `AGENT#<name>`
/// - audit event: `AUDIT#<owner/name>#<manifest path>` | `V#<version, 20 digits>`
/// - webhook delivery: `DELIVERY#<id>` | `DELIVERY`, with `expires_at`
/// - dispatch: `DISPATCH#<idempotency key>` | `DISPATCH`
/// - skill repository: `SKILL_REPOS` | `<project>#<alias>`, and its copy keyed by repository
///   `SKILL_SOURCE#<owner/name, lower case>` | `<project>#<alias>`; the catalogue:
///   `CATALOGUE` | `CATALOGUE`
/// - the head reconcile last saw of a ref, with its `ETag`: `SEEN_HEAD#<owner/name>` | `<ref>`
/// - a pull request's preview of an agent: `REPO#<owner/name>` |
///   `PREVIEW#<pull request, 20 digits>#<manifest path>`, indexed `PROJECT#<project>` |
///   `PREVIEW#<name>` while it is active; its `preview-closed` events:
///   `PREVIEW_AUDIT#<owner/name>#<manifest path>` | `PR#<pull request, 20 digits>#V#<version, 20 digits>`
/// - a workflow: `REPO#<owner/name>` | `WORKFLOW#<name>`; a run: `WFRUN#<id>` | `RUN`, indexed
///   `RUNNING_WORKFLOW_RUNS` | `<id>` while it is `running`; a stage attempt's report:
///   `WFRUN#<id>` | `RESULT#<stage>` (attempt 1) or `RESULT#<stage>#<attempt>`
///
/// The small catalogues (registrations, installations, env specs, trigger bindings, skill
/// repositories) share one partition each so they can be listed with a Query; they are
/// written rarely and read by key.
/// No hot path lists a catalogue: a delivery reads only its repository's bindings of its
/// event, through a sort-key prefix query on the existing keys (no index needed).
pub fn table_definition() -> TableShape {
    let string = |name: &str| AttributeShape {
        name: name.into(),
        attribute_type: "S".into(),
    };
    TableShape {
        attribute_definitions: vec![string(PK), string(SK), string(GSI_PK), string(GSI_SK)],
        key_schema: vec![key(PK, "HASH"), key(SK, "RANGE")],
        global_secondary_indexes: vec![IndexShape {
            name: GSI_NAME.into(),
            key_schema: vec![key(GSI_PK, "HASH"), key(GSI_SK, "RANGE")],
            projection: "ALL".into(),
        }],
        ttl_attribute: TTL_ATTRIBUTE.into(),
        billing_mode: "PAY_PER_REQUEST".into(),
    }
}
