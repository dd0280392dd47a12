//! A worker's batch thread ([`CriticBatches`]): the batches of critiques its loops ask, sent to
//! their critics in order while the worker's other loops advance.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, mpsc};

use crate::run::round::Batch;

/// A worker's way to its batch thread, which sends the batches handed over to their critics, in
/// order, and says each answered, in order: the worker's loops then advance while a batch is out.
/// A batch for one critic alone is written to its process as soon as it is handed over, while the
/// batches before it wait for answers ([`CriticInstance::call_batches`]); one for several critics
/// is sent once those are answered.
///
/// [`CriticInstance::call_batches`]: critbench_plugin_host::CriticInstance::call_batches
pub struct CriticBatches {
    handed: mpsc::Sender<Arc<Batch>>,
    answered: mpsc::Receiver<()>,
    /// Wakes the batch thread while it waits for a critic's answers, for a batch handed over.
    nudge: Arc<Mutex<Option<critbench_plugin_host::Nudge>>>,
}

impl CriticBatches {
    /// Starts a worker's batch thread in `threads`, when one of `critics` takes several requests
    /// at once (a child process speaking the pipelined form). `None` when none does, or when the
    /// thread cannot start: the worker then sends its batches itself, which records the same.
    /// The thread ends when the worker lets go of the value.
    pub fn start<'scope, 'env>(
        threads: &'scope std::thread::Scope<'scope, 'env>,
        critics: &'env [critbench_plugin_host::CriticInstance],
    ) -> Option<CriticBatches> {
        if !critics.iter().any(|critic| critic.pipelined()) {
            return None;
        }
        let (handed, to_send) = mpsc::channel::<Arc<Batch>>();
        let (sent, answered) = mpsc::channel::<()>();
        let nudge = Arc::new(Mutex::new(None));
        let nudge_with = Arc::clone(&nudge);
        std::thread::Builder::new()
            .name("critbench-critic-batches".into())
            .spawn_scoped(threads, move || {
                // A batch taken while others were out, that goes to another critic, or to several.
                let mut stash: Option<Arc<Batch>> = None;
                while let Some(batch) = stash.take().or_else(|| to_send.recv().ok()) {
                    match batch.critic() {
                        Some(critic) => {
                            let mut handed = Handed {
                                to_send: &to_send,
                                sent: &sent,
                                critic,
                                first: Some(batch),
                                out: VecDeque::new(),
                                stash: &mut stash,
                                worker_gone: false,
                                nudge: &nudge_with,
                            };
                            critics[critic].call_batches(&mut handed);
                            *nudge_with.lock().unwrap_or_else(|e| e.into_inner()) = None;
                            if handed.worker_gone {
                                return;
                            }
                        }
                        None => {
                            batch.send(critics);
                            if sent.send(()).is_err() {
                                return;
                            }
                        }
                    }
                }
            })
            .ok()?;
        Some(CriticBatches { handed, answered, nudge })
    }

    pub(super) fn hand_over(&self, batch: &Arc<Batch>) {
        self.handed.send(Arc::clone(batch)).expect("the batch thread runs while its worker does");
        // After the send: a thread that looked before it is woken to look again.
        if let Some(nudge) = &*self.nudge.lock().unwrap_or_else(|e| e.into_inner()) {
            nudge.nudge();
        }
    }

    /// Waits until the oldest batch handed over and not yet waited for has its answers.
    pub(super) fn wait(&self) {
        // The thread ends only when its worker lets it go, or by a panic (which its scope rethrows).
        self.answered.recv().expect("the batch thread runs while its worker does");
    }
}

/// The batches a worker hands its batch thread, as one critic takes them
/// ([`CriticInstance::call_batches`](critbench_plugin_host::CriticInstance::call_batches)): every
/// batch for that critic alone that is ready, in the order they came. A batch for another critic
/// or for several waits in `stash` until the critic has answered those taken.
struct Handed<'a> {
    to_send: &'a mpsc::Receiver<Arc<Batch>>,
    sent: &'a mpsc::Sender<()>,
    critic: usize,
    first: Option<Arc<Batch>>,
    /// The batches taken and not answered, the oldest first.
    out: VecDeque<Arc<Batch>>,
    stash: &'a mut Option<Arc<Batch>>,
    /// The worker let go of its batch thread.
    worker_gone: bool,
    nudge: &'a Mutex<Option<critbench_plugin_host::Nudge>>,
}

impl critbench_plugin_host::Batches for Handed<'_> {
    fn next(&mut self) -> Option<Vec<(critbench_plugin_host::Asked, critbench_plugin_host::services::CallScope)>> {
        let batch = match self.first.take() {
            Some(batch) => batch,
            None if self.stash.is_some() || self.worker_gone => return None,
            None => {
                let batch = self.to_send.try_recv().ok()?;
                if batch.critic() != Some(self.critic) {
                    *self.stash = Some(batch);
                    return None;
                }
                batch
            }
        };
        let requests = batch.take_requests();
        self.out.push_back(batch);
        Some(requests)
    }

    fn answered(
        &mut self,
        answers: Vec<(Result<String, critbench_plugin_host::CallError>, critbench_plugin_host::services::CallScope)>,
    ) {
        let batch = self.out.pop_front().expect("answers come for the batches taken, in order");
        batch.answer(answers);
        if self.sent.send(()).is_err() {
            self.worker_gone = true;
        }
    }

    fn nudge_with(&mut self, nudge: critbench_plugin_host::Nudge) {
        *self.nudge.lock().unwrap_or_else(|e| e.into_inner()) = Some(nudge);
    }
}
