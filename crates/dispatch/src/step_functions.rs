//! The Step Functions engine's calls (docs/reference.md §5.6, DESIGN §24): a registered
//! workflow's state machine, its executions, and the task-token results that drive them.
//! The definition itself is [`crate::state_machine`]'s pure compile; this module only
//! talks to the service, through the AWS SDK.
//!
//! Idempotency, whatever the service answers to a repeat:
//! - a state machine's name carries its content hash, so one name is one definition:
//!   [`StepFunctions::put_state_machine`] of a name that exists returns that machine and
//!   writes nothing (a changed workflow is a new machine; the old one is deleted once idle,
//!   [`StepFunctions::delete_if_idle`]);
//! - an execution is named by the run id, so [`StepFunctions::start_execution`] of a run that
//!   started already returns that execution;
//! - a task token that is no longer waiting (answered, timed out, its execution stopped) is
//!   [`TaskAnswer::Stale`]: a repeated or late callback changes nothing.

use aws_sdk_sfn::error::ProvideErrorMetadata;
use aws_sdk_sfn::types::{ExecutionStatus, StateMachineType};
use serde_json::Value;

use astrolift_store::describe_sdk_error;

/// Why a Step Functions call failed.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The service refused or could not be reached; the text names the operation.
    #[error("{0}")]
    Call(String),
    /// An answer without a field it always has.
    #[error("Step Functions {operation} answered without {field}")]
    Incomplete {
        operation: &'static str,
        field: &'static str,
    },
}

/// What became of a task result sent for a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskAnswer {
    /// The waiting task took it.
    Taken,
    /// No task waits on the token any more (answered, timed out, or its execution ended).
    Stale,
}

/// An execution's status as the service reports it: `RUNNING`, `SUCCEEDED`, `FAILED`,
/// `TIMED_OUT`, `ABORTED` (or another the service adds).
pub type ExecutionState = String;

/// The Step Functions client of one deployment: the role its state machines run as.
#[derive(Debug, Clone)]
pub struct StepFunctions {
    client: aws_sdk_sfn::Client,
    role_arn: String,
}

impl StepFunctions {
    pub fn new(client: aws_sdk_sfn::Client, role_arn: impl Into<String>) -> Self {
        Self {
            client,
            role_arn: role_arn.into(),
        }
    }

    /// A client from the standard AWS configuration (`AWS_ENDPOINT_URL` included).
    pub async fn from_env(role_arn: impl Into<String>) -> Self {
        let config = astrolift_store::load_sdk_config().await;
        Self::new(aws_sdk_sfn::Client::new(&config), role_arn)
    }

    /// The ARN of the Standard state machine `name` with `definition`: created, or the one
    /// that exists under that name (module docs).
    pub async fn put_state_machine(
        &self,
        name: &str,
        definition: &Value,
    ) -> Result<String, EngineError> {
        let created = self
            .client
            .create_state_machine()
            .name(name)
            .definition(definition.to_string())
            .role_arn(&self.role_arn)
            .r#type(StateMachineType::Standard)
            .send()
            .await;
        match created {
            Ok(output) => Ok(output.state_machine_arn),
            Err(error) if error.code() == Some("StateMachineAlreadyExists") => {
                self.existing_state_machine(name, definition).await
            }
            Err(error) => Err(call("CreateStateMachine", &error)),
        }
    }

    /// The state machine `name` that exists: its ARN in this account and region (the role's
    /// account; a name is only ever looked up under the deployment's prefix, so the role that
    /// may touch those ARNs needs no listing), brought to `definition` when it differs (its
    /// stage queue or role moved).
    async fn existing_state_machine(
        &self,
        name: &str,
        definition: &Value,
    ) -> Result<String, EngineError> {
        let region = self.client.config().region().map(|r| r.to_string());
        let arn = state_machine_arn(&self.role_arn, region.as_deref(), name).ok_or(
            EngineError::Incomplete {
                operation: "CreateStateMachine",
                field: "an account in the role ARN, or a region",
            },
        )?;
        let existing = self
            .client
            .describe_state_machine()
            .state_machine_arn(&arn)
            .send()
            .await
            .map_err(|e| call("DescribeStateMachine", &e))?;
        let wanted = definition.to_string();
        let same = serde_json::from_str::<Value>(existing.definition())
            .ok()
            .as_ref()
            == Some(definition);
        if !same || existing.role_arn() != self.role_arn {
            self.client
                .update_state_machine()
                .state_machine_arn(&arn)
                .definition(wanted)
                .role_arn(&self.role_arn)
                .send()
                .await
                .map_err(|e| call("UpdateStateMachine", &e))?;
        }
        Ok(arn)
    }

    /// Deletes the state machine `arn` when none of its executions runs; returns whether it
    /// was deleted (a machine already gone counts as deleted).
    pub async fn delete_if_idle(&self, arn: &str) -> Result<bool, EngineError> {
        let running = self
            .client
            .list_executions()
            .state_machine_arn(arn)
            .status_filter(ExecutionStatus::Running)
            .max_results(1)
            .send()
            .await;
        match running {
            Ok(page) if !page.executions().is_empty() => return Ok(false),
            Ok(_) => {}
            Err(error) if error.code() == Some("StateMachineDoesNotExist") => return Ok(true),
            Err(error) => return Err(call("ListExecutions", &error)),
        }
        self.client
            .delete_state_machine()
            .state_machine_arn(arn)
            .send()
            .await
            .map_err(|e| call("DeleteStateMachine", &e))?;
        Ok(true)
    }

    /// Starts the execution of run `run_id` on the state machine `arn` with `input`, named by
    /// the run id; a run that started already is that execution. Returns its ARN.
    pub async fn start_execution(
        &self,
        arn: &str,
        run_id: &str,
        input: &Value,
    ) -> Result<String, EngineError> {
        let started = self
            .client
            .start_execution()
            .state_machine_arn(arn)
            .name(run_id)
            .input(input.to_string())
            .send()
            .await;
        match started {
            Ok(output) => Ok(output.execution_arn),
            Err(error) if error.code() == Some("ExecutionAlreadyExists") => {
                Ok(execution_arn(arn, run_id))
            }
            Err(error) => Err(call("StartExecution", &error)),
        }
    }

    /// The status of the execution `execution_arn`.
    pub async fn execution_state(
        &self,
        execution_arn: &str,
    ) -> Result<ExecutionState, EngineError> {
        let output = self
            .client
            .describe_execution()
            .execution_arn(execution_arn)
            .send()
            .await
            .map_err(|e| call("DescribeExecution", &e))?;
        Ok(output.status.as_str().to_owned())
    }

    /// Stops the execution `execution_arn` with `cause` (an execution that ended already is
    /// left as it ended).
    pub async fn stop_execution(
        &self,
        execution_arn: &str,
        cause: &str,
    ) -> Result<(), EngineError> {
        self.client
            .stop_execution()
            .execution_arn(execution_arn)
            .cause(cause)
            .send()
            .await
            .map_err(|e| call("StopExecution", &e))?;
        Ok(())
    }

    /// A stage's success: its small `output` (never its result, which stays in the state
    /// store, so no state passes 256 KiB).
    pub async fn send_task_success(
        &self,
        token: &str,
        output: &Value,
    ) -> Result<TaskAnswer, EngineError> {
        let sent = self
            .client
            .send_task_success()
            .task_token(token)
            .output(output.to_string())
            .send()
            .await;
        answer("SendTaskSuccess", sent.map(drop))
    }

    /// A stage's failure: `error` is its status, `cause` the error text.
    pub async fn send_task_failure(
        &self,
        token: &str,
        error: &str,
        cause: &str,
    ) -> Result<TaskAnswer, EngineError> {
        let sent = self
            .client
            .send_task_failure()
            .task_token(token)
            .error(error)
            .cause(cause)
            .send()
            .await;
        answer("SendTaskFailure", sent.map(drop))
    }

    /// A stage's `running` callback: the task's heartbeat.
    pub async fn send_task_heartbeat(&self, token: &str) -> Result<TaskAnswer, EngineError> {
        let sent = self
            .client
            .send_task_heartbeat()
            .task_token(token)
            .send()
            .await;
        answer("SendTaskHeartbeat", sent.map(drop))
    }
}

/// The ARN of execution `name` of state machine `machine_arn`: the service's own format,
/// `arn:…:stateMachine:M` → `arn:…:execution:M:NAME`.
pub fn execution_arn(machine_arn: &str, name: &str) -> String {
    let execution = machine_arn.replacen(":stateMachine:", ":execution:", 1);
    format!("{execution}:{name}")
}

/// The ARN of state machine `name` in the partition and account of `role_arn`
/// (`arn:PARTITION:iam::ACCOUNT:role/…`) and `region`.
pub fn state_machine_arn(role_arn: &str, region: Option<&str>, name: &str) -> Option<String> {
    let mut parts = role_arn.split(':');
    let (Some("arn"), Some(partition), Some("iam"), Some(""), Some(account)) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return None;
    };
    let region = region.filter(|r| !r.is_empty())?;
    (!account.is_empty())
        .then(|| format!("arn:{partition}:states:{region}:{account}:stateMachine:{name}"))
}

/// A task result's answer: a token no task waits on is [`TaskAnswer::Stale`].
fn answer<E>(
    operation: &str,
    sent: Result<(), aws_sdk_sfn::error::SdkError<E>>,
) -> Result<TaskAnswer, EngineError>
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match sent {
        Ok(()) => Ok(TaskAnswer::Taken),
        Err(error) if is_stale(error.code()) => Ok(TaskAnswer::Stale),
        Err(error) => Err(call(operation, &error)),
    }
}

/// The service's codes for a token no task waits on.
fn is_stale(code: Option<&str>) -> bool {
    matches!(
        code,
        Some("TaskTimedOut" | "TaskDoesNotExist" | "InvalidToken")
    )
}

fn call<E>(operation: &str, error: &aws_sdk_sfn::error::SdkError<E>) -> EngineError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    EngineError::Call(describe_sdk_error("Step Functions", operation, error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_execution_arn_is_the_machines_with_its_name() {
        let machine = "arn:aws:states:us-east-1:123456789012:stateMachine:astrolift-o_r-w-0123abcd";
        assert_eq!(
            execution_arn(machine, "run-d-1"),
            "arn:aws:states:us-east-1:123456789012:execution:astrolift-o_r-w-0123abcd:run-d-1"
        );
    }

    #[test]
    fn a_state_machine_arn_is_in_the_roles_partition_and_account() {
        let role = "arn:aws:iam::123456789012:role/astrolift-state-machines";
        assert_eq!(
            state_machine_arn(role, Some("eu-west-1"), "astrolift-o_r-w-0123abcd").as_deref(),
            Some("arn:aws:states:eu-west-1:123456789012:stateMachine:astrolift-o_r-w-0123abcd")
        );
        assert_eq!(state_machine_arn(role, None, "m"), None);
        assert_eq!(
            state_machine_arn("not-an-arn", Some("eu-west-1"), "m"),
            None
        );
    }

    #[test]
    fn tokens_no_task_waits_on_are_stale() {
        assert!(is_stale(Some("TaskTimedOut")));
        assert!(is_stale(Some("TaskDoesNotExist")));
        assert!(!is_stale(Some("ThrottlingException")));
        assert!(!is_stale(None));
    }
}
