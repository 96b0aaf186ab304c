//! `dynamodb:TABLE`: the AWS state store, one table (see [`table_definition`]).
//!
//! Records are stored as top-level attributes next to the key attributes. The record ↔ item
//! mapping goes through `serde_json::Value` (written here by hand because it is twenty lines
//! and saves a dependency); numbers become `N`, strings `S`, options `NULL` when absent.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, ConditionCheck, Delete, GlobalSecondaryIndex,
    KeySchemaElement, KeyType, Projection, ProjectionType, Put, ScalarAttributeType,
    TimeToLiveSpecification, TransactWriteItem,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Number, Value};

use super::change::{
    ApplyReport, ChangeSet, Chunk, Extra, TRANSACTION_MAX_BYTES, TRANSACTION_MAX_ITEMS, json_len,
};
use super::model::*;
use super::store::{StateCounters, StateStats, StateStore};
use super::table::{GSI_NAME, GSI_PK, GSI_SK, PK, SK, TTL_ATTRIBUTE, table_definition};
use crate::aws::{DYNAMODB, load_sdk_config, map_sdk_error};
use crate::location::check_table_name;
use crate::{BoxFuture, StoreError, StoreResult};

type Item = HashMap<String, AttributeValue>;

mod agents;
mod bindings;
mod configs;
mod deliveries;
mod dispatches;
mod env_specs;
mod installations;
mod jobs;
mod kept_requests;
mod layers;
mod previews;
mod registrations;
mod seen_heads;
mod skills;
mod tasks;
mod workflows;
mod workspaces;

/// The DynamoDB state store.
#[derive(Debug)]
pub struct DynamoStateStore {
    client: Client,
    table: String,
    counters: StateCounters,
    /// Set once the table is known to hold a repository copy of every binding
    /// (see [`DynamoStateStore::ensure_repository_trigger_copies`]).
    trigger_copies_ready: std::sync::atomic::AtomicBool,
    /// Set once the table is known to hold the per-event copies of every `github` binding
    /// (see [`DynamoStateStore::ensure_event_trigger_copies`]).
    event_copies_ready: std::sync::atomic::AtomicBool,
    /// Set once the table is known to hold the per-repository copy of every skill
    /// repository (see `dynamo/skills.rs`).
    skill_source_copies_ready: std::sync::atomic::AtomicBool,
}

// Key layout: see `table_definition`.
const REGISTRATIONS: &str = "REGISTRATIONS";
const INSTALLATIONS: &str = "INSTALLATIONS";
const ENV_SPECS: &str = "ENV_SPECS";
const TRIGGERS: &str = "TRIGGERS";

fn repo_pk(repository: &str) -> String {
    format!("REPO#{repository}")
}
/// The partition of project `project_id` in the project/name index `gsi1`.
fn project_index_pk(project_id: &str) -> String {
    format!("PROJECT#{project_id}")
}
fn agent_sk(manifest_path: &str) -> String {
    format!("AGENT#{manifest_path}")
}
fn audit_pk(repository: &str, manifest_path: &str) -> String {
    format!("AUDIT#{repository}#{manifest_path}")
}
fn audit_sk(version: u64) -> String {
    format!("V#{version:020}")
}
/// The sort key of a binding's copy in its repository's partition.
fn repo_trigger_sk(trigger_id: &str) -> String {
    format!("{REPO_TRIGGER_PREFIX}{trigger_id}")
}
const REPO_TRIGGER_PREFIX: &str = "TRIGGER#";
/// The sort keys of a `github` binding's copies in its repository's partition, one per event
/// it lists (`EVENT#issues#TRIGGER#<id>`): a delivery of `issues` queries
/// `EVENT#issues#TRIGGER#`. Event names are `[a-z0-9_]` ([`is_event_name`]), so the key
/// needs no escaping.
const EVENT_PREFIX: &str = "EVENT#";
const EVENT_TRIGGER_SEPARATOR: &str = "#TRIGGER#";
fn event_trigger_prefix(event: &str) -> String {
    format!("{EVENT_PREFIX}{event}{EVENT_TRIGGER_SEPARATOR}")
}
fn event_trigger_sk(event: &str, trigger_id: &str) -> String {
    format!("{}{trigger_id}", event_trigger_prefix(event))
}
/// `(event, trigger_id)` of an event copy's sort key.
fn parse_event_trigger_sk(sk: &str) -> Option<(&str, &str)> {
    sk.strip_prefix(EVENT_PREFIX)?
        .split_once(EVENT_TRIGGER_SEPARATOR)
}
/// The marker items written once every binding has its repository copy, and once every
/// `github` binding has its event copies.
const MIGRATIONS: &str = "MIGRATIONS";
const TRIGGER_INDEX_MIGRATION: &str = "REPO_TRIGGER_COPIES";
const EVENT_INDEX_MIGRATION: &str = "REPO_TRIGGER_EVENT_COPIES";
fn delivery_pk(id: &str) -> String {
    format!("DELIVERY#{id}")
}
fn dispatch_pk(key: &str) -> String {
    format!("DISPATCH#{key}")
}

fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

fn key(pk: impl Into<String>, sk: impl Into<String>) -> Item {
    HashMap::from([(PK.to_owned(), s(pk)), (SK.to_owned(), s(sk))])
}

fn to_attribute(value: Value) -> AttributeValue {
    match value {
        Value::Null => AttributeValue::Null(true),
        Value::Bool(b) => AttributeValue::Bool(b),
        Value::Number(number) => AttributeValue::N(number.to_string()),
        Value::String(string) => AttributeValue::S(string),
        Value::Array(values) => AttributeValue::L(values.into_iter().map(to_attribute).collect()),
        Value::Object(map) => {
            AttributeValue::M(map.into_iter().map(|(k, v)| (k, to_attribute(v))).collect())
        }
    }
}

fn corrupt(why: String) -> StoreError {
    StoreError::Backend {
        operation: "decode item".into(),
        message: why,
    }
}

fn from_attribute(value: &AttributeValue) -> StoreResult<Value> {
    Ok(match value {
        AttributeValue::Null(_) => Value::Null,
        AttributeValue::Bool(b) => Value::Bool(*b),
        AttributeValue::S(string) => Value::String(string.clone()),
        AttributeValue::N(text) => {
            let number = text
                .parse::<i64>()
                .map(Number::from)
                .or_else(|_| text.parse::<u64>().map(Number::from))
                .ok()
                .or_else(|| text.parse::<f64>().ok().and_then(Number::from_f64))
                .ok_or_else(|| corrupt(format!("number {text:?}")))?;
            Value::Number(number)
        }
        AttributeValue::L(values) => Value::Array(
            values
                .iter()
                .map(from_attribute)
                .collect::<StoreResult<_>>()?,
        ),
        AttributeValue::M(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), from_attribute(v)?)))
                .collect::<StoreResult<Map<_, _>>>()?,
        ),
        other => return Err(corrupt(format!("unexpected attribute type {other:?}"))),
    })
}

/// A record's attributes plus `keys`.
fn record_item<T: Serialize>(record: &T, keys: Item) -> StoreResult<Item> {
    let value = serde_json::to_value(record)
        .map_err(|err| StoreError::Invalid(format!("record does not serialize: {err}")))?;
    let Value::Object(fields) = value else {
        return Err(StoreError::Invalid("record is not an object".into()));
    };
    let mut item: Item = fields
        .into_iter()
        .map(|(k, v)| (k, to_attribute(v)))
        .collect();
    item.extend(keys);
    Ok(item)
}

/// The record of an item; key attributes are ignored by the record types.
fn item_record<T: DeserializeOwned>(item: &Item) -> StoreResult<T> {
    let fields = item
        .iter()
        .map(|(k, v)| Ok((k.clone(), from_attribute(v)?)))
        .collect::<StoreResult<Map<_, _>>>()?;
    serde_json::from_value(Value::Object(fields))
        .map_err(|err| corrupt(format!("stored record does not parse: {err}")))
}

fn agent_item(agent: &Agent) -> StoreResult<Item> {
    let mut keys = key(repo_pk(&agent.repository), agent_sk(&agent.manifest_path));
    keys.insert(GSI_PK.into(), s(project_index_pk(&agent.project_id)));
    keys.insert(GSI_SK.into(), s(format!("AGENT#{}", agent.name)));
    record_item(agent, keys)
}

impl DynamoStateStore {
    /// A store on `table` with credentials, region and endpoint from the environment.
    pub async fn from_env(table: &str) -> StoreResult<Self> {
        let sdk_config = load_sdk_config().await;
        Self::new(Client::new(&sdk_config), table)
    }

    /// A store on `table` with a ready client.
    pub fn new(client: Client, table: &str) -> StoreResult<Self> {
        check_table_name(table)?;
        Ok(DynamoStateStore {
            client,
            table: table.to_owned(),
            counters: StateCounters::default(),
            trigger_copies_ready: std::sync::atomic::AtomicBool::new(false),
            event_copies_ready: std::sync::atomic::AtomicBool::new(false),
            skill_source_copies_ready: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The SDK client (for tests that inspect raw items).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The table name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Creates the table from [`table_definition`] and enables its TTL (for tests and local
    /// set-up; production tables come from the SAM template). An existing table is fine.
    pub async fn create_table(&self) -> StoreResult<()> {
        let shape = table_definition();
        let key_element = |attribute: &str, key_type: &str| {
            KeySchemaElement::builder()
                .attribute_name(attribute)
                .key_type(KeyType::from(key_type))
                .build()
                .map_err(|err| StoreError::Invalid(err.to_string()))
        };
        let mut request = self
            .client
            .create_table()
            .table_name(&self.table)
            .billing_mode(BillingMode::from(shape.billing_mode.as_str()));
        for attribute in &shape.attribute_definitions {
            request = request.attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name(&attribute.name)
                    .attribute_type(ScalarAttributeType::from(attribute.attribute_type.as_str()))
                    .build()
                    .map_err(|err| StoreError::Invalid(err.to_string()))?,
            );
        }
        for element in &shape.key_schema {
            request = request.key_schema(key_element(&element.attribute, &element.key_type)?);
        }
        for index in &shape.global_secondary_indexes {
            let mut gsi = GlobalSecondaryIndex::builder()
                .index_name(&index.name)
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::from(index.projection.as_str()))
                        .build(),
                );
            for element in &index.key_schema {
                gsi = gsi.key_schema(key_element(&element.attribute, &element.key_type)?);
            }
            request = request.global_secondary_indexes(
                gsi.build()
                    .map_err(|err| StoreError::Invalid(err.to_string()))?,
            );
        }
        match request.send().await {
            Ok(_) => {}
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_resource_in_use_exception()) =>
            {
                return Ok(());
            }
            Err(err) => return Err(map_sdk_error(DYNAMODB, "CreateTable", err)),
        }
        self.client
            .update_time_to_live()
            .table_name(&self.table)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .attribute_name(&shape.ttl_attribute)
                    .enabled(true)
                    .build()
                    .map_err(|err| StoreError::Invalid(err.to_string()))?,
            )
            .send()
            .await
            .map_err(|err| map_sdk_error(DYNAMODB, "UpdateTimeToLive", err))?;
        Ok(())
    }

    /// The TTL attribute the table has enabled, if any.
    pub async fn ttl_attribute(&self) -> StoreResult<Option<String>> {
        let described = self
            .client
            .describe_time_to_live()
            .table_name(&self.table)
            .send()
            .await
            .map_err(|err| map_sdk_error(DYNAMODB, "DescribeTimeToLive", err))?;
        Ok(described
            .time_to_live_description()
            .and_then(|d| d.attribute_name())
            .map(str::to_owned))
    }

    async fn get<T: DeserializeOwned>(&self, key: Item) -> StoreResult<Option<T>> {
        self.counters.read();
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(|err| map_sdk_error(DYNAMODB, "GetItem", err))?;
        self.counters
            .read_records(u64::from(output.item().is_some()));
        output.item().map(item_record).transpose()
    }

    async fn put(&self, item: Item) -> StoreResult<()> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|err| map_sdk_error(DYNAMODB, "PutItem", err))?;
        self.counters.wrote(1);
        Ok(())
    }

    /// Deletes the item at `keys`; `Ok(false)` when there was none.
    async fn delete_returning(&self, keys: Item) -> StoreResult<bool> {
        let output = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(keys))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
            .send()
            .await
            .map_err(|err| map_sdk_error(DYNAMODB, "DeleteItem", err))?;
        let deleted = output.attributes().is_some_and(|a| !a.is_empty());
        self.counters.wrote(u64::from(deleted));
        Ok(deleted)
    }

    /// Every item of a partition (optionally only sort keys starting with `sk_prefix`), in
    /// sort-key order, following pagination.
    async fn query_partition<T: DeserializeOwned>(
        &self,
        pk: &str,
        sk_prefix: Option<&str>,
    ) -> StoreResult<Vec<T>> {
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .consistent_read(true)
            .expression_attribute_names("#pk", PK)
            .expression_attribute_values(":pk", s(pk));
        query = match sk_prefix {
            Some(prefix) => query
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                .expression_attribute_names("#sk", SK)
                .expression_attribute_values(":prefix", s(prefix)),
            None => query.key_condition_expression("#pk = :pk"),
        };
        self.query_all(query).await
    }

    /// The records at (`project_id`, `sort_key`) of the project/name index `gsi1`: the
    /// agents, or the active previews, of one name.
    async fn query_project_index<T: DeserializeOwned>(
        &self,
        project_id: &str,
        sort_key: String,
    ) -> StoreResult<Vec<T>> {
        self.query_index(&project_index_pk(project_id), Some(sort_key))
            .await
    }

    /// The records of the partition `index_pk` of the index `gsi1` (only those at
    /// `sort_key`, when given), in sort-key order: a project's agents or previews of one
    /// name, or the running workflow runs. Index reads are eventually consistent.
    async fn query_index<T: DeserializeOwned>(
        &self,
        index_pk: &str,
        sort_key: Option<String>,
    ) -> StoreResult<Vec<T>> {
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(GSI_NAME)
            .expression_attribute_names("#gpk", GSI_PK)
            .expression_attribute_values(":gpk", s(index_pk));
        query = match sort_key {
            Some(sort_key) => query
                .key_condition_expression("#gpk = :gpk AND #gsk = :gsk")
                .expression_attribute_names("#gsk", GSI_SK)
                .expression_attribute_values(":gsk", s(sort_key)),
            None => query.key_condition_expression("#gpk = :gpk"),
        };
        self.query_all(query).await
    }

    async fn query_all<T: DeserializeOwned>(
        &self,
        query: aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
    ) -> StoreResult<Vec<T>> {
        self.all_pages(|start| {
            let page = query.clone().set_exclusive_start_key(start);
            async move {
                let page = page
                    .send()
                    .await
                    .map_err(|err| map_sdk_error(DYNAMODB, "Query", err))?;
                Ok((page.items.unwrap_or_default(), page.last_evaluated_key))
            }
        })
        .await
    }

    /// Every record a Scan finds (an operator's listing: no partition holds what it reads).
    async fn scan_all<T: DeserializeOwned>(
        &self,
        scan: aws_sdk_dynamodb::operation::scan::builders::ScanFluentBuilder,
    ) -> StoreResult<Vec<T>> {
        self.all_pages(|start| {
            let page = scan.clone().set_exclusive_start_key(start);
            async move {
                let page = page
                    .send()
                    .await
                    .map_err(|err| map_sdk_error(DYNAMODB, "Scan", err))?;
                Ok((page.items.unwrap_or_default(), page.last_evaluated_key))
            }
        })
        .await
    }

    /// The records of every page `fetch` returns (the page's items and the key to go on
    /// from), page after page until a page has no key to go on from.
    async fn all_pages<T, Fetch, Page>(&self, mut fetch: Fetch) -> StoreResult<Vec<T>>
    where
        T: DeserializeOwned,
        Fetch: FnMut(Option<Item>) -> Page,
        Page: std::future::Future<Output = StoreResult<(Vec<Item>, Option<Item>)>>,
    {
        let mut records = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            self.counters.read();
            let (items, last) = fetch(start.take()).await?;
            self.counters.read_records(items.len() as u64);
            for item in &items {
                records.push(item_record(item)?);
            }
            match last {
                Some(last) if !last.is_empty() => start = Some(last),
                _ => return Ok(records),
            }
        }
    }

    /// The write requests of one chunk, with a description of each for error messages.
    fn chunk_items(
        &self,
        changes: &ChangeSet,
        chunk: &Chunk,
        events: &[EventWrites<'_>],
    ) -> StoreResult<(Vec<TransactWriteItem>, Vec<String>)> {
        let mut writes = Vec::new();
        let mut names = Vec::new();
        for (change, events) in changes.agents[chunk.agents.clone()]
            .iter()
            .zip(&events[chunk.agents.clone()])
        {
            let agent = &change.agent;
            let mut put = Put::builder()
                .table_name(&self.table)
                .set_item(Some(agent_item(agent)?));
            put = match change.expected_version {
                None => put
                    .condition_expression("attribute_not_exists(#pk)")
                    .expression_attribute_names("#pk", PK),
                Some(version) => put
                    .condition_expression("#v = :v")
                    .expression_attribute_names("#v", "version")
                    .expression_attribute_values(":v", n(version)),
            };
            writes.push(
                TransactWriteItem::builder()
                    .put(build(put.build())?)
                    .build(),
            );
            names.push(format!(
                "agent {} (expected version {:?})",
                agent.key(),
                change.expected_version
            ));

            let audit = &change.audit;
            let audit_item = record_item(
                audit,
                key(
                    audit_pk(&audit.repository, &audit.manifest_path),
                    audit_sk(audit.version),
                ),
            )?;
            let put = Put::builder()
                .table_name(&self.table)
                .set_item(Some(audit_item))
                .condition_expression("attribute_not_exists(#pk)")
                .expression_attribute_names("#pk", PK);
            writes.push(
                TransactWriteItem::builder()
                    .put(build(put.build())?)
                    .build(),
            );
            names.push(format!("audit event {} of {}", audit.version, agent.key()));

            // Each binding's items are written together: by id (`TRIGGERS`), its copy in its
            // repository's partition (the repository's listing)
            // and, for a `github` binding, a copy per event it lists.
            let repository = repo_pk(&changes.repository);
            for binding in &change.put_bindings {
                for keys in binding_keys(&changes.repository, &binding.trigger_id) {
                    writes.push(self.put_item(record_item(binding, keys)?)?);
                    names.push(format!("trigger binding {}", binding.trigger_id));
                }
            }
            for trigger_id in &change.delete_bindings {
                for keys in binding_keys(&changes.repository, trigger_id) {
                    writes.push(self.delete_item(keys)?);
                    names.push(format!("trigger binding {trigger_id} (delete)"));
                }
            }
            for (event, binding) in &events.puts {
                let keys = key(&repository, event_trigger_sk(event, &binding.trigger_id));
                writes.push(self.put_item(record_item(*binding, keys)?)?);
                names.push(format!("trigger binding {} ({event})", binding.trigger_id));
            }
            for (event, trigger_id) in &events.deletes {
                let keys = key(&repository, event_trigger_sk(event, trigger_id));
                writes.push(self.delete_item(keys)?);
                names.push(format!("trigger binding {trigger_id} ({event}, delete)"));
            }
        }
        if let (true, Some(update)) = (chunk.synced, &changes.synced) {
            let commit = &update.commit;
            let item = record_item(
                commit,
                key(
                    repo_pk(&commit.repository),
                    format!("REF#{}", commit.ref_name),
                ),
            )?;
            let mut put = Put::builder()
                .table_name(&self.table)
                .set_item(Some(item))
                .expression_attribute_names("#pk", PK);
            put = match &update.expected_previous {
                None => put.condition_expression("attribute_not_exists(#pk)"),
                Some(previous) => put
                    .condition_expression("attribute_exists(#pk) AND #c = :c")
                    .expression_attribute_names("#c", "commit")
                    .expression_attribute_values(":c", s(previous)),
            };
            writes.push(
                TransactWriteItem::builder()
                    .put(build(put.build())?)
                    .build(),
            );
            names.push(format!(
                "synced commit of {}:{} (expected {:?})",
                commit.repository, commit.ref_name, update.expected_previous
            ));
        }
        Ok((writes, names))
    }

    async fn transact(&self, writes: Vec<TransactWriteItem>, names: &[String]) -> StoreResult<()> {
        let Some(cancelled) = self.transact_conditionally(writes).await? else {
            return Ok(());
        };
        let failed: Vec<&str> = cancelled
            .failed
            .iter()
            .zip(names)
            .filter(|(failed, _)| **failed)
            .map(|(_, name)| name.as_str())
            .collect();
        Err(if failed.is_empty() {
            StoreError::Conflict(format!("a condition failed: {}", cancelled.message))
        } else {
            StoreError::Conflict(format!("condition failed for {}", failed.join(", ")))
        })
    }

    /// Runs a transaction; `Ok(None)` when it was written, the items whose condition failed
    /// when one did (nothing written), an error for any other failure.
    async fn transact_conditionally(
        &self,
        writes: Vec<TransactWriteItem>,
    ) -> StoreResult<Option<CancelledTransaction>> {
        let count = writes.len() as u64;
        let sent = self
            .client
            .transact_write_items()
            .set_transact_items(Some(writes))
            .send()
            .await;
        let err = match sent {
            Ok(_) => {
                self.counters.wrote(count);
                self.counters.transaction();
                return Ok(None);
            }
            Err(err) => err,
        };
        let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) =
            err.as_service_error()
        else {
            return Err(map_sdk_error(DYNAMODB, "TransactWriteItems", err));
        };
        let failed: Vec<bool> = cancelled
            .cancellation_reasons()
            .iter()
            .map(|reason| reason.code() == Some("ConditionalCheckFailed"))
            .collect();
        let message = cancelled.message().unwrap_or_default().to_owned();
        if failed.contains(&true) || message.contains("ConditionalCheckFailed") {
            return Ok(Some(CancelledTransaction { failed, message }));
        }
        Err(StoreError::Unavailable(format!(
            "TransactWriteItems cancelled: {message}"
        )))
    }

    /// A conditional put; `Ok(false)` when the condition failed.
    pub(super) async fn put_if(
        &self,
        item: Item,
        condition: &str,
        values: &[(&str, AttributeValue)],
    ) -> StoreResult<bool> {
        let mut request = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(condition);
        for (placeholder, name) in condition_names(condition) {
            request = request.expression_attribute_names(placeholder, name);
        }
        for (name, value) in values {
            request = request.expression_attribute_values(*name, value.clone());
        }
        let written = conditional_write("PutItem", request.send().await)?;
        if written {
            self.counters.wrote(1);
        }
        Ok(written)
    }
}

/// A transaction cancelled because a condition failed.
struct CancelledTransaction {
    /// Per item, in the order written: whether its condition failed (empty when DynamoDB
    /// gave no reasons).
    failed: Vec<bool>,
    message: String,
}

/// Whether a conditional write took effect: `Ok(false)` when its condition failed (no
/// write), the mapped error for any other failure.
pub(super) fn conditional_write<T, E, R>(
    operation: &str,
    result: Result<T, aws_sdk_dynamodb::error::SdkError<E, R>>,
) -> StoreResult<bool>
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + 'static,
{
    match result {
        Ok(_) => Ok(true),
        Err(err)
            if err.as_service_error().and_then(|e| e.code())
                == Some("ConditionalCheckFailedException") =>
        {
            Ok(false)
        }
        Err(err) => Err(map_sdk_error(DYNAMODB, operation, err)),
    }
}

/// The event copies one agent change puts and deletes (see [`plan_event_writes`]).
#[derive(Debug, Default)]
struct EventWrites<'c> {
    /// `(event, binding)`: a copy of `binding` under `event`.
    puts: Vec<(String, &'c TriggerBinding)>,
    /// `(event, trigger id)`: a copy to delete.
    deletes: Vec<(String, String)>,
}

impl EventWrites<'_> {
    fn extra(&self) -> Extra {
        Extra {
            items: self.puts.len() + self.deletes.len(),
            bytes: self
                .puts
                .iter()
                .map(|(_, binding)| json_len(*binding))
                .sum(),
        }
    }
}

/// The event copies each change of `changes` writes, given the events under which each
/// binding of the repository is stored now (`stored`, by trigger id): a put binding gets a
/// copy per event it lists and loses its copies under events it no longer lists; a deleted
/// binding loses all of its copies. Derived from what is stored, not from what the plan
/// read, so a stale copy (a crash between two chunks cannot leave one, but an older
/// version's write can) is removed by the next change of its binding.
fn plan_event_writes<'c>(
    changes: &'c ChangeSet,
    stored: &HashMap<String, Vec<String>>,
) -> Vec<EventWrites<'c>> {
    let stored_events = |trigger_id: &str| stored.get(trigger_id).into_iter().flatten();
    changes
        .agents
        .iter()
        .map(|change| {
            let mut writes = EventWrites::default();
            for binding in &change.put_bindings {
                let events = binding.event_names();
                for old in stored_events(&binding.trigger_id).filter(|old| !events.contains(old)) {
                    writes
                        .deletes
                        .push((old.clone(), binding.trigger_id.clone()));
                }
                writes
                    .puts
                    .extend(events.into_iter().map(|event| (event, binding)));
            }
            for trigger_id in &change.delete_bindings {
                for old in stored_events(trigger_id) {
                    writes.deletes.push((old.clone(), trigger_id.clone()));
                }
            }
            writes
        })
        .collect()
}

/// An item's sort key alone (for keys-only queries).
#[derive(serde::Deserialize)]
struct SortKey {
    sk: String,
}

/// The two keys of a binding: by id, and its copy under its repository.
fn binding_keys(repository: &str, trigger_id: &str) -> [Item; 2] {
    [
        key(TRIGGERS, trigger_id),
        key(repo_pk(repository), repo_trigger_sk(trigger_id)),
    ]
}

impl DynamoStateStore {
    /// Backfill on first read, once per table: bindings written before bindings had a copy in
    /// their repository's partition get one, then a marker item records that the table is
    /// migrated (later processes read the marker once and skip the scan). Each copy is written
    /// in a transaction conditional on its binding still existing with the same snapshot, so a
    /// binding deleted or replaced meanwhile is not resurrected. Idempotent: concurrent
    /// backfills write the same items. A compatibility shim: when it can go is in
    /// docs/operations.md, "Compatibility shims".
    async fn ensure_repository_trigger_copies(&self) -> StoreResult<()> {
        use std::sync::atomic::Ordering;
        if self.trigger_copies_ready.load(Ordering::Acquire) {
            return Ok(());
        }
        let marker: Option<Value> = self.get(key(MIGRATIONS, TRIGGER_INDEX_MIGRATION)).await?;
        if marker.is_none() {
            let bindings: Vec<TriggerBinding> = self.query_partition(TRIGGERS, None).await?;
            for binding in &bindings {
                self.copy_binding_to_repository(binding).await?;
            }
            let mut item = key(MIGRATIONS, TRIGGER_INDEX_MIGRATION);
            item.insert("copied".into(), n(bindings.len()));
            self.put(item).await?;
        }
        self.trigger_copies_ready.store(true, Ordering::Release);
        Ok(())
    }

    /// The events under which each binding of `repository` has a copy, by trigger id: one
    /// keys-only query of the repository's event copies.
    async fn stored_event_copies(
        &self,
        repository: &str,
    ) -> StoreResult<HashMap<String, Vec<String>>> {
        let query = self
            .client
            .query()
            .table_name(&self.table)
            .consistent_read(true)
            .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
            .projection_expression("#sk")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":pk", s(repo_pk(repository)))
            .expression_attribute_values(":prefix", s(EVENT_PREFIX));
        let keys: Vec<SortKey> = self.query_all(query).await?;
        let mut stored: HashMap<String, Vec<String>> = HashMap::new();
        for key in &keys {
            if let Some((event, trigger_id)) = parse_event_trigger_sk(&key.sk) {
                stored
                    .entry(trigger_id.to_owned())
                    .or_default()
                    .push(event.to_owned());
            }
        }
        Ok(stored)
    }

    /// Backfill on first read by event, once per table: `github` bindings written before
    /// bindings had per-event copies get them, then a marker item records that the table is
    /// migrated. As for [`Self::ensure_repository_trigger_copies`], each binding's copies are
    /// written conditional on the binding being unchanged and on no copy existing, so a
    /// binding replaced or deleted meanwhile is not resurrected. Deleting the marker item
    /// runs the backfill again (idempotent), e.g. after an older version wrote bindings
    /// during a rolling update. A compatibility shim: when it can go is in
    /// docs/operations.md, "Compatibility shims".
    async fn ensure_event_trigger_copies(&self) -> StoreResult<()> {
        if self.event_copies_known() {
            return Ok(());
        }
        if !self.event_copies_migrated().await? {
            let bindings: Vec<TriggerBinding> = self.query_partition(TRIGGERS, None).await?;
            let mut copied = 0usize;
            for binding in &bindings {
                copied += self.copy_binding_to_events(binding).await?;
            }
            let mut item = key(MIGRATIONS, EVENT_INDEX_MIGRATION);
            item.insert("copied".into(), n(copied));
            self.put(item).await?;
        }
        self.event_copies_ready
            .store(true, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// Whether this process knows the table holds every event copy.
    fn event_copies_known(&self) -> bool {
        self.event_copies_ready
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// Reads the event-copy migration marker; remembers a present one.
    async fn event_copies_migrated(&self) -> StoreResult<bool> {
        let marker: Option<Value> = self.get(key(MIGRATIONS, EVENT_INDEX_MIGRATION)).await?;
        if marker.is_some() {
            self.event_copies_ready
                .store(true, std::sync::atomic::Ordering::Release);
        }
        Ok(marker.is_some())
    }

    /// Writes the event copies of one binding (in transactions of at most 100 items, each
    /// with the check that the binding is unchanged); returns the copies written.
    async fn copy_binding_to_events(&self, binding: &TriggerBinding) -> StoreResult<usize> {
        let events = binding.event_names();
        let mut copied = 0;
        for group in events.chunks(TRANSACTION_MAX_ITEMS - 1) {
            let mut writes = vec![self.unchanged_binding_check(binding)?];
            let mut names = vec![format!(
                "trigger binding {} (unchanged)",
                binding.trigger_id
            )];
            for event in group {
                let keys = key(
                    repo_pk(&binding.repository),
                    event_trigger_sk(event, &binding.trigger_id),
                );
                writes.push(self.put_if_absent(record_item(binding, keys)?)?);
                names.push(format!("trigger binding {} ({event})", binding.trigger_id));
            }
            match self.transact(writes, &names).await {
                Ok(()) => copied += group.len(),
                // Changed or deleted since the scan: its writer wrote (or deleted) the copies.
                Err(StoreError::Conflict(_)) => return Ok(copied),
                Err(error) => return Err(error),
            }
        }
        Ok(copied)
    }

    /// A transaction's check that `binding` is stored by id with its snapshot.
    fn unchanged_binding_check(&self, binding: &TriggerBinding) -> StoreResult<TransactWriteItem> {
        let check = aws_sdk_dynamodb::types::ConditionCheck::builder()
            .table_name(&self.table)
            .set_key(Some(key(TRIGGERS, &binding.trigger_id)))
            .condition_expression("#h = :h")
            .expression_attribute_names("#h", "snapshot_hash")
            .expression_attribute_values(":h", s(&binding.snapshot_hash));
        Ok(TransactWriteItem::builder()
            .condition_check(build(check.build())?)
            .build())
    }

    /// A transaction's unconditional put of `item`.
    fn put_item(&self, item: Item) -> StoreResult<TransactWriteItem> {
        let put = Put::builder().table_name(&self.table).set_item(Some(item));
        Ok(TransactWriteItem::builder()
            .put(build(put.build())?)
            .build())
    }

    /// A transaction's delete of the item at `keys`.
    fn delete_item(&self, keys: Item) -> StoreResult<TransactWriteItem> {
        let delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(keys));
        Ok(TransactWriteItem::builder()
            .delete(build(delete.build())?)
            .build())
    }

    /// A transaction's put of `item` where no item with its key exists.
    fn put_if_absent(&self, item: Item) -> StoreResult<TransactWriteItem> {
        self.transact_put_if(item, "attribute_not_exists(#pk)", &[])
    }

    /// [`Self::put_if`] as one item of a transaction.
    pub(super) fn transact_put_if(
        &self,
        item: Item,
        condition: &str,
        values: &[(&str, AttributeValue)],
    ) -> StoreResult<TransactWriteItem> {
        let mut put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(condition);
        for (placeholder, name) in condition_names(condition) {
            put = put.expression_attribute_names(placeholder, name);
        }
        for (name, value) in values {
            put = put.expression_attribute_values(*name, value.clone());
        }
        Ok(TransactWriteItem::builder()
            .put(build(put.build())?)
            .build())
    }

    async fn copy_binding_to_repository(&self, binding: &TriggerBinding) -> StoreResult<()> {
        let [_, in_repository] = binding_keys(&binding.repository, &binding.trigger_id);
        // Only where no copy exists: a writer that replaced the binding since the scan wrote
        // the current copy, which this stale record must not overwrite.
        let writes = vec![
            self.unchanged_binding_check(binding)?,
            self.put_if_absent(record_item(binding, in_repository)?)?,
        ];
        let names = [
            format!("trigger binding {} (unchanged)", binding.trigger_id),
            format!("trigger binding {} (repository copy)", binding.trigger_id),
        ];
        match self.transact(writes, &names).await {
            // Changed or deleted since the scan: its writer wrote (or deleted) both items.
            Ok(()) | Err(StoreError::Conflict(_)) => Ok(()),
            Err(error) => Err(error),
        }
    }
}

/// The sort key of a registration in the `REGISTRATIONS` partition: `<owner/name>` for the
/// registration of every manifest (the key a repository's single registration always had),
/// `<owner/name>#<manifest path>` for one manifest. Repository names never hold `#`.
fn registration_sk(repository: &str, manifest_path: Option<&str>) -> String {
    match manifest_path {
        Some(path) => format!("{repository}#{path}"),
        None => repository.to_owned(),
    }
}
/// The per-repository item whose `version` every registration write bumps, so the overlap
/// check (a read of the repository's registrations) and the write are one atomic step.
const REGISTRATIONS_GUARD_SK: &str = "REGISTRATIONS";
const MAX_REGISTRATION_ATTEMPTS: usize = 3;

/// The condition that the registrations guard is still at `version` (`None`: absent), as a
/// condition expression, its names and its values.
/// The attribute names a condition of [`DynamoStateStore::put_if`] may use: `#pk` always
/// (DynamoDB refuses a name the expression does not use, and every condition names the key),
/// `#e` (the TTL attribute) and `#v` (`version`) when it uses them.
fn condition_names(condition: &str) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
    [("#pk", PK), ("#e", TTL_ATTRIBUTE), ("#v", "version")]
        .into_iter()
        .filter(move |(placeholder, _)| *placeholder == "#pk" || condition.contains(placeholder))
}

fn guard_unchanged(
    version: Option<u64>,
) -> (
    &'static str,
    HashMap<String, String>,
    Option<HashMap<String, AttributeValue>>,
) {
    match version {
        Some(version) => (
            "#v = :v",
            HashMap::from([("#v".to_owned(), "version".to_owned())]),
            Some(HashMap::from([(":v".to_owned(), n(version))])),
        ),
        None => (
            "attribute_not_exists(#pk)",
            HashMap::from([("#pk".to_owned(), PK.to_owned())]),
            None,
        ),
    }
}

/// A registration item with its sort key (which tells a migrated item from a legacy one).
#[derive(serde::Deserialize)]
struct StoredRegistration {
    sk: String,
    #[serde(flatten)]
    registration: RepoRegistration,
}

impl DynamoStateStore {
    /// The key of `repository`'s registrations guard and its version (`None`: no guard yet).
    async fn registrations_guard(&self, repository: &str) -> StoreResult<(Item, Option<u64>)> {
        let guard_key = key(repo_pk(repository), REGISTRATIONS_GUARD_SK);
        let guard: Option<Value> = self.get(guard_key.clone()).await?;
        let version = guard
            .as_ref()
            .and_then(|g| g.get("version"))
            .and_then(Value::as_u64);
        Ok((guard_key, version))
    }

    /// The registration of every manifest of `repository`. Migration: a registration written
    /// when a repository held one is already at this key, but may carry the `manifest_path`
    /// it was registered with, which was never read (every manifest was applied). It is read
    /// as covering every manifest, which keeps that behaviour, and rewritten without the
    /// path (conditional on the item being unchanged, so a concurrent write wins). A
    /// compatibility shim: when it can go is in docs/operations.md, "Compatibility shims".
    async fn get_whole_registration(
        &self,
        repository: &str,
    ) -> StoreResult<Option<RepoRegistration>> {
        let key = key(REGISTRATIONS, registration_sk(repository, None));
        let Some(mut registration) = self.get::<RepoRegistration>(key.clone()).await? else {
            return Ok(None);
        };
        if let Some(legacy_path) = registration.manifest_path.take() {
            tracing::warn!(
                repository,
                manifest_path = %legacy_path,
                "migrating a registration written before per-manifest registrations: it covers every manifest, as it always did; re-register with --manifest-path to narrow it"
            );
            let rewritten = self
                .client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(record_item(&registration, key)?))
                .condition_expression("#m = :m")
                .expression_attribute_names("#m", "manifest_path")
                .expression_attribute_values(":m", s(legacy_path))
                .send()
                .await;
            match rewritten {
                Ok(_) => self.counters.wrote(1),
                // Rewritten or replaced meanwhile: that writer's item stands.
                Err(err)
                    if err
                        .as_service_error()
                        .is_some_and(|e| e.is_conditional_check_failed_exception()) => {}
                Err(err) => return Err(map_sdk_error(DYNAMODB, "PutItem", err)),
            }
        }
        Ok(Some(registration))
    }

    async fn registrations_of(&self, repository: &str) -> StoreResult<Vec<RepoRegistration>> {
        let mut registrations: Vec<RepoRegistration> = self
            .get_whole_registration(repository)
            .await?
            .into_iter()
            .collect();
        let prefix = format!("{repository}#");
        registrations.extend(
            self.query_partition::<RepoRegistration>(REGISTRATIONS, Some(&prefix))
                .await?,
        );
        Ok(registrations)
    }

    /// One attempt of `put_registration`: read the guard and the registrations, check, then
    /// write the registration and the bumped guard in one transaction conditional on the
    /// guard being unchanged.
    async fn try_put_registration(&self, registration: &RepoRegistration) -> StoreResult<()> {
        let (guard_key, version) = self.registrations_guard(&registration.repository).await?;
        let existing = self.registrations_of(&registration.repository).await?;
        refuse_overlap(&existing, registration)?;
        let mut guard_item = guard_key;
        guard_item.insert("version".into(), n(version.map_or(1, |v| v + 1)));
        let (condition, names, values) = guard_unchanged(version);
        let guard_put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(guard_item))
            .condition_expression(condition)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(values);
        let sk = registration_sk(
            &registration.repository,
            registration.manifest_path.as_deref(),
        );
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(record_item(registration, key(REGISTRATIONS, sk))?));
        let writes = vec![
            TransactWriteItem::builder()
                .put(build(guard_put.build())?)
                .build(),
            TransactWriteItem::builder()
                .put(build(put.build())?)
                .build(),
        ];
        let names = [
            format!(
                "registrations of {} (unchanged since read)",
                registration.repository
            ),
            format!("registration of {}", registration.scope()),
        ];
        self.transact(writes, &names).await
    }

    /// `record_last_sync`: the registration as read, with `last_sync`, written back in one
    /// transaction conditional on the repository's registrations being unchanged since read
    /// (no `put_registration` bumped the guard) and on the item still existing (no delete):
    /// either failing writes nothing.
    async fn try_record_last_sync(
        &self,
        repository: &str,
        manifest_path: Option<&str>,
        last_sync: &LastSync,
    ) -> StoreResult<bool> {
        let (guard_key, version) = self.registrations_guard(repository).await?;
        let item_key = key(REGISTRATIONS, registration_sk(repository, manifest_path));
        let Some(mut registration) = self.get::<RepoRegistration>(item_key.clone()).await? else {
            return Ok(false);
        };
        registration.last_sync = Some(last_sync.clone());
        let (condition, names, values) = guard_unchanged(version);
        let check = ConditionCheck::builder()
            .table_name(&self.table)
            .set_key(Some(guard_key))
            .condition_expression(condition)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(values);
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(record_item(&registration, item_key)?))
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#pk", PK);
        let writes = vec![
            TransactWriteItem::builder()
                .condition_check(build(check.build())?)
                .build(),
            TransactWriteItem::builder()
                .put(build(put.build())?)
                .build(),
        ];
        let names = [
            format!("registrations of {repository} (unchanged since read)"),
            format!("registration of {}", registration.scope()),
        ];
        match self.transact(writes, &names).await {
            Ok(()) => Ok(true),
            Err(StoreError::Conflict(_)) => Ok(false),
            Err(error) => Err(error),
        }
    }
}

/// Unwraps a builder result (only missing required fields, which we always set).
fn build<T>(built: Result<T, aws_sdk_dynamodb::error::BuildError>) -> StoreResult<T> {
    built.map_err(|err| StoreError::Invalid(format!("building a DynamoDB request: {err}")))
}

impl StateStore for DynamoStateStore {
    fn stats(&self) -> StateStats {
        self.counters.snapshot()
    }

    fn location(&self) -> String {
        format!("dynamodb:{}", self.table)
    }

    fn workflows(&self) -> &dyn super::workflows::WorkflowStore {
        self
    }

    fn workspaces(&self) -> &dyn super::workspaces::WorkspaceStore {
        self
    }

    fn layers(&self) -> &dyn super::layers::LayerStore {
        self
    }

    fn config_packages(&self) -> &dyn super::configs::ConfigPackageStore {
        self
    }

    fn tasks(&self) -> &dyn super::tasks::TaskStore {
        self
    }

    fn skills(&self) -> &dyn super::skills::SkillSourceStore {
        self
    }

    fn jobs(&self) -> &dyn super::jobs::JobStore {
        self
    }

    fn seen_heads(&self) -> &dyn super::seen_heads::SeenHeadStore {
        self
    }

    fn previews(&self) -> &dyn super::previews::PreviewStore {
        self
    }

    fn kept_requests(&self) -> &dyn super::kept_requests::KeptRequestStore {
        self
    }
}
