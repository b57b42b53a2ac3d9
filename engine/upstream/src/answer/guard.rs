//! The guard rules (`crate::catalog::guards`) read over a value: every string of a
//! call's arguments or of an answer's data, at every depth (docs/guards.md).
//!
//! A redacting finding is replaced by `[REDACTED:<id>]` and a stripping one removed,
//! in place; an alerting one is only noted; the first blocking one stops the walk with
//! the rule and the JSON pointer of the string that held it (never the text). Object
//! keys are not read: a key names a field, the value is what a person wrote.

use serde_json::Value;

use crate::catalog::guards::{Action, Guards, Set};

/// The depth past which a value is not read further: serde_json parses no deeper, and
/// a value built deeper is refused rather than walked without bound.
const DEPTH_LIMIT: usize = 128;

/// What stopped a walk: a blocking rule, and the JSON pointer of the string it found
/// something in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    /// The rule's index in [`Guards::rules`].
    pub rule: usize,
    /// Where (`/body/note`; `""` for the value itself).
    pub pointer: String,
}

/// Reads every string of `value` with the rules of `set`: redacts and strips in place,
/// adds each rule that found something to `acted`, and stops at the first blocking
/// finding. A value nested deeper than serde_json parses is refused as blocked by no
/// rule (`rule` past the rules), at its pointer.
pub fn guard(value: &mut Value, guards: &Guards, set: Set, acted: &mut Set) -> Result<(), Blocked> {
    if set.is_empty() {
        return Ok(());
    }
    walk(value, guards, set, acted, DEPTH_LIMIT).map_err(|mut path| {
        path.reverse();
        let mut pointer = String::new();
        for segment in path.iter().skip(1) {
            pointer.push('/');
            pointer.push_str(&segment.replace('~', "~0").replace('/', "~1"));
        }
        Blocked {
            rule: path
                .first()
                .and_then(|r| r.parse().ok())
                .unwrap_or(usize::MAX),
            pointer,
        }
    })
}

/// The walk; a block answers the path back up, innermost first, the rule's index
/// last (read by [`guard`]).
fn walk(
    value: &mut Value,
    guards: &Guards,
    set: Set,
    acted: &mut Set,
    depth_left: usize,
) -> Result<(), Vec<String>> {
    match value {
        Value::String(text) => match guard_text(text, guards, set, acted) {
            Some(rule) => Err(vec![rule.to_string()]),
            None => Ok(()),
        },
        Value::Array(items) => {
            let depth_left = deeper(depth_left)?;
            for (i, item) in items.iter_mut().enumerate() {
                walk(item, guards, set, acted, depth_left).map_err(|mut path| {
                    path.insert(path.len() - 1, i.to_string());
                    path
                })?;
            }
            Ok(())
        }
        Value::Object(map) => {
            let depth_left = deeper(depth_left)?;
            for (key, item) in map.iter_mut() {
                walk(item, guards, set, acted, depth_left).map_err(|mut path| {
                    path.insert(path.len() - 1, key.clone());
                    path
                })?;
            }
            Ok(())
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
    }
}

/// One level deeper, or the walk refused.
fn deeper(depth_left: usize) -> Result<usize, Vec<String>> {
    depth_left
        .checked_sub(1)
        .filter(|d| *d > 0)
        .ok_or_else(|| vec![usize::MAX.to_string()])
}

/// Reads one text with the rules of `set`: the blocking rule's index when one found
/// something (the text left as it was), else the text redacted and stripped in place.
fn guard_text(text: &mut String, guards: &Guards, set: Set, acted: &mut Set) -> Option<usize> {
    let found = guards.scan(text, set);
    if found.is_empty() {
        return None;
    }
    let mut changes = false;
    for f in &found {
        let action = guards.rules.get(f.rule).map(|r| r.action);
        if action == Some(Action::Block) {
            *acted = acted.with(f.rule);
            return Some(f.rule);
        }
        changes |= matches!(action, Some(Action::Redact | Action::Strip));
    }
    for f in &found {
        *acted = acted.with(f.rule);
    }
    if changes {
        *text = guards.apply(text, &found);
    }
    None
}

/// Whether the rules of `set` would act on `text` at all (find something, whatever
/// they would do): a string of an answer written in one pass is checked with it, and
/// the answer read as a tree where one would.
pub fn acts_on(text: &str, guards: &Guards, set: Set) -> bool {
    !set.is_empty() && !guards.scan(text, set).is_empty()
}

/// What reads each string of an answer written in one pass ([`crate::answer::scan`]):
/// a rule that would not run on the answer's bytes as a whole (none of its keywords
/// occurs, or the bytes do not hold what it needs) is left out for the strings written
/// as they came (each is a piece of those bytes); a string with an escape is read by
/// every rule (an escape may hide a keyword or a character).
#[derive(Debug, Clone, Copy)]
pub struct OnePass<'g> {
    guards: &'g Guards,
    /// Every rule on answers.
    set: Set,
    /// Those that can act on a string written as it came.
    plain: Set,
    /// When those all wait for what they need, the fewest bytes a text meeting it has:
    /// a shorter string is passed at once.
    shortest: Option<usize>,
}

impl<'g> OnePass<'g> {
    /// The reader of the answer `body` for the rules of `set`: one keyword pass over
    /// its bytes.
    pub fn new(guards: &'g Guards, set: Set, body: &[u8]) -> Self {
        let plain = guards.narrowed(body, set);
        Self {
            guards,
            set,
            plain,
            shortest: guards.shortest(plain),
        }
    }

    /// Whether a rule would act on `text` (`decoded`: it had an escape).
    #[inline]
    pub fn acts_on(&self, text: &str, decoded: bool) -> bool {
        if decoded {
            return acts_on(text, self.guards, self.set);
        }
        if self.shortest.is_some_and(|n| text.len() < n) {
            return false;
        }
        acts_on(text, self.guards, self.plain)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::catalog::guards::RawGuards;

    fn guards() -> Guards {
        let raw: RawGuards = toml::from_str(
            "[[rule]]\nid = \"tok\"\nkind = \"secret\"\npattern = 'tok_[a-z0-9]{8}'\nkeywords = [\"tok_\"]\naction = \"redact\"\nmatches = [\"tok_abcd1234\"]\n\
             [[rule]]\nid = \"stop\"\nkind = \"personal\"\npattern = 'STOP-[0-9]{4}'\nkeywords = [\"STOP-\"]\naction = \"block\"\nmatches = [\"STOP-1234\"]\n\
             [[rule]]\nid = \"look\"\nkind = \"injection\"\npattern = 'look here'\nkeywords = [\"look\"]\naction = \"alert\"\nmatches = [\"look here\"]\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        Guards::compile(&raw.rule, &[1, 2, 3]).unwrap_or_else(|e| panic!("{e:?}"))
    }

    #[test]
    fn every_string_at_every_depth_is_read_and_a_block_names_its_pointer() {
        let guards = guards();
        let all = guards.select(|_| true);
        let mut value = json!({"a": [{"b": "x tok_abcd1234 y"}, "look here"], "n": 4});
        let mut acted = Set::EMPTY;
        assert_eq!(guard(&mut value, &guards, all, &mut acted), Ok(()));
        assert_eq!(
            value,
            json!({"a": [{"b": "x [REDACTED:tok] y"}, "look here"], "n": 4})
        );
        assert_eq!(
            guards.ids(acted).iter().map(|s| &**s).collect::<Vec<_>>(),
            ["tok", "look"]
        );

        let mut value = json!({"body": {"notes": ["fine", "call STOP-1234 a/b"]}});
        let before = value.clone();
        let mut acted = Set::EMPTY;
        let blocked = guard(&mut value, &guards, all, &mut acted);
        assert_eq!(
            blocked,
            Err(Blocked {
                rule: 1,
                pointer: "/body/notes/1".into()
            })
        );
        assert_eq!(value, before, "a blocked string is left as it was");
        let mut top = json!("STOP-1234");
        assert_eq!(
            guard(&mut top, &guards, all, &mut acted).map_err(|b| b.pointer),
            Err(String::new())
        );
        let mut odd = json!({"a/b~c": "STOP-1234"});
        assert_eq!(
            guard(&mut odd, &guards, all, &mut acted).map_err(|b| b.pointer),
            Err("/a~1b~0c".into())
        );
    }

    #[test]
    fn a_value_too_deep_is_refused_and_an_empty_set_reads_nothing() {
        let guards = guards();
        let all = guards.select(|_| true);
        let mut deep = json!("tok_abcd1234");
        for _ in 0..200 {
            deep = json!([deep]);
        }
        let mut acted = Set::EMPTY;
        let refused = guard(&mut deep, &guards, all, &mut acted);
        assert!(refused.is_err_and(|b| b.rule == usize::MAX));
        let mut value = json!("tok_abcd1234");
        assert_eq!(guard(&mut value, &guards, Set::EMPTY, &mut acted), Ok(()));
        assert_eq!(value, json!("tok_abcd1234"));
        assert!(acts_on("STOP-1234", &guards, all) && !acts_on("calm", &guards, all));
    }
}
