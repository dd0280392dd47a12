//! `[pricing]` (and `--pricing FILE`, a shared price list of the same shape) and `[budget]`:
//! what each model's tokens cost, in one currency, and what a run may spend. See
//! docs/REFERENCE.md, `[pricing]` and `[budget]`.

use critbench_openai::{Budget, ClientSettings, Price, Role};

use super::file::BudgetSection;
use super::*;

/// The currency of a price list that names none.
pub const DEFAULT_CURRENCY: &str = "USD";

/// The prices a run uses, in one currency: the models its roles name that have a price.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pricing {
    pub currency: String,
    pub models: BTreeMap<String, Price>,
}

/// A price list as written: `currency` and one table per model.
struct PriceList {
    currency: Option<String>,
    models: BTreeMap<String, Price>,
}

/// Reads a price list; `at` names it in messages (`[pricing]`, or the `--pricing` file).
fn price_list(table: &toml::Table, at: &str) -> Result<PriceList, String> {
    let mut list = PriceList { currency: None, models: BTreeMap::new() };
    for (key, value) in table {
        if key == "currency" {
            let currency = value.as_str().map(str::trim).filter(|c| !c.is_empty() && c.len() <= 16);
            let currency = currency.ok_or_else(|| {
                format!("{at}: `currency` = {value} must be a currency's name, such as \"USD\" (at most 16 characters)")
            })?;
            list.currency = Some(currency.to_string());
            continue;
        }
        let table = value.as_table().ok_or_else(|| {
            format!(
                "{at}: unknown field `{key}` (a value, not a model's table): expected one of `currency`, or a \
                 [pricing.\"MODEL\"] table with input_per_mtok and output_per_mtok"
            )
        })?;
        let price: Price = toml::Value::Table(table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| format!("{at} \"{key}\": {}", e.message()))?;
        let rates = [("input_per_mtok", Some(price.input_per_mtok)), ("output_per_mtok", Some(price.output_per_mtok))];
        for (name, rate) in rates.into_iter().chain([("cached_input_per_mtok", price.cached_input_per_mtok)]) {
            if let Some(rate) = rate.filter(|r| !(r.is_finite() && *r >= 0.0)) {
                return Err(format!(
                    "{at} \"{key}\": `{name}` = {rate} must be a price per million tokens, 0 or more (0 prices a \
                     local server)"
                ));
            }
        }
        list.models.insert(key.clone(), price);
    }
    Ok(list)
}

/// Reads `--pricing FILE`: a TOML file shaped like the `[pricing]` table.
fn price_file(path: &Path) -> Result<PriceList, String> {
    let at = format!("--pricing {}", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| format!("{at}: cannot read it: {e}"))?;
    let table: toml::Table = toml::from_str(&text).map_err(|error| {
        let line = error.span().map(|span| text[..span.start].lines().count().max(1));
        let line = line.map(|l| format!(", line {l}")).unwrap_or_default();
        format!("{at}{line}: {}", error.message())
    })?;
    price_list(&table, &at)
}

/// The run's prices: the file's over the experiment's table, model by model, given to each role
/// of `openai` whose model has one. `None` when neither gives any.
pub(super) fn resolve_pricing(
    table: Option<&toml::Table>,
    file: Option<&Path>,
    openai: Option<&mut ClientSettings>,
) -> Result<Option<Pricing>, String> {
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
                return Err(format!(
                    "{there} prices in {before} but {at} in {named}: a run's prices are in one currency"
                ));
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
) -> Result<Option<Budget>, String> {
    let Some(section) = section else { return Ok(None) };
    let amount = |name: &str, value: f64| {
        if value.is_finite() && value > 0.0 {
            Ok(value)
        } else {
            Err(format!("[budget] `{name}` = {value} must be an amount of money above 0"))
        }
    };
    let max_cost = section.max_cost.map(|value| amount("max_cost", value)).transpose()?;
    let mut roles = BTreeMap::new();
    for (name, value) in &section.roles {
        let role = Role::parse(name).ok_or_else(|| {
            format!("[budget] roles: unknown role `{name}`; the roles are generator, reviser, judge, adjudicator")
        })?;
        roles.insert(role, amount(&format!("roles.{name}"), *value)?);
    }
    if max_cost.is_none() && roles.is_empty() {
        return Err("[budget] sets no budget: give `max_cost`, or `roles = { generator = … }`".into());
    }
    let openai = openai.ok_or(
        "[budget] counts what model calls cost, and this experiment makes none: it has no [openai] table \
         (the sim and scripted backends are free)",
    )?;
    let covered: Vec<Role> =
        if max_cost.is_some() { openai.roles.keys().copied().collect() } else { roles.keys().copied().collect() };
    for role in covered {
        let Some(settings) = openai.roles.get(&role) else {
            return Err(format!("[budget] roles.{role}: the experiment has no {role} model in [openai]"));
        };
        if settings.price.is_none() {
            let which = if max_cost.is_some() {
                "max_cost counts every role's calls".to_string()
            } else {
                format!("roles.{role}")
            };
            return Err(format!(
                "[budget] {which}, but the {role} model `{}` has no price: add [pricing.\"{}\"] with input_per_mtok \
                 and output_per_mtok (0 and 0 for a local server)",
                settings.model, settings.model
            ));
        }
    }
    Ok(Some(Budget { max_cost, roles }))
}

/// What the user is told before a priced run: each role whose model has no price, whose loops
/// will have no cost.
pub fn pricing_warnings(experiment: &Experiment) -> Vec<String> {
    let (Some(_), Some(openai)) = (&experiment.pricing, &experiment.openai) else { return Vec::new() };
    openai
        .roles
        .iter()
        .filter(|(_, settings)| settings.price.is_none())
        .map(|(role, settings)| {
            format!(
                "[pricing] has no price for the {role} model `{}`: the `cost` of every loop that uses it stays empty \
                 (price a local server at 0 to count it)",
                settings.model
            )
        })
        .collect()
}
