//! `reschedule_overdue`: moves overdue items to the next business day.
//!
//! The upstream requests are not written here: the tool's `[tool.reschedule]` names raw
//! catalog tools of the same service for the search, the update and the optional zone
//! lookup, and expressions for their arguments. This hook only pages, filters by due
//! time, does the calendar arithmetic (IANA zones, Monday to Friday) and reports. Each
//! step runs through the ordinary pipeline, with the caller's permissions checked for
//! every step tool.
//!
//! Arguments it reads (crm `tasks_push_overdue_to_next_business_day`): `hour`, `minute`,
//! `limit` (page size), `maxTasks`, `dryRun`, `timeZone`, and the scope arguments
//! `query` / `assignedTo`, one of which a real (non-dry) run must give.

use jiff::civil::{Date, Weekday};
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};
use serde_json::{Map, Value, json};

use super::steps::{eval, step_tool};
use crate::answer::response::select;
use crate::catalog::{Reschedule, Tool};
use crate::error::{CallError, Classification};
use crate::run::{Exec, Pipeline, RequestCtx};

/// Most search pages one call may read, whatever `maxTasks` and `limit` say.
const MAX_PAGES: usize = 50;

fn int_arg(args: &Map<String, Value>, name: &str, default: i64) -> i64 {
    args.get(name)
        .and_then(Value::as_f64)
        .map_or(default, |f| f as i64)
}

fn bad_arg(pointer: &str, message: String) -> CallError {
    CallError::validation(message.clone())
        .with_details(json!([{ "pointer": pointer, "message": message }]))
}

/// The next Monday-to-Friday date after `today`.
pub fn next_business_day(today: Date) -> Date {
    let mut day = today.tomorrow().unwrap_or(today);
    while matches!(day.weekday(), Weekday::Saturday | Weekday::Sunday) {
        day = day.tomorrow().unwrap_or(day);
    }
    day
}

/// Runs the hook.
pub async fn reschedule_overdue(
    cx: &dyn Pipeline,
    tool: &Tool,
    args: Map<String, Value>,
    ctx: &RequestCtx<'_>,
) -> Result<Exec, CallError> {
    let Some(plan) = &tool.reschedule else {
        return Err(CallError::internal());
    };
    let limit = int_arg(&args, "limit", 100).clamp(1, 100);
    let max_items = int_arg(&args, "maxTasks", 200).max(0) as usize;
    let dry_run = args.get("dryRun") == Some(&Value::Bool(true));
    let scoped = args
        .get("query")
        .and_then(Value::as_str)
        .is_some_and(|q| !q.trim().is_empty())
        || args
            .get("assignedTo")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
    if !dry_run && !scoped {
        return Err(bad_arg(
            "",
            "a real run must be scoped by `query` or `assignedTo`; or preview with `dryRun=true`"
                .into(),
        ));
    }
    let base = cx.template_context(tool, &args, ctx.headers);

    let due = due_time(cx, tool, &args, &base, ctx).await?;
    let (now, due_text) = (due.now, due.text.clone());
    let (overdue, scanned) = overdue_items(cx, tool, &base, ctx, limit, max_items, now).await?;
    let mut moves = Vec::new();
    for item in &overdue {
        let mut scope = base.clone();
        scope["item"] = item.clone();
        scope["due"] = json!(due_text);
        let id = eval(cx, &plan.item_id, &scope)?;
        moves.push((
            id,
            item.get(&plan.due_field).cloned().unwrap_or(Value::Null),
            scope,
        ));
    }
    let summary = json!({
        "timeZone": due.zone_name,
        "timeZoneSource": due.zone_source,
        "now": now.to_string(),
        "movedTo": due_text,
        "scanned": scanned,
        "overdue": moves.len(),
        "maxTasks": max_items,
    });
    if dry_run {
        let planned: Vec<Value> = moves
            .iter()
            .map(|(id, from, _)| json!({ "id": id, "from": from, "to": due_text }))
            .collect();
        let mut data = summary;
        data["dryRun"] = json!(true);
        data["planned"] = json!(planned);
        return Ok(Exec {
            data: data.into(),
            dry_run: true,
            ..Exec::default()
        });
    }

    // Move each item; one failure does not stop the others, and every outcome is reported.
    let update = step_tool(cx, tool, &plan.update_tool, ctx)?;
    let mut results = Vec::new();
    let mut moved = 0;
    for (id, from, scope) in moves {
        let update_args = eval(cx, &plan.update_arguments, &scope)?;
        match cx.execute(update, Some(update_args), ctx).await {
            Ok(_) => {
                moved += 1;
                results.push(json!({ "id": id, "from": from, "to": due_text, "ok": true }));
            }
            Err(e) => results.push(json!({
                "id": id,
                "from": from,
                "ok": false,
                "classification": e.classification.as_str(),
                "message": e.message,
            })),
        }
    }
    let failed = results.len() - moved;
    let mut data = summary;
    data["dryRun"] = json!(false);
    data["moved"] = json!(moved);
    data["failed"] = json!(failed);
    data["results"] = json!(results);
    Ok(Exec {
        data: data.into(),
        ..Exec::default()
    })
}

/// When the moved items become due: the next business day at the hour and minute
/// asked, in the time zone asked (else the zone tool's answer, else UTC).
struct Due {
    zone_name: String,
    /// Where the zone came from: `argument`, `location` or `default`.
    zone_source: &'static str,
    /// Now, on the broker's clock.
    now: Timestamp,
    /// The new due time (RFC 3339).
    text: String,
}

/// [`Due`] for this call's arguments.
async fn due_time(
    cx: &dyn Pipeline,
    tool: &Tool,
    args: &Map<String, Value>,
    base: &Value,
    ctx: &RequestCtx<'_>,
) -> Result<Due, CallError> {
    let Some(plan) = &tool.reschedule else {
        return Err(CallError::internal());
    };
    let hour = int_arg(args, "hour", 9);
    let minute = int_arg(args, "minute", 0);
    let (zone_name, zone_source) = match args.get("timeZone").and_then(Value::as_str) {
        Some(name) => (name.to_string(), "argument"),
        None => match zone_from_tool(cx, tool, plan, base, ctx).await? {
            Some(name) => (name, "location"),
            None => ("UTC".to_string(), "default"),
        },
    };
    let zone = TimeZone::get(&zone_name).map_err(|_| {
        bad_arg(
            "/timeZone",
            format!("`{zone_name}` is not an IANA time zone name (e.g. `Europe/Berlin`)"),
        )
    })?;
    let now: Timestamp = cx.now();
    let today = now.to_zoned(zone.clone()).date();
    let target_date = next_business_day(today);
    let target: Zoned = target_date
        .at(hour as i8, minute as i8, 0, 0)
        .to_zoned(zone.clone())
        .map_err(|_| {
            bad_arg(
                "/hour",
                "the target time does not exist in that time zone".into(),
            )
        })?;

    Ok(Due {
        zone_name,
        zone_source,
        now,
        text: target.timestamp().to_string(),
    })
}

/// Pages through the search tool (at most [`MAX_PAGES`] pages of `limit`), keeping up
/// to `max_items` items due before `now`; and how many items it read.
async fn overdue_items(
    cx: &dyn Pipeline,
    tool: &Tool,
    base: &Value,
    ctx: &RequestCtx<'_>,
    limit: i64,
    max_items: usize,
    now: Timestamp,
) -> Result<(Vec<Value>, usize), CallError> {
    let Some(plan) = &tool.reschedule else {
        return Err(CallError::internal());
    };
    let search = step_tool(cx, tool, &plan.search_tool, ctx)?;
    let mut overdue: Vec<Value> = Vec::new();
    let mut scanned = 0usize;
    let mut skip = 0i64;
    for _ in 0..MAX_PAGES {
        if overdue.len() >= max_items {
            break;
        }
        let mut scope = base.clone();
        scope["page"] = json!({ "limit": limit, "skip": skip });
        let search_args = eval(cx, &plan.search_arguments, &scope)?;
        let mut page = cx.execute(search, Some(search_args), ctx).await?;
        let items = match select(&plan.items, page.data.value_mut()).unwrap_or_default() {
            Value::Array(items) => items,
            _ => Vec::new(),
        };
        let count = items.len();
        scanned += count;
        for item in items {
            let due = item
                .get(&plan.due_field)
                .and_then(Value::as_str)
                .and_then(|d| d.parse::<Timestamp>().ok());
            if due.is_some_and(|d| d < now) && overdue.len() < max_items {
                overdue.push(item);
            }
        }
        if (count as i64) < limit {
            break;
        }
        skip += limit;
    }

    Ok((overdue, scanned))
}

async fn zone_from_tool(
    cx: &dyn Pipeline,
    tool: &Tool,
    plan: &Reschedule,
    base: &Value,
    ctx: &RequestCtx<'_>,
) -> Result<Option<String>, CallError> {
    let Some((zone_tool, zone_args, zone_path)) = &plan.zone else {
        return Ok(None);
    };
    let step = step_tool(cx, tool, zone_tool, ctx)?;
    let args = eval(cx, zone_args, base)?;
    match cx.execute(step, Some(args), ctx).await {
        Ok(mut answer) => Ok(select(zone_path, answer.data.value_mut())
            .as_ref()
            .and_then(Value::as_str)
            .map(String::from)),
        // No location to ask about: fall back to UTC rather than fail the run.
        Err(e) if e.classification == Classification::ValidationError => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    #[test]
    fn business_days_skip_weekends() {
        assert_eq!(next_business_day(date(2026, 11, 20)), date(2026, 11, 23)); // Fri -> Mon
        assert_eq!(next_business_day(date(2026, 11, 21)), date(2026, 11, 23)); // Sat -> Mon
        assert_eq!(next_business_day(date(2026, 11, 22)), date(2026, 11, 23)); // Sun -> Mon
        assert_eq!(next_business_day(date(2026, 11, 23)), date(2026, 11, 24)); // Mon -> Tue
    }
}
