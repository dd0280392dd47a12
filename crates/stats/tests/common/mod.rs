//! What the stats crate's integration tests share: a small seeded generator and simulated tasks.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// SplitMix64: a seeded stream, so every simulated run is the same on every machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform on [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One task's paired difference over `epochs` epochs: the mean of (A passed − B passed), with A
/// passing at `p_a` and B at `p_b` on each epoch.
pub fn task_difference(rng: &mut Rng, epochs: u32, p_a: f64, p_b: f64) -> f64 {
    let mut sum = 0i32;
    for _ in 0..epochs {
        sum += i32::from(rng.unit() < p_a) - i32::from(rng.unit() < p_b);
    }
    f64::from(sum) / f64::from(epochs)
}

/// `tasks` tasks of varied difficulty (a task's pass rate uniform on [0, 1] for B) where A's pass
/// rate is B's plus `lift`, clamped to [0, 1].
pub fn population(rng: &mut Rng, tasks: usize, epochs: u32, lift: f64) -> Vec<f64> {
    (0..tasks)
        .map(|_| {
            let p_b = rng.unit();
            task_difference(rng, epochs, (p_b + lift).clamp(0.0, 1.0), p_b)
        })
        .collect()
}

/// The repository root (two levels above this crate).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf()
}

/// The Python that has tests/python/requirements.txt: `$CRITBENCH_PYTHON` (a relative path is
/// taken from the repository root), else `python3`; as the CLI's tests find it.
pub fn python() -> Command {
    match std::env::var_os("CRITBENCH_PYTHON").filter(|v| !v.is_empty()) {
        Some(value) => {
            let path = PathBuf::from(&value);
            if path.components().count() > 1 && path.is_relative() {
                Command::new(repo().join(path))
            } else {
                Command::new(value)
            }
        }
        None => Command::new("python3"),
    }
}
