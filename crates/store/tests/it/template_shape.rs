//! One table shape: the DynamoDB table in `infra/template.yaml` (the SAM template that
//! production deploys) must be exactly `table_definition()`, the shape the code uses.

use std::collections::BTreeMap;

use astrolift_store::state::{AttributeShape, IndexShape, KeyShape, TableShape, table_definition};
use serde::Deserialize;

/// `infra/template.yaml`, found from the crate directory `cargo test` runs in (read at run
/// time, so a test binary built in another checkout still reads this one's template).
fn template_path() -> std::path::PathBuf {
    let crate_dir = std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(
        || env!("CARGO_MANIFEST_DIR").into(),
        std::path::PathBuf::from,
    );
    crate_dir.join("../../infra/template.yaml")
}

/// Only what this test reads; every other key of the template is ignored.
#[derive(Debug, Deserialize)]
struct Template {
    #[serde(rename = "Resources")]
    resources: BTreeMap<String, Resource>,
}

#[derive(Debug, Deserialize)]
struct Resource {
    #[serde(rename = "Type")]
    kind: String,
    #[serde(rename = "Properties", default)]
    properties: serde_json::Value,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct TableProperties {
    billing_mode: String,
    attribute_definitions: Vec<AttributeDefinition>,
    key_schema: Vec<KeySchemaElement>,
    #[serde(default)]
    global_secondary_indexes: Vec<GlobalSecondaryIndex>,
    time_to_live_specification: TimeToLive,
    point_in_time_recovery_specification: PointInTimeRecovery,
    #[serde(rename = "SSESpecification")]
    sse_specification: Sse,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct AttributeDefinition {
    attribute_name: String,
    attribute_type: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct KeySchemaElement {
    attribute_name: String,
    key_type: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct GlobalSecondaryIndex {
    index_name: String,
    key_schema: Vec<KeySchemaElement>,
    projection: Projection,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Projection {
    projection_type: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct TimeToLive {
    attribute_name: String,
    enabled: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct PointInTimeRecovery {
    point_in_time_recovery_enabled: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Sse {
    #[serde(rename = "SSEEnabled")]
    sse_enabled: bool,
}

fn keys(schema: Vec<KeySchemaElement>) -> Vec<KeyShape> {
    schema
        .into_iter()
        .map(|k| KeyShape {
            attribute: k.attribute_name,
            key_type: k.key_type,
        })
        .collect()
}

impl TableProperties {
    fn shape(self) -> TableShape {
        TableShape {
            attribute_definitions: self
                .attribute_definitions
                .into_iter()
                .map(|a| AttributeShape {
                    name: a.attribute_name,
                    attribute_type: a.attribute_type,
                })
                .collect(),
            key_schema: keys(self.key_schema),
            global_secondary_indexes: self
                .global_secondary_indexes
                .into_iter()
                .map(|index| IndexShape {
                    name: index.index_name,
                    key_schema: keys(index.key_schema),
                    projection: index.projection.projection_type,
                })
                .collect(),
            ttl_attribute: self.time_to_live_specification.attribute_name,
            billing_mode: self.billing_mode,
        }
    }
}

/// The template's only DynamoDB table.
fn template_table() -> TableProperties {
    let path = template_path();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("read {}: {err}", path.display()));
    let template: Template = serde_saphyr::from_str(&text).unwrap();
    let mut tables = template
        .resources
        .into_iter()
        .filter(|(_, resource)| resource.kind == "AWS::DynamoDB::Table");
    let (name, table) = tables.next().expect("infra/template.yaml has a table");
    assert!(
        tables.next().is_none(),
        "one table only, found {name} and more"
    );
    serde_json::from_value(table.properties).unwrap()
}

#[test]
fn template_table_is_the_code_table() {
    let table = template_table();
    assert!(table.time_to_live_specification.enabled, "TTL is enabled");
    assert!(
        table
            .point_in_time_recovery_specification
            .point_in_time_recovery_enabled,
        "point-in-time recovery is enabled"
    );
    assert!(table.sse_specification.sse_enabled, "encrypted at rest");
    assert_eq!(table.shape(), table_definition());
}
