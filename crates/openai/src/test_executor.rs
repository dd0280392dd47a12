//! The executor a test polls futures with: the calling thread, parking between wakes.

use std::sync::Arc;
use std::time::Duration;

/// Polls every future on this thread until all are done, parking between wakes: the executor a
/// loop worker is, reduced to its core.
pub fn drive_on_this_thread<T>(
    mut futures: Vec<std::pin::Pin<Box<dyn std::future::Future<Output = T> + '_>>>,
) -> Vec<T> {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = std::task::Context::from_waker(&waker);
    let mut done: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    while done.iter().any(Option::is_none) {
        for (future, slot) in futures.iter_mut().zip(done.iter_mut()).filter(|(_, slot)| slot.is_none()) {
            if let std::task::Poll::Ready(value) = future.as_mut().poll(&mut context) {
                *slot = Some(value);
            }
        }
        std::thread::park_timeout(Duration::from_millis(50));
    }
    done.into_iter().map(Option::unwrap).collect()
}
