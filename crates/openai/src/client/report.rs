//! The client's report, as `manifest.json` records it, made from its counters.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::Ordering;

use super::counters::RoleCounters;
use super::{Client, lock};
use crate::cache::CACHE_FORMAT;
use crate::settings::CacheMode;
use crate::usage::{
    BudgetReport, CacheReport, CallsReport, ConcurrencyReport, CostReport, EndpointReport, HttpReport, RoleCalls,
    RoleCost, RoleWaiting, ServerReport, TaskRoleReport, TokensReport, UsageReport, WaitingReport,
};

impl Client {
    /// What the manifest records: endpoints and their servers, models, cache, calls, tokens,
    /// money, latency and waiting, the concurrency limit's history. Never a key, a URL's
    /// credentials or its query.
    pub fn report(&self) -> UsageReport {
        let endpoints: Vec<EndpointReport> = {
            let rotation = self.lock_rotation();
            let urls: Vec<String> = self.endpoints.iter().map(|e| e.display.clone()).collect();
            let stats = rotation.stats(&urls, self.now());
            stats
                .into_iter()
                .zip(&self.settings.endpoints)
                .zip(&self.endpoints)
                .enumerate()
                .map(|(i, ((stats, settings), endpoint))| EndpointReport {
                    url: stats.url,
                    calls: stats.calls,
                    failures: stats.failures,
                    times_out: stats.times_out,
                    out_of_rotation_ms: stats.out_of_rotation_ms,
                    in_rotation: stats.in_rotation,
                    pauses: stats.pauses,
                    paused_ms: stats.paused_ms,
                    // A configured key is always set: a missing one stops the client at start.
                    api_key_env: settings.api_key_env.clone(),
                    api_key_set: settings.api_key_env.is_some(),
                    concurrency: rotation.aimd(i).report(),
                    server: ServerReport::from(&endpoint.server),
                })
                .collect()
        };
        // One endpoint: its limit's story, as before there could be several. Several: the sums,
        // each endpoint's story under `endpoints`.
        let concurrency = if endpoints.len() == 1 {
            endpoints[0].concurrency.clone()
        } else {
            let sum = |f: fn(&ConcurrencyReport) -> u64| endpoints.iter().map(|e| f(&e.concurrency)).sum::<u64>();
            ConcurrencyReport {
                max: sum(|c| c.max),
                last: sum(|c| c.last),
                lowest: sum(|c| c.lowest),
                changes: sum(|c| c.changes),
                history: Vec::new(),
                history_truncated: false,
            }
        };
        let roles = lock(&self.roles);
        let http = lock(&self.http_counts);
        let carried = lock(&self.carried).clone();
        let sum = |f: fn(&RoleCounters) -> u64| roles.values().map(f).sum::<u64>();
        let seconds = |us: u64| (us as f64 / 1000.0).round() / 1000.0;
        let per_role: BTreeMap<String, RoleCalls> = roles
            .iter()
            .map(|(role, c)| {
                (
                    role.as_str().to_string(),
                    RoleCalls {
                        calls: c.calls,
                        cache_hits: c.cache_hits,
                        shared_in_flight: c.shared,
                        model_calls: c.model_calls,
                        failures: c.failures,
                        refused_by_token_cap: c.refused,
                        tokens_in: c.tokens_in,
                        tokens_out: c.tokens_out,
                        cached_tokens_in: c.cached_in,
                        truncated: c.truncated,
                        model_tokens_in: c.paid_in,
                        model_tokens_out: c.paid_out,
                    },
                )
            })
            .collect();
        // Money, per role that was configured: what its model calls cost, and what every answer
        // it got would have cost had none come from the cache.
        let mut cost_roles = BTreeMap::new();
        let (mut spent_total, mut answers_total, mut priced) = (0.0, 0.0, true);
        for (role, settings) in &self.settings.roles {
            let counters = roles.get(role);
            let spent = self.spent(*role, counters, &carried);
            let answers =
                settings.price.map(|p| counters.map_or(0.0, |c| p.cost(c.tokens_in, c.cached_in, c.tokens_out)));
            spent_total += spent.unwrap_or(0.0);
            answers_total += answers.unwrap_or(0.0);
            priced &= spent.is_some();
            cost_roles.insert(
                role.as_str().to_string(),
                RoleCost {
                    model: settings.model.clone(),
                    priced: spent.is_some(),
                    spent,
                    answers,
                    carried_over: carried.get(role).copied(),
                },
            );
        }
        let any_price = self.settings.roles.values().any(|r| r.price.is_some());
        let latency = roles.iter().map(|(role, c)| (role.as_str().to_string(), c.latency.report())).collect();
        let waiting_by_role = roles
            .iter()
            .map(|(role, c)| {
                (
                    role.as_str().to_string(),
                    RoleWaiting {
                        server_s: seconds(c.server_us),
                        queue_s: seconds(c.queue_us),
                        backoff_s: seconds(c.backoff_us),
                    },
                )
            })
            .collect();
        UsageReport {
            endpoint: self.endpoints.iter().map(|e| e.display.as_str()).collect::<Vec<_>>().join(", "),
            redacted: self.redacted.load(Ordering::Relaxed),
            endpoints,
            api_key_env: self.settings.endpoints[0].api_key_env.clone(),
            api_key_set: self.settings.endpoints[0].api_key_env.is_some(),
            models: self.settings.roles.iter().map(|(r, s)| (r.as_str().to_string(), s.model.clone())).collect(),
            cache: CacheReport {
                mode: match self.settings.cache {
                    CacheMode::Disk { .. } => "disk",
                    CacheMode::Memory => "memory",
                }
                .to_string(),
                path: self.cache.path().map(Path::to_path_buf),
                format: CACHE_FORMAT,
                hits: sum(|c| c.cache_hits),
                shared_in_flight: sum(|c| c.shared),
                misses: sum(|c| c.model_calls),
                errors: self.cache_write_errors.load(Ordering::Relaxed),
            },
            calls: CallsReport {
                total: sum(|c| c.calls),
                model_calls: sum(|c| c.model_calls),
                failures: sum(|c| c.failures),
                by_role: per_role,
            },
            http: HttpReport {
                requests: http.requests,
                ok: http.ok,
                retries: http.retries,
                status_429: http.status_429,
                status_503: http.status_503,
                status_5xx_other: http.status_5xx_other,
                status_4xx: http.status_4xx_other,
                timeouts: http.timeouts,
                connection_errors: http.connection_errors,
                malformed_bodies: http.malformed,
            },
            tokens: TokensReport {
                tokens_in: sum(|c| c.tokens_in),
                tokens_out: sum(|c| c.tokens_out),
                cached_in: sum(|c| c.cached_in),
                model_in: sum(|c| c.paid_in),
                model_out: sum(|c| c.paid_out),
                total: self.tokens_used.load(Ordering::Relaxed),
                max_tokens_total: self.settings.max_tokens_total,
                cap_reached: self.cap_reached(),
                refused_calls: sum(|c| c.refused),
            },
            cost: CostReport {
                currency: self.settings.currency.clone(),
                priced: any_price && priced,
                spent: any_price.then_some(spent_total),
                answers: any_price.then_some(answers_total),
                saved_by_cache: any_price
                    .then(|| (answers_total - (spent_total - carried.values().sum::<f64>())).max(0.0)),
                by_role: cost_roles,
            },
            latency,
            waiting: WaitingReport {
                server_s: seconds(sum(|c| c.server_us)),
                queue_s: seconds(sum(|c| c.queue_us)),
                backoff_s: seconds(sum(|c| c.backoff_us)),
                by_role: waiting_by_role,
            },
            concurrency,
            budget: (!self.budget.is_empty()).then(|| BudgetReport {
                max_cost: self.budget.max_cost,
                roles: self.budget.roles.iter().map(|(r, v)| (r.as_str().to_string(), *v)).collect(),
                stopped_by: self.stop_now(&roles, &carried),
            }),
            by_task: self.settings.track_tasks.then(|| self.task_report()),
            metered: None,
        }
    }

    /// Each task's distinct requests per role: requests, tokens, their cost, the server's time.
    fn task_report(&self) -> BTreeMap<String, BTreeMap<String, TaskRoleReport>> {
        let tasks = lock(&self.tasks);
        tasks
            .iter()
            .map(|(task, usage)| {
                let roles = usage
                    .roles
                    .iter()
                    .map(|(role, r)| {
                        let price = self.settings.roles.get(role).and_then(|s| s.price);
                        let report = TaskRoleReport {
                            requests: r.requests,
                            tokens_in: r.tokens_in,
                            tokens_out: r.tokens_out,
                            cost: price.map(|p| p.cost(r.tokens_in, r.cached_in, r.tokens_out)),
                            server_s: (r.server_us as f64 / 1000.0).round() / 1000.0,
                            timed: r.timed,
                        };
                        (role.as_str().to_string(), report)
                    })
                    .collect();
                (task.clone(), roles)
            })
            .collect()
    }
}
