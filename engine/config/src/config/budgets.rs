//! `[[budgets]]`: how much a user, role or key may spend in a unit per window
//! (docs/budgets.md, decision 015).
//!
//! ```toml
//! [[budgets]]
//! name = "credits-per-user"
//! unit = "credits"
//! limit = 200
//! window = "1d"            # 1h, 1d, 7d or 30d: fixed windows in UTC
//! applies_to = "each-user" # each-user, each-key, role:<role>, user:<issuer>#<subject>, key:<name>
//! confirm_over = 50        # a single call costing more needs confirmation
//! ```
//!
//! Checked at start against the units the costs name: every problem with the config
//! file's line of its `[[budgets]]` table.

use std::collections::BTreeSet;

use serde::Deserialize;

/// One `[[budgets]]` table as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct BudgetEntry {
    /// Named in refusals, `portal.get_budget` and `tool-broker budget list`.
    pub name: String,
    /// The unit it counts (`credits`, or one the deployment's `[costs] units` adds).
    pub unit: String,
    /// Units the window holds.
    pub limit: u64,
    /// `1h`, `1d`, `7d` or `30d`.
    pub window: String,
    /// Whom it binds.
    pub applies_to: String,
    /// For `role:<role>`: one count shared by everyone in the role (default: each
    /// member counted on its own).
    #[serde(default)]
    pub shared: bool,
    /// A single call costing more than this needs confirmation.
    #[serde(default)]
    pub confirm_over: Option<u64>,
}

/// A fixed window in UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// Each hour, from the full hour.
    Hour,
    /// Each day, from midnight UTC.
    Day,
    /// Each week, from Monday 00:00 UTC.
    Week,
    /// Thirty days, counted from 1970-01-01 00:00 UTC (the same boundaries on every
    /// replica and after every restart).
    ThirtyDays,
}

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;
/// 1970-01-01 was a Thursday: the first Monday is four days later.
const FIRST_MONDAY_MS: i64 = 4 * DAY_MS;

impl Window {
    fn parse(text: &str) -> Option<Self> {
        match text {
            "1h" => Some(Self::Hour),
            "1d" => Some(Self::Day),
            "7d" => Some(Self::Week),
            "30d" => Some(Self::ThirtyDays),
            _ => None,
        }
    }

    /// The written form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hour => "1h",
            Self::Day => "1d",
            Self::Week => "7d",
            Self::ThirtyDays => "30d",
        }
    }

    fn length_ms(self) -> i64 {
        match self {
            Self::Hour => HOUR_MS,
            Self::Day => DAY_MS,
            Self::Week => 7 * DAY_MS,
            Self::ThirtyDays => 30 * DAY_MS,
        }
    }

    /// The window holding `now_ms` (milliseconds since the epoch): its start and the
    /// instant it resets (the next one's start).
    pub fn around(self, now_ms: i64) -> (i64, i64) {
        let offset = if self == Self::Week {
            FIRST_MONDAY_MS
        } else {
            0
        };
        let length = self.length_ms();
        let start = (now_ms - offset).div_euclid(length) * length + offset;
        (start, start + length)
    }
}

/// Whom a budget binds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binds {
    /// Every user (access token), each counted on its own.
    EachUser,
    /// Every static key, each counted on its own.
    EachKey,
    /// Everyone in the role: each on its own, or one shared count.
    Role {
        /// The role.
        role: String,
        /// One count for the whole role.
        shared: bool,
    },
    /// One user, `<issuer>#<subject>`.
    User(String),
    /// One static key, by name.
    Key(String),
}

/// A budget, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    /// Its name.
    pub name: String,
    /// The unit it counts.
    pub unit: String,
    /// Units a window holds.
    pub limit: u64,
    /// The window.
    pub window: Window,
    /// Whom it binds.
    pub binds: Binds,
    /// A single call costing more needs confirmation.
    pub confirm_over: Option<u64>,
}

/// Checks `[[budgets]]` against the units the costs know. `file` and `text` name the
/// config file for the lines of the problems.
pub fn compile(
    entries: &[BudgetEntry],
    units: &BTreeSet<String>,
    file: &str,
    text: &str,
) -> Result<Vec<Budget>, String> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == "[[budgets]]")
        .map(|(i, _)| i + 1);
    let mut problems = Vec::new();
    let mut names = BTreeSet::new();
    let mut budgets = Vec::new();
    for entry in entries {
        let at = match lines.next() {
            Some(line) => format!("{file}:{line}"),
            None => file.to_string(),
        };
        let mut fail =
            |message: String| problems.push(format!("{at}: budget `{}`: {message}", entry.name));
        if entry.name.is_empty()
            || !entry
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            fail("`name` must be letters, digits, `-`, `_` and `.` (it labels metrics)".into());
        } else if !names.insert(entry.name.clone()) {
            fail("another budget has this name; names must differ".into());
        }
        if !units.contains(&entry.unit) {
            let known: Vec<&str> = units.iter().map(String::as_str).collect();
            fail(format!(
                "unit `{}` is not one the costs name ({}); add it to `[costs] units`",
                entry.unit,
                known.join(", ")
            ));
        }
        let window = Window::parse(&entry.window);
        if window.is_none() {
            fail(format!(
                "window `{}` is not one of 1h, 1d, 7d, 30d",
                entry.window
            ));
        }
        let binds = parse_binds(&entry.applies_to, entry.shared);
        if let Err(message) = &binds {
            fail(message.clone());
        }
        if let (Some(window), Ok(binds)) = (window, binds) {
            budgets.push(Budget {
                name: entry.name.clone(),
                unit: entry.unit.clone(),
                limit: entry.limit,
                window,
                binds,
                confirm_over: entry.confirm_over,
            });
        }
    }
    if problems.is_empty() {
        Ok(budgets)
    } else {
        Err(format!(
            "the budgets are not valid:\n{}",
            problems.join("\n")
        ))
    }
}

fn parse_binds(text: &str, shared: bool) -> Result<Binds, String> {
    let binds = match text.split_once(':') {
        None if text == "each-user" => Binds::EachUser,
        None if text == "each-key" => Binds::EachKey,
        Some(("role", role)) if !role.is_empty() => Binds::Role {
            role: role.to_string(),
            shared,
        },
        Some(("user", user))
            if user
                .split_once('#')
                .is_some_and(|(i, s)| !i.is_empty() && !s.is_empty()) =>
        {
            Binds::User(user.to_string())
        }
        Some(("key", key)) if !key.is_empty() => Binds::Key(key.to_string()),
        _ => {
            return Err(format!(
                "applies_to `{text}` is not one of each-user, each-key, role:<role>, user:<issuer>#<subject>, key:<name>"
            ));
        }
    };
    if shared && !matches!(binds, Binds::Role { .. }) {
        return Err("`shared = true` is only for `applies_to = \"role:<role>\"`".into());
    }
    Ok(binds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> i64 {
        text.parse::<jiff::Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn windows_are_fixed_in_utc() {
        let now = at("2026-11-26T15:42:10Z"); // a Thursday
        let cases = [
            (Window::Hour, "2026-11-26T15:00:00Z", "2026-11-26T16:00:00Z"),
            (Window::Day, "2026-11-26T00:00:00Z", "2026-11-27T00:00:00Z"),
            (Window::Week, "2026-11-23T00:00:00Z", "2026-11-30T00:00:00Z"),
        ];
        for (window, start, end) in cases {
            assert_eq!(window.around(now), (at(start), at(end)), "{window:?}");
        }
        let (start, end) = Window::ThirtyDays.around(now);
        assert!(start <= now && now < end && end - start == 30 * DAY_MS);
        assert_eq!(start % (30 * DAY_MS), 0);
        // The boundary itself starts the next window.
        assert_eq!(
            Window::Day.around(at("2026-11-27T00:00:00Z")).0,
            at("2026-11-27T00:00:00Z")
        );
    }

    #[test]
    fn every_mistake_is_reported_at_its_line() {
        let text = "listen = \"x\"\n\n[[budgets]]\nname = \"a\"\n\n[[budgets]]\nname = \"a\"\n";
        let entry = |name: &str, unit: &str, window: &str, applies_to: &str, shared| BudgetEntry {
            name: name.into(),
            unit: unit.into(),
            limit: 10,
            window: window.into(),
            applies_to: applies_to.into(),
            shared,
            confirm_over: None,
        };
        let units: BTreeSet<String> = ["credits".to_string()].into();
        let entries = [
            entry("a", "credit", "1w", "each-user", false),
            entry("a", "credits", "1d", "user:nohash", true),
        ];
        let err = compile(&entries, &units, "broker.toml", text).unwrap_err();
        for wanted in [
            "broker.toml:3: budget `a`: unit `credit` is not one the costs name (credits)",
            "broker.toml:3: budget `a`: window `1w` is not one of 1h, 1d, 7d, 30d",
            "broker.toml:6: budget `a`: another budget has this name",
            "broker.toml:6: budget `a`: applies_to `user:nohash` is not one of",
        ] {
            assert!(err.contains(wanted), "{wanted}\nin\n{err}");
        }
        let shared = [entry("b", "credits", "1d", "each-key", true)];
        let err = compile(&shared, &units, "f", "").unwrap_err();
        assert!(err.contains("`shared = true` is only for"), "{err}");
        let ok = [entry("c", "credits", "7d", "role:support", true)];
        let budgets = compile(&ok, &units, "f", "").unwrap();
        assert_eq!(
            budgets[0].binds,
            Binds::Role {
                role: "support".into(),
                shared: true
            }
        );
    }
}
