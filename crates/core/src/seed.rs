//! Deterministic seeding. Every random choice is drawn from a generator seeded by *what* is being
//! decided (run seed, task, epoch, round, purpose), never from a stream shared between threads, so
//! results do not depend on scheduling or on `--jobs`.

/// Identifies one random decision point.
#[derive(Clone, Copy, Debug)]
pub struct SeedKey<'a> {
    /// The run's seed.
    pub seed: u64,
    /// The task the decision belongs to.
    pub task_id: &'a str,
    /// The epoch (repeat) of the loop.
    pub epoch: u32,
    /// The round of the loop.
    pub round: u32,
    /// What the randomness is for, e.g. `"generate"` or `"revise"`.
    pub purpose: &'a str,
}

/// Mixes a key into a 64-bit seed (FNV-1a over the fields, then a SplitMix64 finalizer).
pub fn derive_seed(key: &SeedKey<'_>) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for byte in bytes {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // A separator so ("ab","c") and ("a","bc") differ.
        hash ^= 0xff;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    };
    feed(&key.seed.to_le_bytes());
    feed(key.task_id.as_bytes());
    feed(&key.epoch.to_le_bytes());
    feed(&key.round.to_le_bytes());
    feed(key.purpose.as_bytes());
    splitmix(hash)
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A small, fast, seedable generator (xoshiro256++). Not for cryptography.
#[derive(Clone, Debug)]
pub struct Rng {
    state: [u64; 4],
}

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        let mut s = seed;
        let mut next = || {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            splitmix(s)
        };
        Rng { state: [next(), next(), next(), next()] }
    }

    /// A generator seeded by a decision point (see [`derive_seed`]).
    pub fn from_key(key: &SeedKey<'_>) -> Self {
        Rng::new(derive_seed(key))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let [s0, s1, s2, s3] = &mut self.state;
        let result = s0.wrapping_add(*s3).rotate_left(23).wrapping_add(*s0);
        let t = *s1 << 17;
        *s2 ^= *s0;
        *s3 ^= *s1;
        *s1 ^= *s2;
        *s0 ^= *s3;
        *s2 ^= t;
        *s3 = s3.rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Uniform in `0..n`; `n` must be positive.
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "Rng::below needs a positive bound");
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// Uniform in `low..=high`.
    pub fn between(&mut self, low: usize, high: usize) -> usize {
        low + self.below(high - low + 1)
    }

    /// A uniformly chosen element, or `None` for an empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() { None } else { Some(&items[self.below(items.len())]) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(task_id: &str, round: u32) -> SeedKey<'_> {
        SeedKey { seed: 7, task_id, epoch: 0, round, purpose: "revise" }
    }

    #[test]
    fn same_key_same_seed_and_different_keys_differ() {
        assert_eq!(derive_seed(&key("a", 1)), derive_seed(&key("a", 1)));
        assert_ne!(derive_seed(&key("a", 1)), derive_seed(&key("a", 2)));
        assert_ne!(derive_seed(&key("a", 1)), derive_seed(&key("b", 1)));
        let ab = SeedKey { task_id: "ab", purpose: "c", ..key("", 0) };
        let a_bc = SeedKey { task_id: "a", purpose: "bc", ..key("", 0) };
        assert_ne!(derive_seed(&ab), derive_seed(&a_bc));
    }

    #[test]
    fn unit_and_below_stay_in_range_and_spread() {
        let mut rng = Rng::new(42);
        let mut counts = [0usize; 4];
        for _ in 0..40_000 {
            let u = rng.unit();
            assert!((0.0..1.0).contains(&u));
            counts[rng.below(4)] += 1;
        }
        for count in counts {
            assert!((9_000..11_000).contains(&count), "{counts:?}");
        }
    }
}
