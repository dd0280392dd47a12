//! An experiment file validated and resolved against the command line into an [`Experiment`].

use super::file::{ExperimentFile, OneOrMany};
use super::grid::policy_grid;
use super::*;
use crate::limits;

impl Experiment {
    /// Reads, validates and resolves an experiment file.
    pub fn load(path: &Path, overrides: &Overrides) -> Result<Experiment, EngineError> {
        let fail = |problem: ExperimentProblem| EngineError::Experiment { path: path.to_path_buf(), problem };
        let text = std::fs::read_to_string(path).map_err(|e| fail(ExperimentProblem::Unreadable(e)))?;
        let file: ExperimentFile = toml::from_str(&text).map_err(|error| {
            let line = error.span().map(|span| text[..span.start].lines().count().max(1));
            fail(ExperimentProblem::Toml { line, error: Box::new(error) })
        })?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Self::resolve(file, &base, overrides)
            .map(|mut experiment| {
                experiment.path = Some(path.to_path_buf());
                experiment
            })
            .map_err(|message| fail(ExperimentProblem::Invalid(message)))
    }

    fn resolve(file: ExperimentFile, base: &Path, overrides: &Overrides) -> Result<Experiment, String> {
        let relative = |p: &str| -> PathBuf {
            let path = PathBuf::from(p);
            if path.is_absolute() { path } else { normalize(&base.join(path)) }
        };
        if file.name.trim().is_empty() {
            return Err("`name` must not be empty".into());
        }
        // The name is a directory under reports/ (and labels the run): one path component.
        if file.name.contains(['/', '\\']) || file.name == "." || file.name == ".." {
            return Err(format!(
                "`name` = {:?} must not contain a path separator or be `.` or `..` (the run is written to \
                 reports/NAME unless `out` says otherwise; set `out` to write elsewhere)",
                file.name
            ));
        }
        let datasets: Vec<PathBuf> = if !overrides.datasets.is_empty() {
            overrides.datasets.clone()
        } else {
            match file.dataset {
                Some(OneOrMany::One(p)) => vec![relative(&p)],
                Some(OneOrMany::Many(ps)) if !ps.is_empty() => ps.iter().map(|p| relative(p)).collect(),
                Some(OneOrMany::Many(_)) => return Err("`dataset` is an empty list; give at least one path".into()),
                None => return Err("`dataset` is missing; give a path (or pass --dataset PATH)".into()),
            }
        };
        let backend = match file.backend.as_str() {
            "sim" => BackendKind::Sim,
            "scripted" => BackendKind::Scripted,
            "openai" => BackendKind::Openai,
            other => {
                return Err(format!("`backend` = \"{other}\" is not known; use \"sim\", \"scripted\" or \"openai\""));
            }
        };
        if backend == BackendKind::Openai && file.openai.is_none() {
            return Err("`backend` = \"openai\" needs an [openai] section with `base_url`".into());
        }
        let arm_names = file.arms.unwrap_or_else(|| Arm::DEFAULT.iter().map(|a| a.as_str().to_string()).collect());
        if arm_names.is_empty() {
            return Err("`arms` is empty; use any of \"feedback\", \"no-feedback\", \"single\"".into());
        }
        let mut arms = Vec::new();
        for name in &arm_names {
            let arm = Arm::parse(name).ok_or_else(|| {
                format!("`arms`: \"{name}\" is not an arm; use \"feedback\", \"no-feedback\", \"single\" or \"feedback+memory\"")
            })?;
            if arms.contains(&arm) {
                return Err(format!("`arms`: \"{name}\" is listed twice"));
            }
            arms.push(arm);
        }
        if file.epochs == 0 {
            return Err("`epochs` must be at least 1".into());
        }
        if file.epochs > limits::MAX_EPOCHS {
            return Err(limits::LimitError::Epochs(file.epochs.into()).to_string());
        }
        if file.critic_attempts == 0 {
            return Err("`critic_attempts` must be at least 1".into());
        }
        if file.critics.is_empty() {
            return Err("no critics: add at least one [[critics]] table with `name` and `plugin`".into());
        }
        let mut labels = BTreeSet::new();
        let mut critics = Vec::new();
        for (index, entry) in file.critics.into_iter().enumerate() {
            let at = format!("critics[{index}]");
            critics.push(critic_spec(&at, entry, &mut labels, overrides.isolate_plugins, &relative)?);
        }
        let mut evaluators = Vec::new();
        for (index, entry) in file.evaluators.into_iter().enumerate() {
            let at = format!("evaluators[{index}]");
            let (entry, pass_score, dim_target) = entry.split();
            let pass_score = pass_score.unwrap_or(Policy::default().pass_score);
            if let Some(value) = std::iter::once(pass_score).chain(dim_target).find(|v| !v.is_finite()) {
                return Err(format!("{at}: `pass_score` and `dim_target` must be finite numbers, not {value}"));
            }
            let spec = critic_spec(&at, entry, &mut labels, overrides.isolate_plugins, &relative)?;
            evaluators.push(EvaluatorSpec { spec, pass_score, dim_target });
        }
        let policies = policy_grid(&file.policy).map_err(|e| e.to_string())?;
        let judge = match file.judge {
            None => JudgeSettings { repeats: 1, datasets: None, out: None },
            Some(section) => {
                if !(1..=MAX_JUDGE_REPEATS).contains(&section.repeats) {
                    return Err(format!("[judge]: `repeats` must be from 1 to {MAX_JUDGE_REPEATS}"));
                }
                let datasets = match section.dataset {
                    None => None,
                    Some(OneOrMany::One(p)) => Some(vec![relative(&p)]),
                    Some(OneOrMany::Many(ps)) if !ps.is_empty() => Some(ps.iter().map(|p| relative(p)).collect()),
                    Some(OneOrMany::Many(_)) => {
                        return Err("[judge]: `dataset` is an empty list; give at least one path".into());
                    }
                };
                JudgeSettings { repeats: section.repeats, datasets, out: section.out.as_deref().map(relative) }
            }
        };
        let mut memory = crate::memory::MemoryConfig::default();
        if let Some(section) = file.memory {
            if let Some(fraction) = section.learn_fraction {
                if !(fraction > 0.0 && fraction < 1.0) {
                    return Err(format!("[memory]: `learn_fraction` = {fraction} must be between 0 and 1 (exclusive)"));
                }
                memory.learn_fraction = fraction;
            }
            if let Some(min_count) = section.min_count {
                if min_count == 0 {
                    return Err("[memory]: `min_count` must be at least 1".into());
                }
                memory.min_count = min_count;
            }
            memory.hints = section.hints;
        }
        let sweep = match file.sweep.as_deref() {
            _ if overrides.sweep.is_some() => overrides.sweep.expect("checked just above"),
            None | Some("replay") => Sweep::Replay,
            Some("direct") => Sweep::Direct,
            Some(other) => return Err(format!("`sweep` = \"{other}\"; use \"replay\" or \"direct\"")),
        };
        let on_bad_row = match (overrides.on_bad_row, file.on_bad_row.as_deref()) {
            (Some(mode), _) => mode,
            (None, None | Some("error")) => OnBadRow::Error,
            (None, Some("skip")) => OnBadRow::Skip,
            (None, Some(other)) => return Err(format!("`on_bad_row` = \"{other}\"; use \"error\" or \"skip\"")),
        };
        let out = match (&overrides.out, &file.out) {
            (Some(out), _) => out.clone(),
            (None, Some(out)) => relative(out),
            (None, None) => PathBuf::from("reports").join(&file.name),
        };
        let mut plugin_dirs = overrides.plugin_dirs.clone();
        plugin_dirs.extend(file.plugin_dirs.iter().map(|d| relative(d)));
        let mut openai = match file.openai {
            None => None,
            Some(section) => {
                let cache = if overrides.no_cache {
                    critbench_openai::CacheMode::Memory
                } else {
                    let path = match section.cache() {
                        Some(path) => relative(path),
                        None => out.parent().map(|p| p.join(CACHE_FILE)).unwrap_or_else(|| PathBuf::from(CACHE_FILE)),
                    };
                    critbench_openai::CacheMode::Disk { path }
                };
                let needs = critbench_openai::Requirements {
                    generator: backend == BackendKind::Openai,
                    seed: file.seed,
                    cache,
                };
                Some(section.resolve(needs).map_err(|e| e.to_string())?)
            }
        };
        let pricing =
            super::pricing::resolve_pricing(file.pricing.as_ref(), overrides.pricing.as_deref(), openai.as_mut())?;
        let budget = super::pricing::resolve_budget(file.budget, openai.as_ref())?;
        let prompts = file.prompts.unwrap_or_default();
        prompts.check().map_err(|e| e.to_string())?;
        let sequential = file
            .sequential
            .map(|section| super::sequential::resolve(section, &arms, &policies, &critics))
            .transpose()
            .map_err(|e| e.to_string())?;
        let mut adjudicate = adjudicated_arms(file.adjudicate.as_ref(), &arms, backend, openai.as_ref())?;
        adjudicate.sort_by_key(|arm| arms.iter().position(|a| a == arm));
        let experiment = Experiment {
            name: file.name,
            path: None,
            datasets,
            backend,
            arms,
            adjudicate,
            epochs: file.epochs,
            seed: file.seed,
            out,
            critics,
            evaluators,
            sweep,
            memory,
            policies,
            critic_attempts: file.critic_attempts,
            store_drafts: file.store_drafts || overrides.store_drafts,
            plugin_dirs,
            on_bad_row,
            limit: overrides.limit,
            // 0: decided by the run (every core, or `Experiment::blocking_jobs` when its loops
            // block on the model).
            jobs: overrides.jobs.unwrap_or(0),
            judge,
            openai,
            prompts,
            sequential,
            pricing,
            budget,
        };
        experiment.task_shape().check().map_err(|e| e.to_string())?;
        Ok(experiment)
    }
}

/// One `[[critics]]` or `[[evaluators]]` table, checked: `at` names it in messages, `labels` holds
/// the names given so far (a name labels the outputs, so it is given once).
fn critic_spec(
    at: &str,
    entry: super::file::CriticEntry,
    labels: &mut BTreeSet<String>,
    isolate_plugins: bool,
    relative: &impl Fn(&str) -> PathBuf,
) -> Result<CriticSpec, String> {
    if entry.name.trim().is_empty() {
        return Err(format!("{at}: `name` must not be empty"));
    }
    if !labels.insert(entry.name.clone()) {
        return Err(format!(
            "{at}: the name \"{}\" is used twice (critics and evaluators share names); names label the outputs",
            entry.name
        ));
    }
    let (plugin, command) = match (entry.plugin, entry.command) {
        (Some(_), Some(_)) => {
            return Err(format!("{at}: give either `plugin` or `command`, not both"));
        }
        (None, None) => {
            return Err(format!(
                "{at}: give `plugin` (a built-in name or a shared library) or `command` \
                     (an executable speaking the JSON-lines protocol)"
            ));
        }
        (Some(plugin), None) if plugin.trim().is_empty() => {
            return Err(format!("{at}: `plugin` must not be empty"));
        }
        (Some(plugin), None) => (plugin, None),
        (None, Some(command)) if command.first().is_none_or(|p| p.trim().is_empty()) => {
            return Err(format!("{at}: `command` must start with a program, e.g. [\"python3\", \"critic.py\"]"));
        }
        (None, Some(command)) => (String::new(), Some(command)),
    };
    let isolation = match entry.isolation.as_deref() {
        None if command.is_some() || isolate_plugins => IsolationMode::Process,
        None => IsolationMode::InProcess,
        Some(text) => IsolationMode::parse(text)
            .ok_or_else(|| format!("{at}: `isolation` = \"{text}\" is not known; use \"in-process\" or \"process\""))?,
    };
    if command.is_some() && isolation == IsolationMode::InProcess {
        return Err(format!("{at}: a `command` critic runs in its own process; remove `isolation` = \"in-process\""));
    }
    let timeout_s = entry.timeout_s.unwrap_or(critbench_plugin_host::DEFAULT_TIMEOUT.as_secs_f64());
    if !(timeout_s.is_finite() && timeout_s > 0.0 && timeout_s <= MAX_TIMEOUT_S) {
        return Err(format!("{at}: `timeout_s` = {timeout_s} must be more than 0 and at most {MAX_TIMEOUT_S}"));
    }
    if let Some((name, weight)) = entry.weights.iter().flatten().find(|(_, w)| !(w.is_finite() && **w >= 0.0)) {
        return Err(format!("{at}: `weights`: {name} = {weight} must be a finite number ≥ 0"));
    }
    let memory_mb = entry.memory_mb.unwrap_or(critbench_plugin_host::DEFAULT_MEMORY_MB);
    if !(MIN_MEMORY_MB..=MAX_MEMORY_MB).contains(&memory_mb) {
        return Err(format!("{at}: `memory_mb` = {memory_mb} must be from {MIN_MEMORY_MB} to {MAX_MEMORY_MB}"));
    }
    if entry.kinds.as_ref().is_some_and(Vec::is_empty) {
        return Err(format!(
            "{at}: `kinds` is empty, so no task would reach this critic; remove it to take every task"
        ));
    }
    let plugin = if critbench_plugin_host::SearchPath::is_path(&plugin) {
        relative(&plugin).display().to_string()
    } else {
        plugin
    };
    let config = match entry.config {
        None => serde_json::json!({}),
        Some(value) => serde_json::to_value(value).map_err(|e| format!("{at}: `config`: {e}"))?,
    };
    Ok(CriticSpec {
        name: entry.name,
        plugin,
        command,
        isolation,
        timeout_s,
        memory_mb,
        kinds: entry.kinds,
        config,
        weights: entry.weights,
    })
}

pub(crate) fn available_cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// Removes `.` and `name/..` pairs without touching the file system, so the manifest records
/// `datasets/x.jsonl` rather than `experiments/../datasets/x.jsonl`.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out: Vec<Component<'_>> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.last(), Some(Component::Normal(_))) => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    if out.is_empty() { PathBuf::from(".") } else { out.iter().collect() }
}

/// The arms `adjudicate` names: `true` every arm, `false` none, or a list of arms (each one of
/// `arms`). Refused where no adjudicator exists: the scripted backend has none, and the openai
/// backend needs an adjudicator model — which, conversely, is refused when no arm would use it.
fn adjudicated_arms(
    value: Option<&toml::Value>,
    arms: &[Arm],
    backend: BackendKind,
    openai: Option<&critbench_openai::ClientSettings>,
) -> Result<Vec<Arm>, String> {
    let chosen: Vec<Arm> = match value {
        None | Some(toml::Value::Boolean(false)) => Vec::new(),
        Some(toml::Value::Boolean(true)) => arms.to_vec(),
        Some(toml::Value::Array(items)) => {
            let mut chosen = Vec::new();
            for item in items {
                let name = item.as_str().ok_or_else(|| {
                    format!("`adjudicate`: {item} is not an arm name; give true, false or a list of arms")
                })?;
                let arm = Arm::parse(name)
                    .filter(|arm| arms.contains(arm))
                    .ok_or_else(|| format!("`adjudicate`: \"{name}\" is not one of the experiment's `arms`"))?;
                if chosen.contains(&arm) {
                    return Err(format!("`adjudicate`: \"{name}\" is listed twice"));
                }
                chosen.push(arm);
            }
            chosen
        }
        Some(other) => {
            return Err(format!(
                "`adjudicate` = {other}; give true (every arm), false, or a list of arms such as [\"feedback\"]"
            ));
        }
    };
    let has_model = openai.is_some_and(|settings| settings.roles.contains_key(&critbench_openai::Role::Adjudicator));
    match backend {
        BackendKind::Scripted if !chosen.is_empty() => Err("`adjudicate`: the scripted backend has no adjudicator \
                                                            model (it only replays the dataset's `drafts`); use the \
                                                            sim or openai backend"
            .into()),
        BackendKind::Openai if !chosen.is_empty() && !has_model => Err("`adjudicate` needs an adjudicator model: set \
                                                                        [openai.adjudicator] model = \"...\" (or \
                                                                        `adjudicator` in [openai] models)"
            .into()),
        _ if chosen.is_empty() && has_model => {
            Err("[openai]: an adjudicator model is set but no arm adjudicates; set \
                                                    `adjudicate = true` (or a list of arms), or remove the \
                                                    adjudicator model"
                .into())
        }
        _ => Ok(chosen),
    }
}
