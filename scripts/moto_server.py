#!/usr/bin/env python3
"""Run moto_server with its requests serialised (SQS apart), and two of its Step Functions
gaps closed so that the tests judge the product against AWS's behaviour (docs/reference.md
§5.6, "moto"):

- `SendTaskFailure` keeps its `cause` (moto drops it; AWS records it on the execution);
- `StopExecution` of an execution whose task waits for a token ends it `ABORTED` at once
  (moto leaves it `RUNNING` until the token is answered; AWS aborts it);
- a `Retry` of a `.waitForTaskToken` task waits on a new token (moto re-sends the old one,
  which resolves at once with the failed attempt's outcome; AWS issues a new token).

moto's writes are not isolated under its threaded server. TransactWriteItems snapshots the
table, applies the writes, and on a cancellation restores the snapshot: a transaction cancelled
while another commits restores a snapshot taken before that commit and erases it. S3's
conditional PutObject (`If-None-Match: *`) checks for the key, then writes: two concurrent puts
can both succeed. Real DynamoDB and S3 do neither. Holding one lock per request makes moto
serialisable, as the services are, so the concurrency tests in the store and trigger crates
test our code and not the double. SQS requests are not held (a long poll would stall every
other request).

moto's TransactWriteItems also deep-copies the whole table once per item it names, to roll
back a cancelled transaction: its cost grows with the table, which DynamoDB's does not (a
1,000-agent sync's transactions would copy the table 2,000 times). Here it copies the items
the transaction names instead, and restores those on a cancellation: the same outcome, at a
cost that grows with the transaction. Arguments are moto_server's.
"""
import sys
import threading

from moto.moto_server.werkzeug_app import DomainDispatcherApplication
from moto.server import main

_serial = threading.Lock()
_dispatch = DomainDispatcherApplication.__call__


def _serialised(self, environ, start_response):
    if not environ.get("HTTP_X_AMZ_TARGET", "").startswith("AmazonSQS"):
        with _serial:
            # moto builds each response whole; list() ends the request inside the lock.
            return list(_dispatch(self, environ, start_response))
    return _dispatch(self, environ, start_response)


DomainDispatcherApplication.__call__ = _serialised


def _roll_back_touched_items_only():
    import copy

    import moto.dynamodb.models as models
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import Table

    class _CopyAllButTables:
        """`copy` for moto's transaction: a table is handed back as is, anything else copied."""

        @staticmethod
        def deepcopy(value, memo=None):
            return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    transact = DynamoDBBackend.transact_write_items

    def item_key(backend, item):
        op_type, op = next(iter(item.items()))
        table = backend.get_table(op["TableName"])
        attrs = op["Item"] if op_type == "Put" else op["Key"]
        hash_key = DynamoType(attrs[table.hash_key_attr])
        range_key = DynamoType(attrs[table.range_key_attr]) if table.range_key_attr else None
        return table, hash_key, range_key

    def transact_restoring_items(self, transact_items):
        saved = []
        for item in transact_items:
            try:
                table, hash_key, range_key = item_key(self, item)
            except Exception:  # moto's own checks report a malformed item
                continue
            current = table.get_item(hash_key, range_key)
            saved.append((table, hash_key, range_key, copy.deepcopy(current)))
        models.copy = _CopyAllButTables
        try:
            return transact(self, transact_items)
        except BaseException:
            for table, hash_key, range_key, old in reversed(saved):
                table.delete_item(hash_key, range_key)
                if old is not None and range_key is not None:
                    table.items[hash_key][range_key] = old
                elif old is not None:
                    table.items[hash_key] = old
            raise
        finally:
            models.copy = copy

    DynamoDBBackend.transact_write_items = transact_restoring_items


_roll_back_touched_items_only()


def _close_step_functions_gaps():
    from moto.core.responses import EmptyResult
    from moto.stepfunctions.parser.api import ExecutionStatus
    from moto.stepfunctions.parser.backend.execution import Execution
    from moto.stepfunctions.responses import StepFunctionResponse

    def send_task_failure(self):
        self.stepfunction_backend.send_task_failure(
            self._get_param("taskToken"),
            error=self._get_param("error"),
            cause=self._get_param("cause"),
        )
        return EmptyResult()

    stop = Execution.stop

    def stop_aborts(self, stop_date, error, cause):
        stop(self, stop_date, error, cause)
        if self.exec_status == ExecutionStatus.RUNNING:
            self.exec_status = ExecutionStatus.ABORTED
            self.stop_date = stop_date
            self.error = error
            self.cause = cause

    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_callback import (
        StateTaskServiceCallback,
    )

    eval_execution = StateTaskServiceCallback._eval_execution

    def new_token_per_attempt(self, env):
        context = env.states.context_object
        data = context.context_object_data
        if data.get("State", {}).get("RetryCount", 0) > 0 and "Task" in data:
            env.callback_pool_manager.add(context.update_task_token())
        return eval_execution(self, env)

    StepFunctionResponse.send_task_failure = send_task_failure
    Execution.stop = stop_aborts
    StateTaskServiceCallback._eval_execution = new_token_per_attempt


_close_step_functions_gaps()

if __name__ == "__main__":
    main(sys.argv[1:])
