//! The in-flight table of a child program: the requests written to it (or about to be), each
//! known by its index from the first one the table was given, grouped in batches as they came, each
//! with its answer once it has one; a batch goes back whole, in order, once all its requests are
//! answered.

use std::collections::VecDeque;

/// The requests `T` of one exchange with a program, and their answers `A`.
pub(crate) struct Flight<T, A> {
    /// The requests from index `base` on.
    requests: VecDeque<Asking<T, A>>,
    base: usize,
    /// The batches not handed back, the oldest first: how many requests each holds, and how many
    /// of those have no answer yet.
    batches: VecDeque<(usize, usize)>,
    /// The number of the oldest batch not handed back (batches are numbered from 0 as they come).
    first_batch: usize,
}

struct Asking<T, A> {
    request: T,
    answer: Option<A>,
    batch: usize,
}

impl<T, A> Default for Flight<T, A> {
    fn default() -> Self {
        Flight { requests: VecDeque::new(), base: 0, batches: VecDeque::new(), first_batch: 0 }
    }
}

impl<T, A> Flight<T, A> {
    /// Adds a batch of requests, after those the table holds.
    pub(crate) fn push_batch(&mut self, batch: impl IntoIterator<Item = T>) {
        let number = self.first_batch + self.batches.len();
        let before = self.requests.len();
        self.requests.extend(batch.into_iter().map(|request| Asking { request, answer: None, batch: number }));
        let count = self.requests.len() - before;
        self.batches.push_back((count, count));
    }

    /// The index the next request will have.
    pub(crate) fn len(&self) -> usize {
        self.base + self.requests.len()
    }

    /// The request of index `index`, which is not handed back yet.
    pub(crate) fn request(&self, index: usize) -> &T {
        &self.requests[index - self.base].request
    }

    /// The request of index `index`, to change, which is not handed back yet.
    pub(crate) fn request_mut(&mut self, index: usize) -> &mut T {
        &mut self.requests[index - self.base].request
    }

    pub(crate) fn is_answered(&self, index: usize) -> bool {
        index < self.base || self.requests[index - self.base].answer.is_some()
    }

    /// Gives request `index` its answer (a later one replaces an earlier).
    pub(crate) fn answer(&mut self, index: usize, answer: A) {
        let asking = &mut self.requests[index - self.base];
        if asking.answer.is_none() {
            self.batches[asking.batch - self.first_batch].1 -= 1;
        }
        asking.answer = Some(answer);
    }

    /// The requests without an answer, the oldest first.
    pub(crate) fn unanswered(&self) -> Vec<usize> {
        (self.base..self.len()).filter(|&index| !self.is_answered(index)).collect()
    }

    /// The oldest batch, each request with its answer, in its order, once each has its answer; the
    /// batch is then gone.
    pub(crate) fn take_answered(&mut self) -> Option<Vec<(A, T)>> {
        let &(count, 0) = self.batches.front()? else { return None };
        self.batches.pop_front();
        self.first_batch += 1;
        self.base += count;
        Some(self.requests.drain(..count).map(|asking| (asking.answer.expect("answered"), asking.request)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_goes_back_whole_in_order_once_every_request_of_it_is_answered() {
        let mut flight: Flight<&str, u32> = Flight::default();
        flight.push_batch(["a", "b"]);
        flight.push_batch(["c"]);
        assert_eq!((flight.len(), flight.unanswered()), (3, vec![0, 1, 2]));
        // The later batch is answered first: it waits for the one before it.
        flight.answer(2, 30);
        flight.answer(1, 20);
        assert_eq!(flight.take_answered(), None, "`a` has no answer yet");
        assert_eq!(flight.unanswered(), [0]);
        flight.answer(0, 10);
        assert_eq!(flight.take_answered(), Some(vec![(10, "a"), (20, "b")]));
        assert!(flight.is_answered(0), "a request handed back counts as answered");
        assert_eq!(*flight.request(2), "c");
        // An answer given twice counts once.
        flight.answer(2, 31);
        assert_eq!(flight.take_answered(), Some(vec![(31, "c")]));
        assert_eq!(flight.take_answered(), None);
        flight.push_batch(["d"]);
        assert_eq!((flight.len(), flight.unanswered()), (4, vec![3]), "indices go on from the first request");
    }
}
