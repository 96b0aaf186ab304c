//! The store's one connection, owned by a thread of its own that runs the store's calls in
//! batches (group commit).
//!
//! A call waits in a channel; when the thread is free it takes every call waiting (at most
//! [`BATCH`]) and, when any of them writes, runs them all in one `BEGIN IMMEDIATE`
//! transaction, each inside a savepoint of its own, and commits once. A call's answer is
//! sent only after that commit, so an answered write is as durable as before, while the
//! commits of many concurrent calls (a burst of webhooks, a queue's workers marking jobs
//! running and deleting them) cost one WAL append instead of one each.
//!
//! - A call that fails is rolled back to its savepoint: the calls beside it commit.
//! - A commit that fails fails every write of its batch: none of it was stored.
//! - A batch of reads alone runs without a transaction, so it never takes the write lock
//!   that another process (the CLI on the same file) may hold.
//! - A call that needs several statements to be atomic opens a unit ([`atomic`]). In a write
//!   batch, the first unit of a call that has written nothing yet is the call's own
//!   savepoint (no second one is opened: it would be work on the store's one thread for
//!   nothing); any other unit is a savepoint nested in it, and outside a batch (a test, the
//!   schema's setup) a unit is a transaction of its own. A unit dropped uncommitted rolls
//!   back its own writes only, whichever it is.
//! - A call that panics answers `StoreError::Unavailable` and is rolled back; the thread
//!   goes on.
//!
//! Written by hand (a channel and a loop) because the async wrappers of rusqlite we found
//! (tokio-rusqlite) run one call per turn of their thread, with no group commit; the loop is
//! short and its behaviour is the module's tests.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::error::{sql_error, sql_error_of};
use crate::{StoreError, StoreResult};

/// The most calls one transaction commits.
const BATCH: usize = 64;

/// Whether a call writes: a batch with a write runs in one write transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    Read,
    Write,
}

/// A call waiting for the connection.
trait Waiting: Send {
    fn access(&self) -> Access;
    /// Runs the call; its answer waits for the batch's commit.
    fn run(self: Box<Self>, connection: &mut Connection) -> Box<dyn Ran>;
    /// Answers the call with `error` without running it.
    fn refuse(self: Box<Self>, error: StoreError);
}

/// A call that has run and waits for its batch's commit before it answers.
trait Ran: Send {
    fn failed(&self) -> bool;
    /// Answers the caller; `committed` is the batch's commit (`Ok` for a batch of reads).
    fn answer(self: Box<Self>, committed: Result<(), &str>);
}

struct Call<T, F> {
    access: Access,
    work: F,
    to: oneshot::Sender<StoreResult<T>>,
}

struct Answer<T> {
    result: StoreResult<T>,
    to: oneshot::Sender<StoreResult<T>>,
}

impl<T, F> Waiting for Call<T, F>
where
    T: Send + 'static,
    F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
{
    fn access(&self) -> Access {
        self.access
    }

    fn run(self: Box<Self>, connection: &mut Connection) -> Box<dyn Ran> {
        let Call { work, to, .. } = *self;
        Box::new(Answer {
            result: work(connection),
            to,
        })
    }

    fn refuse(self: Box<Self>, error: StoreError) {
        // A caller that stopped waiting (a dropped future) needs no answer.
        let _ = self.to.send(Err(error));
    }
}

impl<T: Send> Ran for Answer<T> {
    fn failed(&self) -> bool {
        self.result.is_err()
    }

    fn answer(self: Box<Self>, committed: Result<(), &str>) {
        let result = match committed {
            Ok(()) => self.result,
            Err(message) => self.result.and_then(|_| Err(commit_error(message))),
        };
        let _ = self.to.send(result);
    }
}

/// What a write of a batch whose commit failed answers: nothing of it was stored.
fn commit_error(message: &str) -> StoreError {
    StoreError::Unavailable(format!("sqlite: the commit failed: {message}"))
}

type Queued = Box<dyn Waiting>;

/// The sending side of the connection's thread; the thread stops (and closes the
/// connection) when the last clone is dropped.
#[derive(Debug, Clone)]
pub(super) struct ConnectionThread {
    calls: Sender<Queued>,
}

impl ConnectionThread {
    /// Starts the thread, which opens the connection with `open`.
    pub(super) async fn start<O>(open: O) -> StoreResult<Self>
    where
        O: FnOnce() -> StoreResult<Connection> + Send + 'static,
    {
        let (calls, waiting) = channel::<Queued>();
        let (opened, on_open) = oneshot::channel();
        std::thread::Builder::new()
            .name("astrolift-sqlite".into())
            .spawn(move || match open() {
                Ok(connection) => {
                    let _ = opened.send(Ok(()));
                    serve(connection, &waiting);
                }
                Err(error) => {
                    let _ = opened.send(Err(error));
                }
            })
            .map_err(|error| {
                StoreError::Unavailable(format!("cannot start the sqlite thread: {error}"))
            })?;
        on_open
            .await
            .map_err(|_| StoreError::Unavailable("the sqlite thread stopped".into()))??;
        Ok(ConnectionThread { calls })
    }

    /// Runs `work` on the connection in the connection's thread, answered after its batch
    /// commits.
    pub(super) async fn call<T, F>(&self, access: Access, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        let (to, answer) = oneshot::channel();
        self.calls
            .send(Box::new(Call { access, work, to }))
            .map_err(|_| StoreError::Unavailable("the sqlite thread stopped".into()))?;
        answer.await.map_err(|_| {
            StoreError::Unavailable("the sqlite call stopped before it answered".into())
        })?
    }
}

/// Where the connection's thread is in a write batch's call, for [`atomic`]: the call's
/// savepoint serves as a unit opened before the call wrote anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallUnit {
    /// Not in a write batch's call (a read batch, a test, the schema's setup).
    Outside,
    /// In a call's savepoint, which no unit holds, where the connection had made `changes`
    /// row changes when the call last stood as it began: a unit opened while that is still
    /// the count (the call has written nothing) takes the call's savepoint.
    Free { changes: u64 },
    /// A unit holds the call's savepoint, or did and committed: later units of the call
    /// open savepoints of their own, so that a rollback of theirs keeps the first's writes.
    Taken,
}

thread_local! {
    /// The connection's thread's [`CallUnit`]; every other thread stays `Outside`.
    static CALL_UNIT: Cell<CallUnit> = const { Cell::new(CallUnit::Outside) };
}

/// Opens an atomic unit of a call of several statements. In a write batch, the first unit
/// of a call that has written nothing yet is the call's own savepoint (no second one is
/// opened); any other unit is a savepoint of its own. Either way a unit dropped without its
/// commit rolls back what it wrote and nothing else.
pub(super) fn atomic(connection: &Connection) -> StoreResult<Atomic<'_>> {
    if let CallUnit::Free { changes } = CALL_UNIT.get()
        && connection.total_changes() == changes
    {
        CALL_UNIT.set(CallUnit::Taken);
        return Ok(Atomic {
            connection,
            released: false,
            savepoint: false,
        });
    }
    control(connection, "SAVEPOINT astrolift_atomic").map_err(sql_error)?;
    Ok(Atomic {
        connection,
        released: false,
        savepoint: true,
    })
}

/// A call's statements made one unit: a savepoint (or its call's, [`atomic`]) that
/// [`Atomic::commit`] keeps and that is rolled back when dropped otherwise (a call that
/// returned early, or an error).
///
/// Written by hand rather than rusqlite's `Savepoint`, which parses `SAVEPOINT` and
/// `RELEASE` anew each time (a `format!` and the SQL parser, twice per webhook accepted with
/// its job): these three statements stay prepared. SQLite nests savepoints of one name, the
/// innermost answering to it, so a unit may open inside another.
pub(super) struct Atomic<'c> {
    connection: &'c Connection,
    released: bool,
    /// `false` for the unit that is its call's savepoint.
    savepoint: bool,
}

impl Atomic<'_> {
    /// Keeps what the unit wrote (in the enclosing transaction, which commits it).
    pub(super) fn commit(mut self) -> rusqlite::Result<()> {
        self.released = true;
        if !self.savepoint {
            return Ok(());
        }
        control(self.connection, "RELEASE astrolift_atomic").map(drop)
    }
}

impl std::ops::Deref for Atomic<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.connection
    }
}

impl Drop for Atomic<'_> {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        // Neither fails while the savepoint is open; if one did, the enclosing
        // savepoint's rollback or the batch's COMMIT reports it.
        if !self.savepoint {
            // The call wrote nothing before this unit: back to where it began, its
            // savepoint still open for what it writes next.
            let _ = control(self.connection, "ROLLBACK TO astrolift_call");
            let changes = self.connection.total_changes();
            CALL_UNIT.set(CallUnit::Free { changes });
            return;
        }
        let _ = control(self.connection, "ROLLBACK TO astrolift_atomic");
        let _ = control(self.connection, "RELEASE astrolift_atomic");
    }
}

/// Runs batches until every sender is gone.
fn serve(mut connection: Connection, waiting: &Receiver<Queued>) {
    while let Ok(first) = waiting.recv() {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match waiting.try_recv() {
                Ok(call) => batch.push(call),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        run_batch(&mut connection, batch, waiting);
    }
}

fn run_batch(connection: &mut Connection, batch: Vec<Queued>, waiting: &Receiver<Queued>) {
    if batch.iter().all(|call| call.access() == Access::Read) {
        for call in batch {
            if let Some(ran) = run_call(connection, call) {
                ran.answer(Ok(()));
            }
        }
        return;
    }
    // Another process (the CLI on the same file) holding the write lock past the busy
    // timeout: each call answers the error it would alone.
    if let Err(error) = control(connection, "BEGIN IMMEDIATE") {
        for call in batch {
            call.refuse(sql_error_of(&error));
        }
        return;
    }
    let mut ran = Vec::with_capacity(BATCH);
    let mut taken = batch.len();
    ran.extend(
        batch
            .into_iter()
            .filter_map(|call| in_savepoint(connection, call)),
    );
    // Calls that came while these ran join the same commit, up to the batch's bound.
    while taken < BATCH {
        let Ok(call) = waiting.try_recv() else {
            break;
        };
        taken += 1;
        ran.extend(in_savepoint(connection, call));
    }
    let message = control(connection, "COMMIT")
        .err()
        .map(|error| error.to_string());
    if message.is_some() {
        // Nothing of the batch is stored; a failed COMMIT may leave the transaction open.
        let _ = control(connection, "ROLLBACK");
    }
    for done in ran {
        done.answer(message.as_deref().map_or(Ok(()), Err));
    }
}

/// Runs a call of a write batch in a savepoint of its own, rolled back if it fails.
fn in_savepoint(connection: &mut Connection, call: Queued) -> Option<Box<dyn Ran>> {
    if let Err(error) = control(connection, "SAVEPOINT astrolift_call") {
        call.refuse(sql_error_of(&error));
        return None;
    }
    let changes = connection.total_changes();
    CALL_UNIT.set(CallUnit::Free { changes });
    let ran = run_call(connection, call);
    CALL_UNIT.set(CallUnit::Outside);
    // Neither fails while the savepoint is open; if one did, the COMMIT reports it.
    if ran.as_ref().is_none_or(|ran| ran.failed()) {
        let _ = control(connection, "ROLLBACK TO astrolift_call");
    }
    let _ = control(connection, "RELEASE astrolift_call");
    ran
}

/// Runs a statement of the batch's own (a transaction's or a savepoint's), kept prepared so
/// that no call parses them again.
fn control(connection: &Connection, statement: &str) -> rusqlite::Result<usize> {
    connection.prepare_cached(statement)?.execute([])
}

/// Runs one call; `None` when it panicked: its answer's sender is dropped with it, so its
/// caller sees the call stopped.
fn run_call(connection: &mut Connection, call: Queued) -> Option<Box<dyn Ran>> {
    catch_unwind(AssertUnwindSafe(|| call.run(connection))).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection(dir: &tempfile::TempDir) -> Connection {
        let connection = Connection::open(dir.path().join("state.db")).expect("open");
        connection
            .execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (n INTEGER PRIMARY KEY);")
            .expect("schema");
        connection
    }

    type Answered<T> = oneshot::Receiver<StoreResult<T>>;

    fn call<T, F>(access: Access, work: F) -> (Queued, Answered<T>)
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        let (to, answer) = oneshot::channel();
        (Box::new(Call { access, work, to }), answer)
    }

    fn insert(n: i64) -> impl FnOnce(&mut Connection) -> StoreResult<usize> + Send + 'static {
        move |c| {
            c.execute("INSERT INTO t (n) VALUES (?1)", [n])
                .map_err(sql_error)
        }
    }

    fn rows(connection: &Connection) -> Vec<i64> {
        let mut statement = connection
            .prepare("SELECT n FROM t ORDER BY n")
            .expect("select");
        statement
            .query_map([], |row| row.get(0))
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("rows")
    }

    #[test]
    fn a_failed_call_is_rolled_back_and_the_calls_beside_it_and_after_it_commit() {
        let dir = tempfile::tempdir().expect("dir");
        let mut connection = connection(&dir);
        let (first, first_answer) = call(Access::Write, insert(1));
        // Writes a row, then fails: its row must not be stored.
        let (failing, failing_answer) = call(Access::Write, |c: &mut Connection| {
            insert(2)(c)?;
            Err::<(), _>(StoreError::Conflict("refused".into()))
        });
        let (panicking, panicking_answer) = call(Access::Write, |c: &mut Connection| {
            insert(3)(c)?;
            panic!("a call that panics");
            #[allow(unreachable_code)]
            Ok(())
        });
        let (last, last_answer) = call(Access::Write, insert(4));
        let (read, read_answer) = call(Access::Read, |c: &mut Connection| Ok(rows(c)));
        // The last two wait in the channel: they join the batch's commit.
        let (sender, waiting) = channel();
        for call in [last, read] {
            sender.send(call).expect("queued");
        }
        run_batch(&mut connection, vec![first, failing, panicking], &waiting);
        assert!(waiting.try_recv().is_err(), "every waiting call ran");
        assert_eq!(
            first_answer.blocking_recv().expect("answered").ok(),
            Some(1)
        );
        assert!(matches!(
            failing_answer.blocking_recv().expect("answered"),
            Err(StoreError::Conflict(_))
        ));
        // Its sender went with the panic: the caller sees the call stopped.
        assert!(panicking_answer.blocking_recv().is_err());
        assert_eq!(last_answer.blocking_recv().expect("answered").ok(), Some(1));
        // A read in the batch sees the writes before it.
        assert_eq!(
            read_answer.blocking_recv().expect("answered").ok(),
            Some(vec![1, 4])
        );
        assert_eq!(rows(&connection), vec![1, 4]);
    }

    #[test]
    fn a_batch_that_cannot_take_the_write_lock_answers_busy_and_reads_still_run() {
        let dir = tempfile::tempdir().expect("dir");
        let mut connection = connection(&dir);
        connection
            .busy_timeout(std::time::Duration::ZERO)
            .expect("timeout");
        let holder = Connection::open(dir.path().join("state.db")).expect("open");
        holder
            .execute_batch("BEGIN IMMEDIATE; INSERT INTO t (n) VALUES (9);")
            .expect("lock");
        let (write, write_answer) = call(Access::Write, insert(1));
        let (read, read_answer) = call(Access::Read, |c: &mut Connection| Ok(rows(c)));
        let (_sender, waiting) = channel();
        run_batch(&mut connection, vec![write, read], &waiting);
        assert!(matches!(
            write_answer.blocking_recv().expect("answered"),
            Err(StoreError::Unavailable(_))
        ));
        assert!(matches!(
            read_answer.blocking_recv().expect("answered"),
            Err(StoreError::Unavailable(_))
        ));
        // Reads alone take no write lock: they run while another process writes.
        let (read, read_answer) = call(Access::Read, |c: &mut Connection| Ok(rows(c)));
        run_batch(&mut connection, vec![read], &waiting);
        assert_eq!(
            read_answer.blocking_recv().expect("answered").ok(),
            Some(vec![])
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_calls_are_each_answered_after_their_commit() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("state.db");
        let opened = path.clone();
        let thread = ConnectionThread::start(move || {
            let connection = Connection::open(&opened).map_err(sql_error)?;
            connection
                .execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (n INTEGER PRIMARY KEY);")
                .map_err(sql_error)?;
            Ok(connection)
        })
        .await
        .expect("thread");
        let calls = (0..200).map(|n| {
            let thread = thread.clone();
            tokio::spawn(async move { thread.call(Access::Write, insert(n)).await })
        });
        for call in calls.collect::<Vec<_>>() {
            assert_eq!(call.await.expect("task").ok(), Some(1));
        }
        // Every answered write is committed: another connection sees it.
        let other = Connection::open(&path).expect("open");
        assert_eq!(rows(&other), (0..200).collect::<Vec<_>>());
    }

    #[test]
    fn an_atomic_unit_keeps_its_writes_only_when_committed_even_nested() {
        let dir = tempfile::tempdir().expect("dir");
        let connection = connection(&dir);
        let put = |c: &Connection, n: i64| {
            c.execute("INSERT INTO t (n) VALUES (?1)", [n])
                .expect("insert");
        };
        control(&connection, "BEGIN IMMEDIATE").expect("begin");
        {
            let kept = atomic(&connection).expect("unit");
            put(&kept, 1);
            kept.commit().expect("released");
        }
        {
            let dropped = atomic(&connection).expect("unit");
            put(&dropped, 2);
        }
        {
            let outer = atomic(&connection).expect("outer");
            put(&outer, 3);
            {
                // A unit opened inside another and dropped: only its own write goes.
                let inner = atomic(&outer).expect("inner");
                put(&inner, 4);
            }
            put(&outer, 5);
            outer.commit().expect("released");
        }
        control(&connection, "COMMIT").expect("commit");
        assert_eq!(rows(&connection), vec![1, 3, 5]);
    }

    /// In a write batch a call's first unit is the call's savepoint: committed, its writes
    /// stay; dropped, they go. A later unit of the same call is a savepoint of its own, so
    /// dropping it leaves the first unit's writes; so is a first unit opened after the call
    /// wrote, so dropping it leaves those writes; and what a call writes after a dropped
    /// first unit stays.
    #[test]
    fn a_calls_first_unit_is_the_calls_savepoint_and_a_dropped_unit_takes_only_its_writes() {
        fn put(c: &Connection, n: i64) -> StoreResult<usize> {
            c.execute("INSERT INTO t (n) VALUES (?1)", [n])
                .map_err(sql_error)
        }
        let dir = tempfile::tempdir().expect("dir");
        let mut connection = connection(&dir);
        let (kept, kept_answer) = call(Access::Write, |c: &mut Connection| {
            let unit = atomic(c)?;
            put(&unit, 1)?;
            unit.commit().map_err(sql_error)
        });
        let (dropped, dropped_answer) = call(Access::Write, |c: &mut Connection| {
            let unit = atomic(c)?;
            put(&unit, 2)?;
            drop(unit);
            Ok(())
        });
        let (second_dropped, second_answer) = call(Access::Write, |c: &mut Connection| {
            let first = atomic(c)?;
            put(&first, 3)?;
            first.commit().map_err(sql_error)?;
            let second = atomic(c)?;
            put(&second, 4)?;
            drop(second);
            Ok(())
        });
        let (after, after_answer) = call(Access::Write, insert(5));
        let (wrote_first, wrote_first_answer) = call(Access::Write, |c: &mut Connection| {
            put(c, 6)?;
            let unit = atomic(c)?;
            put(&unit, 7)?;
            drop(unit);
            Ok(())
        });
        let (wrote_after, wrote_after_answer) = call(Access::Write, |c: &mut Connection| {
            let unit = atomic(c)?;
            put(&unit, 8)?;
            drop(unit);
            put(c, 9)?;
            let again = atomic(c)?;
            put(&again, 10)?;
            again.commit().map_err(sql_error)
        });
        let (_sender, waiting) = channel();
        run_batch(
            &mut connection,
            vec![
                kept,
                dropped,
                second_dropped,
                after,
                wrote_first,
                wrote_after,
            ],
            &waiting,
        );
        for answer in [
            kept_answer,
            dropped_answer,
            second_answer,
            wrote_first_answer,
            wrote_after_answer,
        ] {
            assert!(answer.blocking_recv().expect("answered").is_ok());
        }
        assert_eq!(
            after_answer.blocking_recv().expect("answered").ok(),
            Some(1)
        );
        assert_eq!(rows(&connection), vec![1, 3, 5, 6, 9, 10]);
        assert_eq!(CALL_UNIT.get(), CallUnit::Outside, "no call is left open");
    }

    #[tokio::test]
    async fn a_connection_that_cannot_open_fails_the_start() {
        let failed = ConnectionThread::start(|| Err(StoreError::Invalid("no file".into()))).await;
        assert!(matches!(failed, Err(StoreError::Invalid(_))));
    }
}
