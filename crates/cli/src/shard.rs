//! The shard a process of a sharded run runs: `--shard I/N`, a Slurm array task or a Kubernetes
//! Indexed Job's pod, and why it cannot be told ([`ShardError`]).

use critbench_storage::shards::Shard;

/// Why the shard this process runs cannot be told: each names the flag or variable at fault and
/// what to give instead.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ShardError {
    /// `--shard` is not `I/N` of a shard that can be.
    #[error(transparent)]
    Flag(#[from] critbench_storage::shards::ShardFlagError),
    /// A variable that names the shard holds no whole number.
    #[error("{name}={value} is not a whole number (it names this process's shard)")]
    NotANumber {
        /// The variable.
        name: &'static str,
        /// What it holds.
        value: String,
    },
    /// A Slurm array whose tasks are not a plain range.
    #[error(
        "the Slurm array {min}-{max} has {count} task(s), not {}: shards need a plain range; submit with \
         --array=0-{} or pass --shard I/N",
        max - min + 1,
        (*count).max(1) - 1
    )]
    SlurmStepped {
        /// `SLURM_ARRAY_TASK_MIN`.
        min: u32,
        /// `SLURM_ARRAY_TASK_MAX`.
        max: u32,
        /// `SLURM_ARRAY_TASK_COUNT`.
        count: u32,
    },
    /// A Slurm array task that does not say how many tasks the array has.
    #[error(
        "SLURM_ARRAY_TASK_ID={id} but neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MAX says how many \
         shards there are; submit with --array=0-(N-1) or pass --shard I/N"
    )]
    SlurmCount {
        /// `SLURM_ARRAY_TASK_ID`.
        id: u32,
    },
    /// A Slurm array task below the array's first.
    #[error("SLURM_ARRAY_TASK_ID={id} is below SLURM_ARRAY_TASK_MIN={min}")]
    SlurmBelowMin {
        /// `SLURM_ARRAY_TASK_ID`.
        id: u32,
        /// `SLURM_ARRAY_TASK_MIN`.
        min: u32,
    },
    /// A Slurm array task of no shard.
    #[error("SLURM_ARRAY_TASK_ID={id}: {source}")]
    SlurmRange {
        /// `SLURM_ARRAY_TASK_ID`.
        id: u32,
        /// Why there is no such shard.
        source: critbench_storage::shards::ShardRangeError,
    },
    /// A Kubernetes Indexed Job's pod that is not told how many shards there are.
    #[error(
        "JOB_COMPLETION_INDEX={index} names this pod's shard but not how many there are: pass --shards N or \
         set CRITBENCH_SHARDS (the Job's completions)"
    )]
    KubernetesCount {
        /// `JOB_COMPLETION_INDEX`.
        index: u32,
    },
    /// A Kubernetes Indexed Job's pod of no shard.
    #[error("JOB_COMPLETION_INDEX={index}: {source}")]
    KubernetesRange {
        /// `JOB_COMPLETION_INDEX`.
        index: u32,
        /// Why there is no such shard.
        source: critbench_storage::shards::ShardRangeError,
    },
    /// `--shards` without a Kubernetes Indexed Job to say which shard this is.
    #[error(
        "--shards {0} needs JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) to say which shard this is; \
         otherwise pass --shard I/{0}"
    )]
    NoIndex(u32),
}

/// The shard this process runs: `--shard I/N`; else a Slurm array task (`SLURM_ARRAY_TASK_ID`
/// with `SLURM_ARRAY_TASK_COUNT`, or with `SLURM_ARRAY_TASK_MIN`/`MAX`); else a Kubernetes
/// Indexed Job's pod (`JOB_COMPLETION_INDEX` with `--shards N` or `CRITBENCH_SHARDS`); else the
/// whole run. `env` looks a variable up.
pub(crate) fn shard_of_run(
    flag: Option<&str>,
    shards: Option<u32>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Shard>, ShardError> {
    if let Some(text) = flag {
        return Ok(Some(Shard::parse(text)?));
    }
    let number = |name: &'static str| -> Result<Option<u32>, ShardError> {
        match env(name).filter(|v| !v.trim().is_empty()) {
            None => Ok(None),
            Some(value) => value.trim().parse::<u32>().map(Some).map_err(|_| ShardError::NotANumber { name, value }),
        }
    };
    if let Some(id) = number("SLURM_ARRAY_TASK_ID")? {
        let min = number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
        let (max, count) = (number("SLURM_ARRAY_TASK_MAX")?, number("SLURM_ARRAY_TASK_COUNT")?);
        let count = match (max, count) {
            (Some(max), Some(count)) if max >= min && max - min + 1 != count => {
                return Err(ShardError::SlurmStepped { min, max, count });
            }
            (Some(max), _) if max >= min => max - min + 1,
            (None, Some(count)) => count,
            _ => return Err(ShardError::SlurmCount { id }),
        };
        if id < min {
            return Err(ShardError::SlurmBelowMin { id, min });
        }
        return Shard::new(id - min, count).map(Some).map_err(|source| ShardError::SlurmRange { id, source });
    }
    if let Some(index) = number("JOB_COMPLETION_INDEX")? {
        let count = match shards {
            Some(count) => count,
            None => number("CRITBENCH_SHARDS")?.ok_or(ShardError::KubernetesCount { index })?,
        };
        return Shard::new(index, count).map(Some).map_err(|source| ShardError::KubernetesRange { index, source });
    }
    if let Some(count) = shards {
        return Err(ShardError::NoIndex(count));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(flag: Option<&str>, shards: Option<u32>, vars: &[(&str, &str)]) -> Result<Option<Shard>, ShardError> {
        shard_of_run(flag, shards, |name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn the_shard_comes_from_the_flag_then_slurm_then_kubernetes() {
        let slurm = [("SLURM_ARRAY_TASK_ID", "2"), ("SLURM_ARRAY_TASK_COUNT", "3")];
        assert_eq!(shard(None, None, &[]).unwrap(), None);
        assert_eq!(shard(Some("1/4"), None, &slurm).unwrap(), Some(Shard { index: 1, count: 4 }));
        assert_eq!(shard(None, None, &slurm).unwrap(), Some(Shard { index: 2, count: 3 }));
        let ranged = [("SLURM_ARRAY_TASK_ID", "5"), ("SLURM_ARRAY_TASK_MIN", "4"), ("SLURM_ARRAY_TASK_MAX", "6")];
        assert_eq!(shard(None, None, &ranged).unwrap(), Some(Shard { index: 1, count: 3 }));
        let pod = [("JOB_COMPLETION_INDEX", "3"), ("CRITBENCH_SHARDS", "5")];
        assert_eq!(shard(None, None, &pod).unwrap(), Some(Shard { index: 3, count: 5 }));
        assert_eq!(shard(None, Some(4), &pod).unwrap(), Some(Shard { index: 3, count: 4 }));
    }

    #[test]
    fn bad_shard_settings_say_what_is_wrong() {
        let error = |flag, shards, vars: &[(&str, &str)]| shard(flag, shards, vars).unwrap_err().to_string();
        assert!(
            error(None, None, &[("SLURM_ARRAY_TASK_ID", "x")]).contains("SLURM_ARRAY_TASK_ID=x is not a whole number")
        );
        assert!(error(None, None, &[("SLURM_ARRAY_TASK_ID", "1")]).contains("neither SLURM_ARRAY_TASK_COUNT"));
        let stepped = [("SLURM_ARRAY_TASK_ID", "2"), ("SLURM_ARRAY_TASK_MAX", "4"), ("SLURM_ARRAY_TASK_COUNT", "3")];
        assert!(error(None, None, &stepped).contains("shards need a plain range"));
        assert!(
            error(None, None, &[("JOB_COMPLETION_INDEX", "1")]).contains("pass --shards N or set CRITBENCH_SHARDS")
        );
        assert!(error(None, Some(2), &[("JOB_COMPLETION_INDEX", "2")]).contains("out of range for 2 shard(s)"));
        assert!(error(None, Some(2), &[]).contains("needs JOB_COMPLETION_INDEX"));
        assert!(error(Some("2/2"), None, &[]).contains("--shard 2/2"));
    }
}
