//! Which engine runs workflow runs (docs/reference.md §5.6, §13): the state store's own
//! (`state`, the default, what `serve` and the CLI on embedded stores use), or Step
//! Functions (`stepfunctions`, what the template sets), read once from the environment.

use crate::state_machine::{NameError, check_prefix};

/// `ASTROLIFT_WORKFLOW_ENGINE`'s default prefix of state machine names.
pub const DEFAULT_STATE_MACHINE_PREFIX: &str = "astrolift-";

/// The engine of workflow runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkflowEngine {
    /// Runs advanced by callbacks, their state in the state store.
    State,
    /// Each registered workflow a state machine, each run an execution.
    StepFunctions(StepFunctionsSettings),
}

/// What the Step Functions engine needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepFunctionsSettings {
    /// `ASTROLIFT_STAGE_QUEUE_URL`: where each stage's task sends its message.
    pub stage_queue_url: String,
    /// `ASTROLIFT_STATE_MACHINE_ROLE_ARN`: what the state machines run as.
    pub role_arn: String,
    /// `ASTROLIFT_STATE_MACHINE_PREFIX`: the start of every state machine's name.
    pub prefix: String,
}

/// Why the engine's settings are refused. Names the variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineSettingsError {
    #[error("ASTROLIFT_WORKFLOW_ENGINE is `{0}`: it is `state` or `stepfunctions`")]
    Unknown(String),
    #[error("ASTROLIFT_WORKFLOW_ENGINE=stepfunctions needs {0}")]
    Missing(&'static str),
    #[error("ASTROLIFT_STATE_MACHINE_PREFIX: {0}")]
    Prefix(#[from] NameError),
}

impl WorkflowEngine {
    /// From the environment; unset or empty is `state`.
    pub fn from_env() -> Result<Self, EngineSettingsError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// From `lookup` of each variable (the environment, or a test's map).
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, EngineSettingsError> {
        let value = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        match value("ASTROLIFT_WORKFLOW_ENGINE").as_deref() {
            None | Some("state") => Ok(WorkflowEngine::State),
            Some("stepfunctions") => {
                let required =
                    |name: &'static str| value(name).ok_or(EngineSettingsError::Missing(name));
                let prefix = value("ASTROLIFT_STATE_MACHINE_PREFIX")
                    .unwrap_or_else(|| DEFAULT_STATE_MACHINE_PREFIX.to_owned());
                check_prefix(&prefix)?;
                Ok(WorkflowEngine::StepFunctions(StepFunctionsSettings {
                    stage_queue_url: required("ASTROLIFT_STAGE_QUEUE_URL")?,
                    role_arn: required("ASTROLIFT_STATE_MACHINE_ROLE_ARN")?,
                    prefix,
                }))
            }
            Some(other) => Err(EngineSettingsError::Unknown(other.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn engine(vars: &[(&str, &str)]) -> Result<WorkflowEngine, EngineSettingsError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        WorkflowEngine::from_lookup(|name| vars.get(name).cloned())
    }

    #[test]
    fn unset_or_empty_is_the_state_engine() {
        assert_eq!(engine(&[]), Ok(WorkflowEngine::State));
        assert_eq!(
            engine(&[("ASTROLIFT_WORKFLOW_ENGINE", " ")]),
            Ok(WorkflowEngine::State)
        );
        assert_eq!(
            engine(&[("ASTROLIFT_WORKFLOW_ENGINE", "state")]),
            Ok(WorkflowEngine::State)
        );
    }

    #[test]
    fn step_functions_needs_its_queue_and_role_and_defaults_the_prefix() {
        let queue = ("ASTROLIFT_STAGE_QUEUE_URL", "https://sqs/stages");
        let role = ("ASTROLIFT_STATE_MACHINE_ROLE_ARN", "arn:aws:iam::1:role/r");
        let on = ("ASTROLIFT_WORKFLOW_ENGINE", "stepfunctions");
        assert_eq!(
            engine(&[on, role]),
            Err(EngineSettingsError::Missing("ASTROLIFT_STAGE_QUEUE_URL"))
        );
        assert_eq!(
            engine(&[on, queue]),
            Err(EngineSettingsError::Missing(
                "ASTROLIFT_STATE_MACHINE_ROLE_ARN"
            ))
        );
        let Ok(WorkflowEngine::StepFunctions(settings)) = engine(&[on, queue, role]) else {
            panic!("the Step Functions engine");
        };
        assert_eq!(settings.prefix, DEFAULT_STATE_MACHINE_PREFIX);
        assert!(matches!(
            engine(&[
                on,
                queue,
                role,
                ("ASTROLIFT_STATE_MACHINE_PREFIX", "bad prefix!")
            ]),
            Err(EngineSettingsError::Prefix(_))
        ));
    }

    #[test]
    fn another_engine_is_refused_by_name() {
        assert_eq!(
            engine(&[("ASTROLIFT_WORKFLOW_ENGINE", "airflow")]),
            Err(EngineSettingsError::Unknown("airflow".into()))
        );
    }
}
