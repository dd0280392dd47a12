//! `[pricing]` (and `--pricing FILE`, a shared price list of the same shape) and `[budget]`:
//! what each model's tokens cost, in one currency, and what a run may spend. See
//! docs/REFERENCE.md, `[pricing]` and `[budget]`.

use critbench_openai::{Budget, ClientSettings, Price, Role};

use super::file::BudgetSection;
use super::*;

/// The currency of a price list that names none.
pub const DEFAULT_CURRENCY: &str = "USD";

/// The highest price per million tokens a price list may give: one unit of its currency per token,
/// far above any model's price in any currency, and low enough that no run's cost overflows.
pub const MAX_PRICE_PER_MTOK: f64 = 1_000_000.0;

/// The prices a run uses, in one currency: the models its roles name that have a price.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pricing {
    /// What the prices are in (`USD` unless the list says).
    pub currency: String,
    /// Each priced model's price, by model name.
    pub models: BTreeMap<String, Price>,
}

/// A price list (`[pricing]` or `--pricing FILE`) or a `[budget]` table that cannot be used;
/// `at` names the price list in every message.
#[derive(Debug, thiserror::Error)]
pub enum PricingError {
    /// The `--pricing` file cannot be read.
    #[error("{at}: cannot read it: {source}")]
    Unreadable {
        /// `--pricing FILE`.
        at: String,
        /// Why.
        source: std::io::Error,
    },
    /// The `--pricing` file is not TOML; `line` is 1-based.
    #[error("{at}{}: {}", line.map(|l| format!(", line {l}")).unwrap_or_default(), error.message())]
    Toml {
        /// `--pricing FILE`.
        at: String,
        /// The line at fault, when known.
        line: Option<usize>,
        /// The parser's error.
        #[source]
        error: Box<toml::de::Error>,
    },
    /// A `currency` that is not a currency's name.
    #[error("{at}: `currency` = {value} must be a currency's name, such as \"USD\" (at most 16 characters)")]
    Currency {
        /// The price list.
        at: String,
        /// The value given.
        value: toml::Value,
    },
    /// A key other than `currency` whose value is not a model's table.
    #[error(
        "{at}: unknown field `{key}` (a value, not a model's table): expected one of `currency`, or a \
         [pricing.\"MODEL\"] table with input_per_mtok and output_per_mtok"
    )]
    NotAModel {
        /// The price list.
        at: String,
        /// The key.
        key: String,
    },
    /// A model's table that is not a price.
    #[error("{at} \"{model}\": {}", error.message())]
    Price {
        /// The price list.
        at: String,
        /// The model.
        model: String,
        /// Why it is not a price.
        #[source]
        error: Box<toml::de::Error>,
    },
    /// A rate that is negative, not finite, or above `MAX_PRICE_PER_MTOK` (1,000,000).
    #[error(
        "{at} \"{model}\": `{rate_name}` = {} must be a price per million tokens from 0 to 1000000 (0 prices a \
         local server; the dearest models cost a few hundred)",
        as_written(*rate)
    )]
    Rate {
        /// The price list.
        at: String,
        /// The model.
        model: String,
        /// The rate's key.
        rate_name: &'static str,
        /// The rate given.
        rate: f64,
    },
    /// The experiment's table and the `--pricing` file name different currencies.
    #[error("{there} prices in {before} but {at} in {named}: a run's prices are in one currency")]
    Currencies {
        /// The price list read first.
        there: String,
        /// Its currency.
        before: String,
        /// The price list read second.
        at: String,
        /// Its currency.
        named: String,
    },
    /// A `[budget]` amount that is not above 0.
    #[error("[budget] `{key}` = {value} must be an amount of money above 0")]
    Amount {
        /// `max_cost` or `roles.ROLE`.
        key: String,
        /// The amount given.
        value: f64,
    },
    /// A `[budget] roles` key that is not a role.
    #[error("[budget] roles: unknown role `{0}`; the roles are generator, reviser, judge, adjudicator")]
    UnknownRole(String),
    /// A `[budget]` with neither `max_cost` nor `roles`.
    #[error("[budget] sets no budget: give `max_cost`, or `roles = {{ generator = … }}`")]
    NoBudget,
    /// A `[budget]` in an experiment without model calls.
    #[error(
        "[budget] counts what model calls cost, and this experiment makes none: it has no [openai] table (the sim \
         and scripted backends are free)"
    )]
    NoModelCalls,
    /// A `[budget] roles` key for a role without a model.
    #[error("[budget] roles.{0}: the experiment has no {0} model in [openai]")]
    NoModel(Role),
    /// A budget on calls to a model without a price.
    #[error(
        "[budget] {}, but the {role} model `{model}` has no price: add [pricing.\"{model}\"] with input_per_mtok and \
         output_per_mtok (0 and 0 for a local server)",
        if *max_cost { "max_cost counts every role's calls".to_string() } else { format!("roles.{role}") }
    )]
    Unpriced {
        /// The role whose calls are counted.
        role: Role,
        /// Its model.
        model: String,
        /// Whether `max_cost` counts it (else `roles.ROLE`).
        max_cost: bool,
    },
}

/// A number as a TOML file may write it: `1e308`, not its 309 digits.
fn as_written(value: f64) -> String {
    if value.is_finite() && value.abs() >= 1e9 { format!("{value:e}") } else { value.to_string() }
}

/// A price list as written: `currency` and one table per model.
struct PriceList {
    currency: Option<String>,
    models: BTreeMap<String, Price>,
}

/// Reads a price list; `at` names it in messages (`[pricing]`, or the `--pricing` file).
fn price_list(table: &toml::Table, at: &str) -> Result<PriceList, PricingError> {
    let mut list = PriceList { currency: None, models: BTreeMap::new() };
    for (key, value) in table {
        if key == "currency" {
            let currency = value.as_str().map(str::trim).filter(|c| !c.is_empty() && c.len() <= 16);
            let currency =
                currency.ok_or_else(|| PricingError::Currency { at: at.to_string(), value: value.clone() })?;
            list.currency = Some(currency.to_string());
            continue;
        }
        let table = value.as_table().ok_or_else(|| PricingError::NotAModel { at: at.to_string(), key: key.clone() })?;
        let price: Price = toml::Value::Table(table.clone()).try_into().map_err(|error: toml::de::Error| {
            PricingError::Price { at: at.to_string(), model: key.clone(), error: Box::new(error) }
        })?;
        let rates = [("input_per_mtok", Some(price.input_per_mtok)), ("output_per_mtok", Some(price.output_per_mtok))];
        for (name, rate) in rates.into_iter().chain([("cached_input_per_mtok", price.cached_input_per_mtok)]) {
            if let Some(rate) = rate.filter(|r| !(0.0..=MAX_PRICE_PER_MTOK).contains(r)) {
                return Err(PricingError::Rate { at: at.to_string(), model: key.clone(), rate_name: name, rate });
            }
        }
        list.models.insert(key.clone(), price);
    }
    Ok(list)
}

/// Reads `--pricing FILE`: a TOML file shaped like the `[pricing]` table.
fn price_file(path: &Path) -> Result<PriceList, PricingError> {
    let at = format!("--pricing {}", path.display());
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(source) => return Err(PricingError::Unreadable { at, source }),
    };
    let table: toml::Table = match toml::from_str(&text) {
        Ok(table) => table,
        Err(error) => {
            let line = error.span().map(|span| text[..span.start].lines().count().max(1));
            return Err(PricingError::Toml { at, line, error: Box::new(error) });
        }
    };
    price_list(&table, &at)
}

/// The run's prices: the file's over the experiment's table, model by model, given to each role
/// of `openai` whose model has one. `None` when neither gives any.
pub(super) fn resolve_pricing(
    table: Option<&toml::Table>,
    file: Option<&Path>,
    openai: Option<&mut ClientSettings>,
) -> Result<Option<Pricing>, PricingError> {
    let mut lists = Vec::new();
    if let Some(table) = table {
        lists.push(("[pricing]".to_string(), price_list(table, "[pricing]")?));
    }
    if let Some(path) = file {
        lists.push((format!("--pricing {}", path.display()), price_file(path)?));
    }
    if lists.is_empty() {
        return Ok(None);
    }
    let mut currency: Option<(String, String)> = None;
    let mut models = BTreeMap::new();
    for (at, list) in lists {
        if let Some(named) = list.currency {
            if let Some((before, there)) = &currency
                && *before != named
            {
                return Err(PricingError::Currencies { there: there.clone(), before: before.clone(), at, named });
            }
            currency = Some((named, at));
        }
        models.extend(list.models);
    }
    let currency = currency.map_or_else(|| DEFAULT_CURRENCY.to_string(), |(currency, _)| currency);
    let mut used = BTreeMap::new();
    if let Some(openai) = openai {
        for settings in openai.roles.values_mut() {
            settings.price = models.get(&settings.model).copied();
            if let Some(price) = settings.price {
                used.insert(settings.model.clone(), price);
            }
        }
        openai.currency = Some(currency.clone());
    }
    Ok(Some(Pricing { currency, models: used }))
}

/// `[budget]`, checked: positive amounts, known roles, and a price for every model whose calls
/// it counts (a budget cannot be kept on calls without a cost).
pub(super) fn resolve_budget(
    section: Option<BudgetSection>,
    openai: Option<&ClientSettings>,
) -> Result<Option<Budget>, PricingError> {
    let Some(section) = section else { return Ok(None) };
    let amount = |name: &str, value: f64| {
        if value.is_finite() && value > 0.0 {
            Ok(value)
        } else {
            Err(PricingError::Amount { key: name.to_string(), value })
        }
    };
    let max_cost = section.max_cost.map(|value| amount("max_cost", value)).transpose()?;
    let mut roles = BTreeMap::new();
    for (name, value) in &section.roles {
        let role = Role::parse(name).ok_or_else(|| PricingError::UnknownRole(name.clone()))?;
        roles.insert(role, amount(&format!("roles.{name}"), *value)?);
    }
    if max_cost.is_none() && roles.is_empty() {
        return Err(PricingError::NoBudget);
    }
    let openai = openai.ok_or(PricingError::NoModelCalls)?;
    let covered: Vec<Role> =
        if max_cost.is_some() { openai.roles.keys().copied().collect() } else { roles.keys().copied().collect() };
    for role in covered {
        let Some(settings) = openai.roles.get(&role) else {
            return Err(PricingError::NoModel(role));
        };
        if settings.price.is_none() {
            return Err(PricingError::Unpriced { role, model: settings.model.clone(), max_cost: max_cost.is_some() });
        }
    }
    Ok(Some(Budget { max_cost, roles }))
}
