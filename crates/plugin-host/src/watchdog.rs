//! The per-call timeout of in-process plugins.
//!
//! A thread inside a plugin cannot be interrupted, so an in-process call that outlives its
//! timeout stops the whole process with a message naming the critic (exit status 1) instead of
//! leaving the run frozen forever. Each calling thread owns a slot holding the deadline of its
//! call in progress; a background thread advances a coarse clock every [`TICK`] and checks the
//! slots. A call costs a thread-local lookup and two relaxed atomic stores: no clock reads.
//! Time a plugin spends waiting on a host service (`chat`) is not counted: the slot is paused
//! for it, and the deadline restarts when the service answers.

use std::cell::OnceCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The watchdog's clock resolution.
pub const TICK: Duration = Duration::from_millis(100);

/// Ticks since the watchdog started.
static NOW: AtomicU64 = AtomicU64::new(1);

struct Slot {
    /// The tick after which the call in progress has timed out; 0 when no call is in progress.
    deadline: AtomicU64,
    /// The call's budget in ticks, to restart the deadline after a pause.
    budget: AtomicU64,
    /// Which critic is being called: an index into [`names`].
    critic: AtomicU64,
}

fn slots() -> &'static Mutex<Vec<Arc<Slot>>> {
    static SLOTS: OnceLock<Mutex<Vec<Arc<Slot>>>> = OnceLock::new();
    SLOTS.get_or_init(Default::default)
}

/// Critic names and their timeouts, by index.
fn names() -> &'static Mutex<Vec<(String, Duration)>> {
    static NAMES: OnceLock<Mutex<Vec<(String, Duration)>>> = OnceLock::new();
    NAMES.get_or_init(Default::default)
}

thread_local! {
    static SLOT: OnceCell<Arc<Slot>> = const { OnceCell::new() };
}

fn with_slot<R>(f: impl FnOnce(&Slot) -> R) -> R {
    SLOT.with(|cell| {
        let slot = cell.get_or_init(|| {
            let slot =
                Arc::new(Slot { deadline: AtomicU64::new(0), budget: AtomicU64::new(0), critic: AtomicU64::new(0) });
            slots().lock().unwrap_or_else(|p| p.into_inner()).push(Arc::clone(&slot));
            slot
        });
        f(slot)
    })
}

fn start() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        std::thread::Builder::new()
            .name("critbench-watchdog".into())
            .spawn(watch_forever)
            .expect("the watchdog thread starts");
    });
}

fn watch_forever() {
    loop {
        std::thread::sleep(TICK);
        let now = NOW.fetch_add(1, Ordering::Relaxed) + 1;
        let late = slots().lock().unwrap_or_else(|p| p.into_inner()).iter().find_map(|slot| {
            let deadline = slot.deadline.load(Ordering::Relaxed);
            (deadline != 0 && now > deadline).then(|| slot.critic.load(Ordering::Relaxed))
        });
        if let Some(index) = late {
            let (name, timeout) = names().lock().unwrap_or_else(|p| p.into_inner())[index as usize].clone();
            note!(
                "error: critic `{name}` did not answer within {} s. It runs in-process, where a call cannot \
                 be interrupted, so the run stops here; run it with isolation = \"process\" (or \
                 --isolate-plugins) to turn such a call into a critic error and restart the plugin",
                timeout.as_secs_f64()
            );
            std::process::exit(1);
        }
    }
}

/// The timeout of one in-process critic.
#[derive(Debug)]
pub(crate) struct Watch {
    critic: u64,
    ticks: u64,
}

impl Watch {
    pub(crate) fn new(name: &str, timeout: Duration) -> Watch {
        start();
        let mut names = names().lock().unwrap_or_else(|p| p.into_inner());
        names.push((name.to_string(), timeout));
        let ticks = (timeout.as_nanos() / TICK.as_nanos()).max(1) as u64;
        Watch { critic: names.len() as u64 - 1, ticks }
    }

    /// Starts the clock of a call on this thread; it stops when the guard is dropped.
    pub(crate) fn begin(&self) -> Watching {
        with_slot(|slot| {
            slot.critic.store(self.critic, Ordering::Relaxed);
            slot.budget.store(self.ticks, Ordering::Relaxed);
            slot.deadline.store(NOW.load(Ordering::Relaxed) + self.ticks + 1, Ordering::Relaxed);
        });
        Watching
    }
}

/// A call being timed on this thread.
pub(crate) struct Watching;

impl Drop for Watching {
    fn drop(&mut self) {
        with_slot(|slot| slot.deadline.store(0, Ordering::Relaxed));
    }
}

/// Stops the clock of this thread's call (if any) while a host service works.
pub(crate) fn pause() -> Paused {
    let was_timing = with_slot(|slot| slot.deadline.swap(0, Ordering::Relaxed) != 0);
    Paused { was_timing }
}

pub(crate) struct Paused {
    was_timing: bool,
}

impl Drop for Paused {
    fn drop(&mut self) {
        if self.was_timing {
            with_slot(|slot| {
                let budget = slot.budget.load(Ordering::Relaxed);
                slot.deadline.store(NOW.load(Ordering::Relaxed) + budget + 1, Ordering::Relaxed);
            });
        }
    }
}
