//! What a call costs (docs/budgets.md): `rules/costs.toml`, and a deployment's `[costs]`
//! on top, compiled against the catalog once. Each tool has at most one price: the most
//! specific cost whose selectors match it. A price is in one named unit (`credits`
//! unless it says otherwise) and is one of a constant, so many units per item of an
//! array argument, so many per unit of an integer argument, or an argument's value (a
//! refund's `amount`, optionally only in one currency). It may be settled after the
//! call: by a number read from the answer (`actual`), or to nothing when a part of the
//! answer is absent (`charged_if`). Costs are no part of a descriptor hash.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::catalog::descriptor::{Class, Risk};
use crate::catalog::{Catalog, Tool};

/// The unit a cost is in when it names none.
pub const DEFAULT_UNIT: &str = "credits";

/// `rules/costs.toml`, or a deployment's `[costs]`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawCosts {
    /// Units costs and budgets may name besides `credits`.
    #[serde(default)]
    pub units: Vec<String>,
    /// The costs; the most specific one matching a tool prices it.
    #[serde(default)]
    pub cost: Vec<RawCost>,
}

/// One cost: whom it prices (selectors, every one named must hold) and how.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawCost {
    /// One tool, by full name (`agent.create_task`).
    #[serde(default)]
    pub tool: Option<String>,
    /// Tools of this service.
    #[serde(default)]
    pub service: Option<String>,
    /// Tools of this risk.
    #[serde(default)]
    pub risk: Option<Risk>,
    /// Tools with at least one of these class words.
    #[serde(default)]
    pub classes: Vec<Class>,
    /// The unit (default `credits`).
    #[serde(default)]
    pub unit: Option<String>,
    /// A constant cost per call.
    #[serde(default)]
    pub constant: Option<u64>,
    /// `each` units per item of this array argument (a JSON pointer into the
    /// arguments: `/body/details`).
    #[serde(default)]
    pub per_item: Option<String>,
    /// `each` units per unit of this integer argument (a JSON pointer).
    #[serde(default)]
    pub per_unit: Option<String>,
    /// The cost is this integer argument's value (a JSON pointer), in `unit`.
    #[serde(default)]
    pub amount: Option<String>,
    /// Units per item or per unit (default 1).
    #[serde(default)]
    pub each: Option<u64>,
    /// `per_item`: a call with more items than this is refused before anything is sent.
    #[serde(default)]
    pub max_items: Option<u64>,
    /// `amount`: the call is priced only when this argument equals `equals`
    /// (case-insensitive); otherwise it is unpriced in this unit.
    #[serde(default)]
    pub currency: Option<RawCurrency>,
    /// Settled after the call to the number at this path of the answer (names and
    /// indexes only: `$.credits_consumed`); the estimate stands when it is absent.
    #[serde(default)]
    pub actual: Option<String>,
    /// Settled to nothing when the answer holds no value (or `null`) at this path.
    #[serde(default)]
    pub charged_if: Option<String>,
}

/// The currency condition of an `amount` cost.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawCurrency {
    /// The currency argument (a JSON pointer: `/currency`).
    pub argument: String,
    /// The currency the unit is counted in (`usd`).
    pub equals: String,
}

/// Where a cost was written: `rules/costs.toml` line 12, or the deployment config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The file.
    pub file: String,
    /// Its line (1-based; 0 when unknown).
    pub line: usize,
    /// Whether a deployment wrote it (it wins over the rules at equal specificity).
    pub deployment: bool,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// How a price is counted from a call's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Count {
    /// So many units a call.
    Constant(u64),
    /// `each` units per item of the array at `pointer`; more than `max` items refused.
    PerItem {
        /// The array argument.
        pointer: String,
        /// Units per item.
        each: u64,
        /// Most items a call.
        max: Option<u64>,
    },
    /// `each` units per unit of the integer at `pointer`.
    PerUnit {
        /// The integer argument.
        pointer: String,
        /// Units per unit.
        each: u64,
    },
    /// The integer at `pointer`, when the currency (if named) matches.
    Amount {
        /// The amount argument.
        pointer: String,
        /// The currency argument and the currency counted.
        currency: Option<(String, String)>,
    },
}

/// A tool's compiled price.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Price {
    /// The unit.
    pub unit: String,
    /// How it is counted.
    pub count: Count,
    /// JSON pointer into the answer of the settled figure.
    pub actual: Option<String>,
    /// JSON pointer into the answer that must hold a value for the call to be charged.
    pub charged_if: Option<String>,
    /// Where the cost was written.
    pub origin: Origin,
}

/// What a call is estimated to cost before anything is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Estimate {
    /// So many units.
    Units(u64),
    /// The arguments do not say (an `amount` absent, another currency): a budget in
    /// this unit cannot admit the call.
    Unpriced,
}

impl Estimate {
    /// The units, when the arguments price the call.
    pub fn units(self) -> Option<u64> {
        match self {
            Self::Units(n) => Some(n),
            Self::Unpriced => None,
        }
    }
}

/// A call's arguments break a price's rule (more items than `max_items`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooMany {
    /// The argument.
    pub pointer: String,
    /// The most items a call may carry.
    pub max: u64,
}

impl Price {
    /// What a call with these (validated) arguments costs.
    pub fn estimate(&self, args: &Map<String, Value>) -> Result<Estimate, TooMany> {
        let at = |pointer: &str| arg_at(args, pointer);
        Ok(match &self.count {
            Count::Constant(n) => Estimate::Units(*n),
            Count::PerItem { pointer, each, max } => {
                let items = at(pointer)
                    .and_then(Value::as_array)
                    .map_or(0, |a| u64::try_from(a.len()).unwrap_or(u64::MAX));
                if let Some(max) = max
                    && items > *max
                {
                    return Err(TooMany {
                        pointer: pointer.clone(),
                        max: *max,
                    });
                }
                Estimate::Units(items.saturating_mul(*each))
            }
            Count::PerUnit { pointer, each } => match at(pointer) {
                None | Some(Value::Null) => Estimate::Units(0),
                Some(v) => match whole(v) {
                    Some(n) => Estimate::Units(n.saturating_mul(*each)),
                    None => Estimate::Unpriced,
                },
            },
            Count::Amount { pointer, currency } => {
                if let Some((argument, wanted)) = currency {
                    let given = at(argument).and_then(Value::as_str);
                    if !given.is_some_and(|g| g.eq_ignore_ascii_case(wanted)) {
                        return Ok(Estimate::Unpriced);
                    }
                }
                match at(pointer).and_then(whole) {
                    Some(n) => Estimate::Units(n),
                    None => Estimate::Unpriced,
                }
            }
        })
    }

    /// What an answer says of the charge: nothing when `charged_if` finds no value,
    /// the figure at `actual` when there is one (a fraction rounded up), else the
    /// estimate stands.
    pub fn read(&self, answer: &Value) -> Reading {
        if let Some(pointer) = &self.charged_if
            && answer.pointer(pointer).is_none_or(Value::is_null)
        {
            return Reading::Nothing;
        }
        match self
            .actual
            .as_ref()
            .and_then(|p| answer.pointer(p))
            .and_then(up)
        {
            Some(n) => Reading::Figure(n),
            None => Reading::Estimate,
        }
    }

    /// What a call that answered `answer` is charged, given its estimate.
    pub fn settle(&self, estimate: u64, answer: &Value) -> u64 {
        self.read(answer).apply(estimate)
    }

    /// Whether settling needs the answer read as a value.
    pub fn reads_answer(&self) -> bool {
        self.actual.is_some() || self.charged_if.is_some()
    }
}

/// What an answer said of a call's charge ([`Price::read`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Nothing is charged (`charged_if` found no value).
    Nothing,
    /// The answer's figure.
    Figure(u64),
    /// The estimate stands.
    Estimate,
}

impl Reading {
    /// The charge, given the estimate.
    pub fn apply(self, estimate: u64) -> u64 {
        match self {
            Self::Nothing => 0,
            Self::Figure(n) => n,
            Self::Estimate => estimate,
        }
    }
}

/// A non-negative whole number (`5` or `5.0`).
fn whole(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        let f = v.as_f64()?;
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "whole, non-negative and below 2^53"
        )]
        (f >= 0.0 && f.fract() == 0.0 && f < 9.0e15).then_some(f as u64)
    })
}

/// A non-negative number rounded up (an answer's figure: `2.5` credits is 3).
fn up(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        let f = v.as_f64()?.ceil();
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "whole, non-negative and below 2^53"
        )]
        (0.0..9.0e15).contains(&f).then_some(f as u64)
    })
}

/// The argument at a JSON pointer (`/body/details`).
fn arg_at<'a>(args: &'a Map<String, Value>, pointer: &str) -> Option<&'a Value> {
    let mut parts = pointer.strip_prefix('/')?.split('/');
    let first = unescape(parts.next()?);
    let mut value = args.get(first.as_str())?;
    for part in parts {
        value = match value {
            Value::Object(map) => map.get(unescape(part).as_str())?,
            Value::Array(items) => items.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(value)
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// Every tool's price, by the tool's index in the catalog.
#[derive(Debug, Clone, Default)]
pub struct Costs {
    /// The units costs and budgets may name.
    pub units: BTreeSet<String>,
    prices: Vec<Option<Price>>,
}

impl Costs {
    /// The price of `tool`, if it has one.
    pub fn price(&self, catalog: &Catalog, tool: &Tool) -> Option<&Price> {
        self.prices.get(catalog.index_of(tool)?)?.as_ref()
    }
}

/// A cost as written, with where.
#[derive(Debug, Clone)]
pub struct Written {
    /// The cost.
    pub raw: RawCost,
    /// Where.
    pub origin: Origin,
}

/// The `[[cost]]` entries of a TOML text with their lines (each table's header line).
pub fn written(raw: RawCosts, file: &str, text: &str, deployment: bool) -> Vec<Written> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            let l = l.trim();
            l == "[[cost]]" || l == "[[costs.cost]]"
        })
        .map(|(i, _)| i + 1);
    raw.cost
        .into_iter()
        .map(|raw| Written {
            raw,
            origin: Origin {
                file: file.to_string(),
                line: lines.next().unwrap_or(0),
                deployment,
            },
        })
        .collect()
}

/// Compiles costs against the catalog's tools: every problem with its file and line.
pub fn compile(
    tools: &[Tool],
    units: impl IntoIterator<Item = String>,
    costs: &[Written],
) -> Result<Costs, Vec<(Origin, String)>> {
    let mut problems = Vec::new();
    let mut units: BTreeSet<String> = units.into_iter().collect();
    units.insert(DEFAULT_UNIT.to_string());
    let mut counts = Vec::with_capacity(costs.len());
    for w in costs {
        match count_of(&w.raw) {
            Ok(count) => counts.push(Some(count)),
            Err(message) => {
                problems.push((w.origin.clone(), message));
                counts.push(None);
            }
        }
        let unit = w.raw.unit.as_deref().unwrap_or(DEFAULT_UNIT);
        if !units.contains(unit) {
            problems.push((
                w.origin.clone(),
                format!(
                    "unit `{unit}` is not declared; add it to `units` (declared: {})",
                    units.iter().cloned().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        if let Some(tool) = &w.raw.tool
            && !tools.iter().any(|t| &t.full_name == tool)
        {
            let names = tools.iter().map(|t| t.full_name.as_str());
            let hint = crate::catalog::diag::did_you_mean(tool, names)
                .map(|h| format!(" ({h})"))
                .unwrap_or_default();
            problems.push((w.origin.clone(), format!("no tool `{tool}`{hint}")));
        }
    }
    let mut matched = vec![false; costs.len()];
    let mut ties: std::collections::BTreeMap<(usize, usize), Vec<&str>> = Default::default();
    let mut prices = Vec::with_capacity(tools.len());
    for tool in tools {
        let mut best: Option<(u8, usize)> = None;
        for (i, w) in costs.iter().enumerate() {
            let Some(rank) = rank(&w.raw, tool) else {
                continue;
            };
            if let Some(flag) = matched.get_mut(i) {
                *flag = true;
            }
            let rank = (rank << 1) | u8::from(w.origin.deployment);
            match best {
                Some((r, j)) if r == rank => {
                    ties.entry((j, i))
                        .or_default()
                        .push(tool.full_name.as_str());
                }
                Some((r, _)) if r > rank => {}
                _ => best = Some((rank, i)),
            }
        }
        let price = best.and_then(|(_, i)| {
            let w = costs.get(i)?;
            let count = counts.get(i)?.clone()?;
            match price_for(tool, w, count) {
                Ok(price) => Some(price),
                Err(message) => {
                    problems.push((w.origin.clone(), message));
                    None
                }
            }
        });
        prices.push(price);
    }
    for ((first, second), names) in ties {
        let (Some(a), Some(b)) = (costs.get(first), costs.get(second)) else {
            continue;
        };
        let shown: Vec<String> = names.iter().take(3).map(|n| format!("`{n}`")).collect();
        let more = names.len().saturating_sub(shown.len());
        problems.push((
            b.origin.clone(),
            format!(
                "this cost and the one at {} both price {}{} as specifically; make one of them more specific (name the tool)",
                a.origin,
                shown.join(", "),
                if more > 0 { format!(" and {more} more tools") } else { String::new() }
            ),
        ));
    }
    for (w, matched) in costs.iter().zip(matched) {
        if !matched
            && w.raw
                .tool
                .as_ref()
                .is_none_or(|t| tools.iter().any(|x| &x.full_name == t))
        {
            problems.push((
                w.origin.clone(),
                "this cost's selectors match no tool".into(),
            ));
        }
    }
    if problems.is_empty() {
        Ok(Costs { units, prices })
    } else {
        problems.sort_by(|a, b| (&a.0.file, a.0.line).cmp(&(&b.0.file, b.0.line)));
        problems.dedup();
        Err(problems)
    }
}

/// How specific a cost's match of a tool is (`None`: no match): the tool named beats
/// the service, the service beats classes, classes beat the risk.
fn rank(raw: &RawCost, tool: &Tool) -> Option<u8> {
    crate::catalog::descriptor::Selecting {
        tool: raw.tool.as_deref(),
        service: raw.service.as_deref(),
        risk: raw.risk,
        classes: &raw.classes,
    }
    .rank(&tool.full_name, &tool.service, tool.risk, &tool.classes)
}

/// A cost's counting rule: exactly one of `constant`, `per_item`, `per_unit`, `amount`.
fn count_of(raw: &RawCost) -> Result<Count, String> {
    let each = raw.each.unwrap_or(1);
    let named = [
        raw.constant.is_some(),
        raw.per_item.is_some(),
        raw.per_unit.is_some(),
        raw.amount.is_some(),
    ];
    if named.iter().filter(|n| **n).count() != 1 {
        return Err(
            "a cost is exactly one of `constant`, `per_item`, `per_unit` or `amount`".into(),
        );
    }
    if raw.each.is_some() && raw.per_item.is_none() && raw.per_unit.is_none() {
        return Err("`each` belongs to `per_item` or `per_unit`".into());
    }
    if raw.max_items.is_some() && raw.per_item.is_none() {
        return Err("`max_items` belongs to `per_item`".into());
    }
    if raw.currency.is_some() && raw.amount.is_none() {
        return Err("`currency` belongs to `amount`".into());
    }
    let pointer = |p: &String| {
        if p.starts_with('/') {
            Ok(p.clone())
        } else {
            Err(format!(
                "`{p}` is not a JSON pointer into the arguments; write `/{p}`"
            ))
        }
    };
    Ok(
        match (&raw.constant, &raw.per_item, &raw.per_unit, &raw.amount) {
            (Some(n), ..) => Count::Constant(*n),
            (_, Some(p), ..) => Count::PerItem {
                pointer: pointer(p)?,
                each,
                max: raw.max_items,
            },
            (_, _, Some(p), _) => Count::PerUnit {
                pointer: pointer(p)?,
                each,
            },
            (.., Some(p)) => Count::Amount {
                pointer: pointer(p)?,
                currency: match &raw.currency {
                    Some(c) => Some((pointer(&c.argument)?, c.equals.clone())),
                    None => None,
                },
            },
            _ => return Err("a cost needs a counting rule".into()),
        },
    )
}

/// A cost made a tool's price: its arguments and answer paths checked against the
/// tool's schemas.
fn price_for(tool: &Tool, w: &Written, count: Count) -> Result<Price, String> {
    let schema = tool.arguments.value();
    let needs = |pointer: &str, want: &str| -> Result<(), String> {
        let found = schema_at(&schema, pointer).ok_or_else(|| {
            format!(
                "`{}` has no argument `{pointer}`; its arguments: {}",
                tool.full_name,
                tool.argument_names.join(", ")
            )
        })?;
        if has_type(found, want) {
            Ok(())
        } else {
            Err(format!(
                "argument `{pointer}` of `{}` is not of type {want}",
                tool.full_name
            ))
        }
    };
    match &count {
        Count::Constant(_) => {}
        Count::PerItem { pointer, .. } => needs(pointer, "array")?,
        Count::PerUnit { pointer, .. } => needs(pointer, "integer")?,
        Count::Amount { pointer, currency } => {
            needs(pointer, "integer")?;
            if let Some((argument, _)) = currency {
                needs(argument, "string")?;
            }
        }
    }
    let answer = |what: &str, path: &Option<String>| -> Result<Option<String>, String> {
        let Some(path) = path else {
            return Ok(None);
        };
        let pointer = crate::catalog::simple_pointer(path).ok_or_else(|| {
            format!("{what} `{path}` must be a JSONPath of names and indexes (`$.credits_used`)")
        })?;
        if let Some(output) = &tool.output
            && !answer_may_hold(&output.value(), &pointer)
        {
            return Err(format!(
                "{what} `{path}` cannot match the answer of `{}`: its output schema has no such field",
                tool.full_name
            ));
        }
        Ok(Some(pointer))
    };
    Ok(Price {
        unit: w.raw.unit.clone().unwrap_or_else(|| DEFAULT_UNIT.into()),
        count,
        actual: answer("actual", &w.raw.actual)?,
        charged_if: answer("charged_if", &w.raw.charged_if)?,
        origin: w.origin.clone(),
    })
}

/// The subschema of an argument at a JSON pointer, through `properties`.
fn schema_at<'a>(schema: &'a Value, pointer: &str) -> Option<&'a Value> {
    let mut at = schema;
    for part in pointer.strip_prefix('/')?.split('/') {
        at = at.get("properties")?.get(unescape(part).as_str())?;
    }
    Some(at)
}

/// Whether a schema's `type` (one or a list) names `want`.
fn has_type(schema: &Value, want: &str) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == want,
        Some(Value::Array(ts)) => ts.iter().any(|t| t == want),
        _ => false,
    }
}

/// Whether an answer described by `schema` may hold a value at `pointer`: every step
/// through an object with declared `properties` and no other members allowed must name
/// one of them; a step into anything else may hold.
fn answer_may_hold(schema: &Value, pointer: &str) -> bool {
    let mut at = schema;
    for part in pointer.split('/').skip(1) {
        let name = unescape(part);
        if let Some(items) = at.get("items")
            && name.parse::<usize>().is_ok()
        {
            at = items;
            continue;
        }
        match at.get("properties").and_then(Value::as_object) {
            Some(props) => match props.get(name.as_str()) {
                Some(next) => at = next,
                None => {
                    return at.get("additionalProperties").is_some_and(|a| a != false)
                        || at.get("patternProperties").is_some();
                }
            },
            None => return true,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn price(count: Count) -> Price {
        Price {
            unit: DEFAULT_UNIT.into(),
            count,
            actual: None,
            charged_if: None,
            origin: Origin {
                file: "t".into(),
                line: 1,
                deployment: false,
            },
        }
    }

    fn args(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn estimates_count_what_the_rule_says() {
        let per_item = price(Count::PerItem {
            pointer: "/body/details".into(),
            each: 2,
            max: Some(3),
        });
        let three = args(json!({ "body": { "details": [1, 2, 3] } }));
        assert_eq!(per_item.estimate(&three), Ok(Estimate::Units(6)));
        assert_eq!(per_item.estimate(&Map::new()), Ok(Estimate::Units(0)));
        let four = args(json!({ "body": { "details": [1, 2, 3, 4] } }));
        assert_eq!(
            per_item.estimate(&four),
            Err(TooMany {
                pointer: "/body/details".into(),
                max: 3
            })
        );
        let per_unit = price(Count::PerUnit {
            pointer: "/num_images".into(),
            each: 5,
        });
        assert_eq!(
            per_unit.estimate(&args(json!({ "num_images": 4 }))),
            Ok(Estimate::Units(20))
        );
        assert_eq!(
            per_unit.estimate(&args(json!({ "num_images": null }))),
            Ok(Estimate::Units(0))
        );
        let amount = price(Count::Amount {
            pointer: "/amount".into(),
            currency: Some(("/currency".into(), "usd".into())),
        });
        assert_eq!(
            amount.estimate(&args(json!({ "amount": 4200, "currency": "USD" }))),
            Ok(Estimate::Units(4200))
        );
        assert_eq!(
            amount.estimate(&args(json!({ "amount": 4200, "currency": "eur" }))),
            Ok(Estimate::Unpriced)
        );
        assert_eq!(
            amount.estimate(&args(json!({ "currency": "usd" }))),
            Ok(Estimate::Unpriced)
        );
    }

    #[test]
    fn settling_reads_the_answer() {
        let mut p = price(Count::Constant(1));
        p.charged_if = Some("/transcript".into());
        assert_eq!(p.settle(1, &json!({ "transcript": "hello" })), 1);
        assert_eq!(p.settle(1, &json!({ "transcript": null })), 0);
        assert_eq!(p.settle(1, &json!({})), 0);
        let mut p = price(Count::Constant(10));
        p.actual = Some("/credits_consumed".into());
        assert_eq!(p.settle(10, &json!({ "credits_consumed": 2.5 })), 3);
        assert_eq!(p.settle(10, &json!({ "credits_consumed": 0 })), 0);
        assert_eq!(p.settle(10, &json!({ "other": 1 })), 10);
        assert_eq!(p.settle(10, &json!({ "credits_consumed": -1 })), 10);
    }
}
