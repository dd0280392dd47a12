//! The response cache: a SQLite table from request key to answer (or, with `--no-cache`, a map
//! holding this run's answers), plus "single flight" so that identical requests made at the same
//! moment (round 0 of every arm of a task) reach the model once and all get the same answer. Only answers are stored, never errors, never the key.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, params};

use crate::chat::ChatError;
use crate::settings::CacheMode;

/// Bumped when the key or the stored answer changes meaning; old rows are then never matched.
/// Format 2 stores whether the answer was cut at `max_tokens` (`truncated`).
pub const CACHE_FORMAT: u32 = 2;

/// A stored answer.
#[derive(Clone, Debug, PartialEq)]
pub struct CachedAnswer {
    pub content: String,
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
    /// Of `tokens_in`, those the server served from its own prompt cache, when it said so (not
    /// stored: an answer read back from this cache was not paid for by this run).
    pub cached_in: Option<u64>,
    /// The server cut the answer at its token limit (`finish_reason` `length`).
    pub truncated: bool,
}

/// What the key is made of, kept beside the answer so the table can be inspected and pruned.
pub struct KeyParts<'a> {
    pub endpoint: &'a str,
    pub role: &'a str,
    pub model: &'a str,
    pub task_id: &'a str,
    pub epoch: u32,
    pub round: u32,
}

#[derive(Debug, thiserror::Error)]
#[error("response cache {}: {message}", path.display())]
pub struct CacheError {
    pub path: PathBuf,
    pub message: String,
}

type FlightResult = Result<CachedAnswer, ChatError>;

struct Flight {
    result: Mutex<Option<FlightResult>>,
    /// Followers awaiting the result, woken when it is published. There is no condition variable
    /// for blocked callers: every caller awaits, and a notification no one waits for would still be
    /// a system call for every request.
    wakers: Mutex<Vec<Waker>>,
}

/// An identical request in flight whose outcome a caller waits for, by blocking
/// ([`Following::wait`]) or awaiting ([`Following::result`]).
pub struct Following(Arc<Flight>);

impl Following {
    /// The leader's outcome, awaited: a caller whose leader may be a future on the same thread
    /// must not block it.
    pub async fn result(self) -> FlightResult {
        std::future::poll_fn(|context| {
            // The waker is registered under the result's lock, which `publish` takes before it
            // wakes: a result published after this look finds the waker.
            let result = self.0.result.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            match result.as_ref() {
                Some(result) => Poll::Ready(result.clone()),
                None => {
                    let mut wakers = self.0.wakers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                    if !wakers.iter().any(|waker| waker.will_wake(context.waker())) {
                        wakers.push(context.waker().clone());
                    }
                    Poll::Pending
                }
            }
        })
        .await
    }
}

pub struct ResponseCache {
    store: Store,
    path: Option<PathBuf>,
    in_flight: Mutex<HashMap<String, Arc<Flight>>>,
}

/// Where the answers are kept.
enum Store {
    /// The SQLite file, shared with other runs.
    Disk(Mutex<Connection>),
    /// This run's answers only (`--no-cache`), so that identical requests of one run still reach
    /// the model once. A map: a SQLite table in memory would cost a parsed statement per call.
    Memory(Mutex<HashMap<String, CachedAnswer>>),
}

/// Where a lookup left the caller.
pub enum Lookup<'a> {
    /// Stored earlier (this run or another).
    Hit(CachedAnswer),
    /// An identical request was in flight; this is its outcome.
    Joined(FlightResult),
    /// An identical request is in flight: its outcome is to be waited for ([`ResponseCache::begin`]).
    Follow(Following),
    /// Nobody has it: the caller asks the model and must [`Leader::finish`].
    Lead(Leader<'a>),
}

/// The one caller that asks the model for a key; the others wait for it.
pub struct Leader<'a> {
    cache: &'a ResponseCache,
    key: String,
    flight: Arc<Flight>,
    finished: bool,
}

impl ResponseCache {
    pub fn open(mode: &CacheMode) -> Result<ResponseCache, CacheError> {
        let (store, path) = match mode {
            CacheMode::Memory => (Store::Memory(Mutex::new(HashMap::new())), None),
            CacheMode::Disk { path } => (Store::Disk(Mutex::new(open_table(path)?)), Some(path.clone())),
        };
        Ok(ResponseCache { store, path, in_flight: Mutex::new(HashMap::new()) })
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn get(&self, key: &str) -> Result<Option<CachedAnswer>, rusqlite::Error> {
        let connection = match &self.store {
            Store::Memory(answers) => return Ok(lock(answers).get(key).cloned()),
            Store::Disk(connection) => lock(connection),
        };
        let mut select = connection.prepare_cached(
            "SELECT content, tokens_in, tokens_out, truncated FROM responses WHERE key = ?1 AND format = ?2",
        )?;
        select
            .query_row(params![key, CACHE_FORMAT], |row| {
                Ok(CachedAnswer {
                    content: row.get(0)?,
                    tokens_in: row.get::<_, Option<i64>>(1)?.map(|n| n.max(0) as u64),
                    tokens_out: row.get::<_, Option<i64>>(2)?.map(|n| n.max(0) as u64),
                    cached_in: None,
                    truncated: row.get::<_, i64>(3)? != 0,
                })
            })
            .optional()
    }

    fn put(&self, key: &str, parts: &KeyParts<'_>, answer: &CachedAnswer) -> Result<(), rusqlite::Error> {
        let connection = match &self.store {
            Store::Memory(answers) => {
                // As a stored row reads back: without `cached_in`.
                lock(answers).insert(key.to_string(), CachedAnswer { cached_in: None, ..answer.clone() });
                return Ok(());
            }
            Store::Disk(connection) => lock(connection),
        };
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
        let mut insert = connection.prepare_cached(
            "INSERT OR REPLACE INTO responses
                 (key, format, endpoint, role, model, task_id, epoch, round, content, tokens_in, tokens_out, created_at,
                  truncated)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        )?;
        insert
            .execute(params![
                key,
                CACHE_FORMAT,
                parts.endpoint,
                parts.role,
                parts.model,
                parts.task_id,
                parts.epoch,
                parts.round,
                answer.content,
                answer.tokens_in.map(|n| n as i64),
                answer.tokens_out.map(|n| n as i64),
                now,
                i64::from(answer.truncated)
            ])
            .map(|_| ())
    }

    /// Looks `key` up: a stored answer, an identical request in flight ([`Lookup::Follow`], whose
    /// outcome the caller awaits), or the lead, when this caller must ask the model. A cache that
    /// cannot be read is treated as a miss (`read_error` says why).
    pub fn begin(&self, key: &str, read_error: &mut Option<rusqlite::Error>) -> Lookup<'_> {
        let flight = {
            let mut in_flight = self.in_flight.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            match in_flight.get(key) {
                Some(flight) => Arc::clone(flight),
                None => {
                    // Checked while holding the in-flight map: a leader stores its answer before
                    // it leaves the map, so there is no moment where the answer is in neither.
                    match self.get(key) {
                        Ok(Some(answer)) => return Lookup::Hit(answer),
                        Ok(None) => {}
                        Err(e) => *read_error = Some(e),
                    }
                    let flight = Arc::new(Flight { result: Mutex::new(None), wakers: Mutex::new(Vec::new()) });
                    in_flight.insert(key.to_string(), Arc::clone(&flight));
                    return Lookup::Lead(Leader { cache: self, key: key.to_string(), flight, finished: false });
                }
            }
        };
        Lookup::Follow(Following(flight))
    }
}

/// Opens (or creates) the cache file at `path` and its table.
fn open_table(path: &Path) -> Result<Connection, CacheError> {
    let fail = |message: String| CacheError { path: path.to_path_buf(), message };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| fail(format!("cannot create its directory: {e}")))?;
    }
    let connection = Connection::open(path).map_err(|e| fail(e.to_string()))?;
    connection.busy_timeout(Duration::from_secs(30)).map_err(|e| fail(e.to_string()))?;
    // WAL lets other critbench processes read while this one writes.
    connection
        .query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
        .map_err(|e| fail(format!("cannot switch to WAL: {e}")))?;
    connection.execute_batch("PRAGMA synchronous = NORMAL").map_err(|e| fail(e.to_string()))?;
    connection
        .execute_batch(
            "CREATE TABLE IF NOT EXISTS responses (
                key TEXT PRIMARY KEY,
                format INTEGER NOT NULL,
                endpoint TEXT NOT NULL,
                role TEXT NOT NULL,
                model TEXT NOT NULL,
                task_id TEXT NOT NULL,
                epoch INTEGER NOT NULL,
                round INTEGER NOT NULL,
                content TEXT NOT NULL,
                tokens_in INTEGER,
                tokens_out INTEGER,
                created_at INTEGER NOT NULL,
                truncated INTEGER NOT NULL DEFAULT 0
            )",
        )
        .map_err(|e| fail(format!("cannot create the table: {e}")))?;
    // A file of format 1 lacks the column; its rows are never matched (their format), but new rows
    // go into the same table.
    let has_truncated = connection
        .prepare("SELECT 1 FROM pragma_table_info('responses') WHERE name = 'truncated'")
        .and_then(|mut select| select.exists([]))
        .map_err(|e| fail(format!("cannot read the table's columns: {e}")))?;
    if !has_truncated {
        connection
            .execute_batch("ALTER TABLE responses ADD COLUMN truncated INTEGER NOT NULL DEFAULT 0")
            .map_err(|e| fail(format!("cannot add the column `truncated`: {e}")))?;
    }
    Ok(connection)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Leader<'_> {
    /// Stores a successful answer (errors are never stored) and wakes the callers waiting on
    /// this key. Returns the store's error, if any; the answer is good either way.
    pub fn finish(mut self, parts: &KeyParts<'_>, result: &FlightResult) -> Result<(), rusqlite::Error> {
        let stored = match result {
            Ok(answer) => self.cache.put(&self.key, parts, answer),
            Err(_) => Ok(()),
        };
        self.publish(result.clone());
        stored
    }

    fn publish(&mut self, result: FlightResult) {
        self.finished = true;
        let wakers = {
            let mut slot = self.flight.result.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            *slot = Some(result);
            std::mem::take(&mut *self.flight.wakers.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
        };
        wakers.into_iter().for_each(Waker::wake);
        self.cache.in_flight.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(&self.key);
    }
}

impl Drop for Leader<'_> {
    fn drop(&mut self) {
        // A leader that unwinds must not leave its followers waiting forever.
        if !self.finished {
            self.publish(Err(ChatError::Abandoned));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Following {
        /// Blocks the calling thread until the leader publishes its outcome.
        fn wait(self) -> FlightResult {
            crate::test_executor::drive_on_this_thread(vec![Box::pin(self.result())]).remove(0)
        }
    }

    impl ResponseCache {
        /// [`ResponseCache::begin`], waiting for an identical request in flight: never
        /// [`Lookup::Follow`].
        fn lookup(&self, key: &str, read_error: &mut Option<rusqlite::Error>) -> Lookup<'_> {
            match self.begin(key, read_error) {
                Lookup::Follow(following) => Lookup::Joined(following.wait()),
                other => other,
            }
        }
    }

    fn parts() -> KeyParts<'static> {
        KeyParts {
            endpoint: "http://x/v1/chat/completions",
            role: "judge",
            model: "m",
            task_id: "t",
            epoch: 0,
            round: 0,
        }
    }

    fn answer(text: &str) -> CachedAnswer {
        CachedAnswer { content: text.into(), tokens_in: Some(3), tokens_out: None, cached_in: None, truncated: false }
    }

    #[test]
    fn answers_persist_and_errors_are_not_stored() {
        let dir = tempfile::tempdir().unwrap();
        let mode = CacheMode::Disk { path: dir.path().join("sub/cache.sqlite") };
        {
            let cache = ResponseCache::open(&mode).unwrap();
            let mut error = None;
            let Lookup::Lead(leader) = cache.lookup("a", &mut error) else { panic!("empty cache") };
            leader.finish(&parts(), &Ok(answer("hello"))).unwrap();
            let Lookup::Lead(leader) = cache.lookup("b", &mut error) else { panic!("empty cache") };
            leader.finish(&parts(), &Err(ChatError::Abandoned)).unwrap();
            assert!(error.is_none());
        }
        let cache = ResponseCache::open(&mode).unwrap();
        let mut error = None;
        assert!(matches!(cache.lookup("a", &mut error), Lookup::Hit(a) if a == answer("hello")));
        assert!(matches!(cache.lookup("b", &mut error), Lookup::Lead(_)), "errors are never cached");
    }

    #[test]
    fn a_memory_cache_answers_a_repeat_within_its_run_as_a_stored_row_would() {
        let cache = ResponseCache::open(&CacheMode::Memory).unwrap();
        assert_eq!(cache.path(), None);
        let mut error = None;
        let Lookup::Lead(leader) = cache.lookup("a", &mut error) else { panic!("empty cache") };
        let served = CachedAnswer { cached_in: Some(3), ..answer("hello") };
        leader.finish(&parts(), &Ok(served)).unwrap();
        let Lookup::Lead(leader) = cache.lookup("b", &mut error) else { panic!("empty cache") };
        leader.finish(&parts(), &Err(ChatError::Abandoned)).unwrap();
        // Read back without the server's prompt-cache count, which this run did not pay again.
        assert!(matches!(cache.lookup("a", &mut error), Lookup::Hit(a) if a == answer("hello")));
        assert!(matches!(cache.lookup("b", &mut error), Lookup::Lead(_)), "errors are never cached");
        assert!(error.is_none());
        assert!(matches!(ResponseCache::open(&CacheMode::Memory).unwrap().lookup("a", &mut error), Lookup::Lead(_)));
    }

    #[test]
    fn identical_requests_in_flight_share_one_answer() {
        let cache = Arc::new(ResponseCache::open(&CacheMode::Memory).unwrap());
        let mut error = None;
        let Lookup::Lead(leader) = cache.lookup("k", &mut error) else { panic!("empty cache") };
        let follower = {
            let cache = Arc::clone(&cache);
            std::thread::spawn(move || match cache.lookup("k", &mut None) {
                Lookup::Joined(result) => result,
                Lookup::Hit(answer) => Ok(answer),
                Lookup::Lead(_) | Lookup::Follow(_) => panic!("a second leader for the same key"),
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        leader.finish(&parts(), &Ok(answer("once"))).unwrap();
        assert_eq!(follower.join().unwrap().unwrap().content, "once");
    }

    #[test]
    fn a_follower_on_the_leaders_thread_awaits_without_blocking_it() {
        use std::task::{Context, Wake};
        struct Count(std::sync::atomic::AtomicUsize);
        impl Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let cache = ResponseCache::open(&CacheMode::Memory).unwrap();
        let Lookup::Lead(leader) = cache.begin("k", &mut None) else { panic!("empty cache") };
        let Lookup::Follow(following) = cache.begin("k", &mut None) else { panic!("the lead is in flight") };
        let woken = Arc::new(Count(0.into()));
        let waker = Waker::from(Arc::clone(&woken));
        let mut context = Context::from_waker(&waker);
        let mut result = std::pin::pin!(following.result());
        assert!(result.as_mut().poll(&mut context).is_pending(), "nothing published yet");
        assert_eq!(woken.0.load(std::sync::atomic::Ordering::SeqCst), 0);
        leader.finish(&parts(), &Ok(answer("once"))).unwrap();
        assert_eq!(woken.0.load(std::sync::atomic::Ordering::SeqCst), 1, "publishing wakes the follower");
        match result.as_mut().poll(&mut context) {
            Poll::Ready(Ok(answer)) => assert_eq!(answer.content, "once"),
            other => panic!("{other:?}"),
        }
    }
}
