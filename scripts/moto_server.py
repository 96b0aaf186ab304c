#!/usr/bin/env python3
"""Run moto_server with DynamoDB requests serialised.

moto's TransactWriteItems is not isolated: it snapshots the table, applies the writes, and on a
cancellation restores the snapshot. Under moto's threaded server, a transaction cancelled while
another commits restores a snapshot taken before that commit and erases it; real DynamoDB never
loses a committed write. Holding one lock per DynamoDB request makes moto serialisable, as
DynamoDB is, so the concurrency tests in the store and trigger crates test our code and not
the double. Other services keep moto's threading. Arguments are moto_server's.
"""
import sys
import threading

from moto.moto_server.werkzeug_app import DomainDispatcherApplication
from moto.server import main

_dynamodb = threading.Lock()
_dispatch = DomainDispatcherApplication.__call__


def _serialised(self, environ, start_response):
    if environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB_"):
        with _dynamodb:
            # moto builds each response whole; list() ends the request inside the lock.
            return list(_dispatch(self, environ, start_response))
    return _dispatch(self, environ, start_response)


DomainDispatcherApplication.__call__ = _serialised

if __name__ == "__main__":
    main(sys.argv[1:])
