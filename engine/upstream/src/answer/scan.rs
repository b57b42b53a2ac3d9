//! One pass over an upstream answer: the JSON text of `data` written straight from the
//! answer's bytes, for tools whose response plan needs no tree (engine/DESIGN.md "An
//! answer in one pass").
//!
//! The tree path parses the answer into a `Value`, redacts it ([`crate::answer::redact`]), cuts
//! its lists ([`crate::answer::response::truncate`]) and writes it out again. For a tool with no
//! `response.data` selection, no JSONPath redaction, no pagination, no job to record and
//! no shaping asked, that is one copy of the answer with a few values replaced, and
//! [`scan`] makes that copy in one pass, with no allocation per value:
//!
//! - every value is checked as serde_json checks it: the same grammar, the same nesting
//!   limit, the same strings and numbers (a string with an escape, or a number that is
//!   not a plain integer, is decoded by serde_json itself and written as it writes it);
//! - every credential-like key's value is replaced ([`Redaction::is_secret_key`]), a null
//!   one kept, and every string holding one of this request's secrets; a member whose
//!   key holds one is dropped, value and all;
//! - an object's members are written in the order of their keys, the last of equal keys
//!   kept, as a `Value`'s map keeps them;
//! - the top-level lists (`data` itself, or every list directly under it) are cut to the
//!   item budget, the items cut still checked and their redactions counted.
//!
//! So the text is byte for byte the one the tree path writes, with the same count of
//! redacted values and the same truncation records; the tests hold the two paths to
//! that on every answer they know, and on every prefix of each.

use std::borrow::Cow;

use crate::answer::envelope::Truncation;
use crate::answer::redact::MIN_SECRET_LEN;
use crate::catalog::rules::Redaction;

/// The nesting serde_json allows: a value inside 127 lists or objects, no deeper.
const DEPTH_LIMIT: usize = 128;

/// The bytes that end the plain part of a string: a quote, a backslash, a control
/// character (which serde_json refuses inside a string).
const STOP: [bool; 256] = {
    let mut stop = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        stop[b] = true;
        b += 1;
    }
    stop[b'"' as usize] = true;
    stop[b'\\' as usize] = true;
    stop
};

/// Strings up to this long are searched for secrets by hand.
const SHORT: usize = 64;

/// The bytes some secret starts with.
#[derive(Clone, Copy)]
struct Starts([bool; 256]);

impl Starts {
    fn of(secrets: &[&[u8]]) -> Self {
        let mut starts = [false; 256];
        for &first in secrets.iter().filter_map(|s| s.first()) {
            starts[usize::from(first)] = true;
        }
        Self(starts)
    }
}

/// Whether one of `secrets` (each at least `shortest` long, starting with a byte of
/// `starts`) occurs in the short `hay`: one look at each byte, and a comparison where
/// a secret could start.
fn holds_any(hay: &[u8], secrets: &[&[u8]], starts: &Starts, shortest: usize) -> bool {
    let Some(last_start) = hay.len().checked_sub(shortest) else {
        return false;
    };
    let candidates = hay.get(..=last_start).unwrap_or_default();
    candidates.iter().enumerate().any(|(at, &b)| {
        starts.0[usize::from(b)]
            && hay
                .get(at..)
                .is_some_and(|rest| secrets.iter().any(|s| rest.starts_with(s)))
    })
}

/// Whether `secret` occurs in `body`: each place its first byte is (found with `memchr`,
/// several bytes at a time) compared with it. A `memmem` searcher costs about a thousand
/// instructions to build, more than this takes over a short answer; starting from the
/// secret's least common byte instead saved nothing (2026-11-29).
fn occurs(body: &[u8], secret: &[u8]) -> bool {
    let Some(&first) = secret.first() else {
        return false;
    };
    memchr::memchr_iter(first, body)
        .any(|at| body.get(at..).is_some_and(|rest| rest.starts_with(secret)))
}

/// A key's first eight bytes as a big-endian number, zero-padded.
fn prefix(key: &[u8]) -> u64 {
    if let Some(head) = key.first_chunk::<8>() {
        return u64::from_be_bytes(*head);
    }
    key.iter()
        .zip((0..8).rev())
        .fold(0, |n, (&b, place)| n | u64::from(b) << (8 * place))
}

/// What a pass produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scanned {
    /// The JSON text of `data`.
    pub text: String,
    /// Values redaction replaced.
    pub redacted: usize,
    /// Lists cut to the item budget, as [`crate::answer::response::truncate`] records them.
    pub truncation: Vec<Truncation>,
}

/// The answer is not one JSON value (or nests deeper than serde_json allows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotJson;

/// Writes the answer `body` (not empty, not all whitespace) as `data`: redacted by key
/// and by `secrets`, its top-level lists cut to `budget` items when there is one.
pub fn scan(
    body: &[u8],
    rules: &Redaction,
    secrets: &[&str],
    budget: Option<usize>,
) -> Result<Scanned, NotJson> {
    scan_guarded(body, rules, secrets, budget, None)?.ok_or(NotJson)
}

/// Whether a string of the answer would be acted on by a guard rule: its text, and
/// whether it was written with an escape (decoded). One that would stops the pass.
pub type Guard<'g> = &'g dyn Fn(&str, bool) -> bool;

/// [`scan`], each string value read by `guard` too: `None` when it says a string would
/// be acted on (the caller reads the answer as a tree then, where the guards change
/// it).
pub fn scan_guarded(
    body: &[u8],
    rules: &Redaction,
    secrets: &[&str],
    budget: Option<usize>,
    guard: Option<Guard<'_>>,
) -> Result<Option<Scanned>, NotJson> {
    let src = std::str::from_utf8(body).map_err(|_| NotJson)?;
    let secrets: Vec<&[u8]> = secrets
        .iter()
        .filter(|s| s.len() >= MIN_SECRET_LEN)
        .map(|s| s.as_bytes())
        .collect();
    let mut s = Scanner {
        src,
        bytes: body,
        pos: 0,
        out: Vec::with_capacity(body.len() + 16),
        rules,
        secrets: &secrets,
        finders: None,
        shortest: secrets.iter().map(|s| s.len()).min().unwrap_or(usize::MAX),
        in_body: secrets.iter().any(|secret| occurs(body, secret)),
        starts: Starts::of(&secrets),
        replacement: rules.replacement_json(),
        redacted: 0,
        // Room for the members of a few nested objects, allocated once (growing from
        // empty costs a reallocation at 4, 8 and 16).
        members: Vec::with_capacity(32),
        cuts: Vec::new(),
        scratch: Vec::new(),
        order: Vec::with_capacity(32),
        depth_left: DEPTH_LIMIT,
        budget,
        truncation: Vec::new(),
        guard,
        guarded: false,
    };
    s.skip_ws();
    if let Err(e) = s.value(Level::Top) {
        return if s.guarded { Ok(None) } else { Err(e) };
    }
    s.skip_ws();
    if s.pos != s.bytes.len() {
        return Err(NotJson);
    }
    // Only whole values were written, each from valid UTF-8 or by serde_json.
    let text = String::from_utf8(s.out).map_err(|_| NotJson)?;
    Ok(Some(Scanned {
        text,
        redacted: s.redacted,
        truncation: s.truncation,
    }))
}

/// Where a value sits, for the item budget.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    /// `data` itself.
    Top,
    /// Anywhere deeper.
    Inner,
}

/// A string as read.
enum Str {
    /// No escape: the string as it came lies at `open..=close`, quotes included, and is
    /// copied as it is.
    Plain { open: usize, close: usize },
    /// With an escape: its text, decoded by serde_json (and written as it writes it).
    Decoded(String),
}

/// An object member written to the output, kept until its object closes.
struct Member<'a> {
    key: Cow<'a, str>,
    /// The key's first eight bytes, big-endian, zero-padded: ordered as the keys are
    /// where they differ (most keys differ there, and then no string is compared).
    prefix: u64,
    /// Its `"key":value` text in the output.
    start: usize,
    end: usize,
    /// Values redaction replaced inside it.
    redacted: usize,
}

struct Scanner<'a, 'r> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    out: Vec<u8>,
    rules: &'r Redaction,
    /// This request's secrets long enough to look for.
    secrets: &'r [&'r [u8]],
    /// The length of the shortest of them: a shorter string holds none.
    shortest: usize,
    /// Whether one of them occurs anywhere in the answer's bytes. When none does, no
    /// string written as it came (without an escape) holds one, and none is searched:
    /// one pass over the answer per secret instead of a search per string.
    in_body: bool,
    /// The bytes they start with.
    starts: Starts,
    /// Searchers for them, built for the first long string (building one costs more than
    /// looking through a short string by hand).
    finders: Option<Vec<memchr::memmem::Finder<'r>>>,
    /// The replacement as a JSON string.
    replacement: &'r [u8],
    redacted: usize,
    /// The members of the objects being read, innermost last.
    members: Vec<Member<'a>>,
    /// The lists of `data`'s own members that were cut, by the member's place in
    /// `members`: recorded when `data` closes, in key order.
    cuts: Vec<(usize, Truncation)>,
    /// Room to put an object's members in key order.
    scratch: Vec<u8>,
    /// Room to sort an object's members: each one's key prefix and place in `members`.
    order: Vec<(u64, usize)>,
    depth_left: usize,
    budget: Option<usize>,
    truncation: Vec<Truncation>,
    /// What reads each string value for the guard rules.
    guard: Option<Guard<'r>>,
    /// Whether the guard stopped the pass.
    guarded: bool,
}

impl<'a> Scanner<'a, '_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\t' | b'\r')) {
            self.pos += 1;
        }
    }

    fn value(&mut self, level: Level) -> Result<(), NotJson> {
        match self.peek().ok_or(NotJson)? {
            b'{' => self.object(level == Level::Top),
            b'[' => {
                let budget = match level {
                    Level::Inner => None,
                    _ => self.budget,
                };
                let (total, returned) = self.array(budget)?;
                if level == Level::Top && total > returned {
                    self.truncation.push(Truncation {
                        pointer: String::new(),
                        total,
                        returned,
                    });
                }
                Ok(())
            }
            b'"' => {
                let bytes = self.bytes;
                match self.string()? {
                    Str::Plain { open, close } => {
                        if let Some(guard) = self.guard
                            && guard(self.src.get(open + 1..close).unwrap_or_default(), false)
                        {
                            self.guarded = true;
                            return Err(NotJson);
                        }
                        let text = bytes.get(open + 1..close).unwrap_or_default();
                        if self.holds_secret(text) {
                            self.redact_string();
                        } else {
                            let quoted = bytes.get(open..=close).unwrap_or_default();
                            self.out.extend_from_slice(quoted);
                        }
                    }
                    Str::Decoded(text) => {
                        if let Some(guard) = self.guard
                            && guard(&text, true)
                        {
                            self.guarded = true;
                            return Err(NotJson);
                        }
                        if self.holds_secret_decoded(&text) {
                            self.redact_string();
                        } else {
                            serde_json::to_writer(&mut self.out, &text).map_err(|_| NotJson)?;
                        }
                    }
                }
                Ok(())
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(NotJson),
        }
    }

    fn redact_string(&mut self) {
        self.out.extend_from_slice(self.replacement);
        self.redacted += 1;
    }

    /// Whether `text`, a string of the answer as it came (no escape), holds one of this
    /// request's secrets. Inline: usually no secret occurs in the answer at all, or the
    /// string is shorter than any, and the check is one comparison.
    #[inline]
    fn holds_secret(&mut self, text: &[u8]) -> bool {
        self.in_body && self.holds_secret_text(text)
    }

    /// Whether any `text` holds one of this request's secrets.
    #[inline]
    fn holds_secret_text(&mut self, text: &[u8]) -> bool {
        if text.len() < self.shortest {
            return false;
        }
        self.holds_secret_searched(text)
    }

    /// [`Scanner::holds_secret_text`] for a text as long as a secret at least.
    #[inline(never)]
    fn holds_secret_searched(&mut self, text: &[u8]) -> bool {
        if text.len() <= SHORT {
            return holds_any(text, self.secrets, &self.starts, self.shortest);
        }
        let secrets = self.secrets;
        let finders = self
            .finders
            .get_or_insert_with(|| secrets.iter().map(memchr::memmem::Finder::new).collect());
        finders.iter().any(|f| f.find(text).is_some())
    }

    /// Whether a string that had an escape holds one of this request's secrets, as
    /// decoded or as written again ([`crate::answer::redact::holds_secret`]).
    #[cold]
    fn holds_secret_decoded(&mut self, text: &str) -> bool {
        if self.secrets.is_empty() {
            return false;
        }
        self.holds_secret_text(text.as_bytes())
            || crate::answer::redact::escaped(text)
                .is_some_and(|json| self.holds_secret_text(json.as_bytes()))
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), NotJson> {
        if !self
            .bytes
            .get(self.pos..)
            .unwrap_or_default()
            .starts_with(word)
        {
            return Err(NotJson);
        }
        self.pos += word.len();
        self.out.extend_from_slice(word);
        Ok(())
    }

    /// A number: a plain integer is copied; anything else is read and written by
    /// serde_json, which also rejects what is not a number.
    fn number(&mut self) -> Result<(), NotJson> {
        let start = self.pos;
        while matches!(
            self.peek(),
            Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
        ) {
            self.pos += 1;
        }
        let token = self.src.get(start..self.pos).ok_or(NotJson)?;
        let digits = token.strip_prefix('-').unwrap_or(token);
        let plain = !digits.is_empty()
            && digits.len() <= 18
            && digits.bytes().all(|b| b.is_ascii_digit())
            && (!digits.starts_with('0') || token == "0");
        if plain {
            self.out.extend_from_slice(token.as_bytes());
        } else {
            let number: serde_json::Number = serde_json::from_str(token).map_err(|_| NotJson)?;
            serde_json::to_writer(&mut self.out, &number).map_err(|_| NotJson)?;
        }
        Ok(())
    }

    /// The string at `pos`. The plain case (no escape) is inline: it is most strings,
    /// and most of what an answer is made of.
    #[inline]
    fn string(&mut self) -> Result<Str, NotJson> {
        let open = self.pos;
        let mut i = open + 1;
        while let Some(&b) = self.bytes.get(i) {
            if STOP[usize::from(b)] {
                return match b {
                    b'"' => {
                        self.pos = i + 1;
                        Ok(Str::Plain { open, close: i })
                    }
                    b'\\' => self.escaped(open, i),
                    _ => Err(NotJson),
                };
            }
            i += 1;
        }
        Err(NotJson)
    }

    /// A string opened at `open` with an escape at `i`: decoded by serde_json.
    #[cold]
    fn escaped(&mut self, open: usize, mut i: usize) -> Result<Str, NotJson> {
        loop {
            match self.bytes.get(i).copied().ok_or(NotJson)? {
                b'\\' => i += 2,
                b'"' => break,
                _ => i += 1,
            }
        }
        let decoded: String =
            serde_json::from_str(self.src.get(open..=i).ok_or(NotJson)?).map_err(|_| NotJson)?;
        self.pos = i + 1;
        Ok(Str::Decoded(decoded))
    }

    /// A key's text.
    fn key_text(&self, key: Str) -> Result<Cow<'a, str>, NotJson> {
        match key {
            Str::Plain { open, close } => {
                let src = self.src;
                src.get(open + 1..close).map(Cow::Borrowed).ok_or(NotJson)
            }
            Str::Decoded(text) => Ok(Cow::Owned(text)),
        }
    }

    /// Writes a key as it came (`quoted`: where it lies, quotes included, when it had no
    /// escape) or as serde_json writes it.
    fn write_key(&mut self, key: &str, quoted: Option<(usize, usize)>) -> Result<(), NotJson> {
        match quoted {
            Some((open, close)) => {
                let bytes = self.bytes;
                self.out
                    .extend_from_slice(bytes.get(open..=close).unwrap_or_default());
                Ok(())
            }
            None => serde_json::to_writer(&mut self.out, key).map_err(|_| NotJson),
        }
    }

    fn enter(&mut self) -> Result<(), NotJson> {
        self.depth_left -= 1;
        if self.depth_left == 0 {
            return Err(NotJson);
        }
        self.pos += 1;
        Ok(())
    }

    /// A list, its items past `budget` read but not written. `(items, items written)`.
    fn array(&mut self, budget: Option<usize>) -> Result<(usize, usize), NotJson> {
        self.enter()?;
        self.out.push(b'[');
        let keep = budget.unwrap_or(usize::MAX);
        let mut total = 0;
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
        } else {
            loop {
                self.skip_ws();
                if total < keep {
                    if total > 0 {
                        self.out.push(b',');
                    }
                    self.value(Level::Inner)?;
                } else {
                    let mark = self.out.len();
                    self.value(Level::Inner)?;
                    self.out.truncate(mark);
                }
                total += 1;
                self.skip_ws();
                match self.peek().ok_or(NotJson)? {
                    b',' => self.pos += 1,
                    b']' => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(NotJson),
                }
            }
        }
        self.out.push(b']');
        self.depth_left += 1;
        Ok((total, total.min(keep)))
    }

    /// An object; `top` when it is `data` itself (its lists are cut).
    fn object(&mut self, top: bool) -> Result<(), NotJson> {
        self.enter()?;
        self.out.push(b'{');
        let frame = self.members.len();
        let content = self.out.len();
        let mut in_order = true;
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
        } else {
            loop {
                self.skip_ws();
                if self.peek() != Some(b'"') {
                    return Err(NotJson);
                }
                let key = self.string()?;
                self.skip_ws();
                if self.peek() != Some(b':') {
                    return Err(NotJson);
                }
                self.pos += 1;
                self.skip_ws();
                let quoted = match key {
                    Str::Plain { open, close } => Some((open, close)),
                    Str::Decoded(_) => None,
                };
                let key = self.key_text(key)?;
                let before = self.redacted;
                let holds = match quoted {
                    Some(_) => self.holds_secret(key.as_bytes()),
                    None => self.holds_secret_decoded(&key),
                };
                let start = if holds {
                    // Read (it must be JSON) but neither it nor its key written: one
                    // redaction, kept as a member with nothing written, so a repeated
                    // key still replaces it.
                    let mark = self.out.len();
                    self.value(Level::Inner)?;
                    self.out.truncate(mark);
                    self.redacted = before + 1;
                    mark
                } else {
                    if self.out.len() > content {
                        self.out.push(b',');
                    }
                    let start = self.out.len();
                    self.write_key(&key, quoted)?;
                    self.out.push(b':');
                    if self.rules.is_secret_key(&key) {
                        // Read (it must be JSON) but not written, nor looked into.
                        let mark = self.out.len();
                        self.value(Level::Inner)?;
                        let null = self.out.get(mark..) == Some(b"null".as_slice());
                        self.out.truncate(mark);
                        self.redacted = before;
                        if null {
                            self.out.extend_from_slice(b"null");
                        } else {
                            self.redact_string();
                        }
                    } else if top && self.peek() == Some(b'[') {
                        let (total, returned) = self.array(self.budget)?;
                        if total > returned {
                            let pointer = format!("/{}", key.replace('~', "~0").replace('/', "~1"));
                            let cut = Truncation {
                                pointer,
                                total,
                                returned,
                            };
                            self.cuts.push((self.members.len(), cut));
                        }
                    } else {
                        self.value(Level::Inner)?;
                    }
                    start
                };
                let prefix = prefix(key.as_bytes());
                if let Some(last) = self.members.get(frame..).and_then(<[Member]>::last)
                    && (last.prefix, &last.key) >= (prefix, &key)
                {
                    in_order = false;
                }
                self.members.push(Member {
                    prefix,
                    key,
                    start,
                    end: self.out.len(),
                    redacted: self.redacted - before,
                });
                self.skip_ws();
                match self.peek().ok_or(NotJson)? {
                    b',' => self.pos += 1,
                    b'}' => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(NotJson),
                }
            }
        }
        if !in_order {
            self.reorder(frame, content, top);
        } else if top {
            // In order, so no key repeats: every cut stays, already in key order.
            let cuts = self.cuts.drain(..).map(|(_, cut)| cut);
            self.truncation.extend(cuts);
        }
        self.members.truncate(frame);
        self.out.push(b'}');
        self.depth_left += 1;
        Ok(())
    }

    /// Rewrites the members of the object whose text starts at `content` in the order of
    /// their keys, keeping the last of equal keys (and only its redactions and cut; the
    /// cuts are recorded here when the object is `data`, `top`).
    ///
    /// Sorts each member's key prefix and place (numbers, no string compared), then
    /// orders by the whole key only the runs of members whose prefixes are equal (rare:
    /// keys alike in their first eight bytes).
    fn reorder(&mut self, frame: usize, content: usize, top: bool) {
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend(
            self.members
                .iter()
                .enumerate()
                .skip(frame)
                .map(|(i, m)| (m.prefix, i)),
        );
        // Of equal prefixes, the earlier member first.
        order.sort_unstable();
        let members = &self.members;
        let key = |i: usize| members.get(i).map(|m| &m.key);
        let mut run = 0;
        while run < order.len() {
            let prefix = order.get(run).map(|o| o.0);
            let end = run
                + order
                    .get(run..)
                    .unwrap_or_default()
                    .iter()
                    .take_while(|o| Some(o.0) == prefix)
                    .count();
            if end - run > 1
                && let Some(same) = order.get_mut(run..end)
            {
                // Stable: of equal keys the one written last stays last, and wins.
                same.sort_by(|a, b| key(a.1).cmp(&key(b.1)));
            }
            run = end;
        }
        self.scratch.clear();
        // Once, for every object of the answer to come.
        self.scratch.reserve(self.bytes.len());
        self.scratch
            .extend_from_slice(self.out.get(content..).unwrap_or_default());
        self.out.truncate(content);
        let mut first = true;
        for (n, &(prefix, i)) in order.iter().enumerate() {
            let Some(member) = self.members.get(i) else {
                continue;
            };
            let replaced = order.get(n + 1).is_some_and(|&(next_prefix, next)| {
                next_prefix == prefix && self.members.get(next).is_some_and(|m| m.key == member.key)
            });
            let cut = match top {
                true => self.cuts.iter().position(|c| c.0 == i),
                false => None,
            };
            if replaced {
                self.redacted -= member.redacted;
                continue;
            }
            if member.start == member.end {
                continue; // dropped: its key held a secret
            }
            if !first {
                self.out.push(b',');
            }
            first = false;
            let text = self
                .scratch
                .get(member.start - content..member.end - content)
                .unwrap_or_default();
            self.out.extend_from_slice(text);
            if let Some(at) = cut {
                let (_, cut) = self.cuts.swap_remove(at);
                self.truncation.push(cut);
            }
        }
        if top {
            self.cuts.clear();
        }
        self.order = order;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::rules::{RawRedaction, Redaction};

    /// Rules that name no key: only the caller's secrets are searched for.
    fn rules() -> Redaction {
        Redaction::compile(RawRedaction {
            replacement: "[REDACTED]".into(),
            keys: Vec::new(),
            suffixes: Vec::new(),
            keep: Vec::new(),
        })
    }

    #[test]
    fn finds_secrets_in_short_and_long_strings() {
        for (hay, needle, found) in [
            ("abc", "abc", true),
            ("xxabcxx", "abc", true),
            ("ababac", "abac", true),
            ("ababab", "abac", false),
            ("ab", "abc", false),
            ("", "a", false),
        ] {
            let secrets = [needle.as_bytes()];
            let starts = Starts::of(&secrets);
            assert_eq!(
                holds_any(hay.as_bytes(), &secrets, &starts, needle.len()),
                found,
                "{hay} {needle}"
            );
        }
        // Several secrets: of other lengths and first bytes, or the same first byte.
        let secrets: [&[u8]; 3] = [b"abcd", b"abxyz123", b"qrs"];
        let starts = Starts::of(&secrets);
        for (hay, found) in [
            ("__abxyz123", true),
            ("__abxyz12", false),
            ("abcd", true),
            ("abc", false),
            ("qrs", true),
            ("qr", false),
            ("xxqrsxx", true),
            ("abxyz12abcd", true),
            ("abxyz12abc", false),
        ] {
            assert_eq!(
                holds_any(hay.as_bytes(), &secrets, &starts, 3),
                found,
                "{hay}"
            );
        }
        let secret = "tb_long_secret_value";
        for pad in [0, 10, 60, 100, 5000] {
            let body = format!(r#"["{}{secret}{}"]"#, "x".repeat(pad), "y".repeat(pad));
            let scanned = scan(body.as_bytes(), &rules(), &[secret], None).unwrap();
            assert_eq!(scanned.text, r#"["[REDACTED]"]"#, "{pad}");
            let body = format!(r#"["{}"]"#, "x".repeat(pad));
            let scanned = scan(body.as_bytes(), &rules(), &[secret], None).unwrap();
            assert_eq!(scanned.redacted, 0, "{pad}");
        }
    }

    /// The answer's bytes are searched once for each secret; a secret only an escape
    /// spells (so not in those bytes) is still found in its string and its key.
    #[test]
    fn finds_a_secret_the_answer_holds_only_escaped() {
        let secret = "tb_secret_value";
        for (body, text, redacted) in [
            (r#"{"a":"tb_secret_value"}"#, r#"{"a":"[REDACTED]"}"#, 1),
            (
                r#"{"a":"tb_s\u0065cret_value"}"#,
                r#"{"a":"[REDACTED]"}"#,
                1,
            ),
            (r#"{"tb_s\u0065cret_value":1,"b":2}"#, r#"{"b":2}"#, 1),
            (
                r#"{"a":"tb_s","b":"ecret_value"}"#,
                r#"{"a":"tb_s","b":"ecret_value"}"#,
                0,
            ),
            (r#"{"a":"tb_secret_valu"}"#, r#"{"a":"tb_secret_valu"}"#, 0),
            (
                r#"["t","tb","tb_secret_valuE"]"#,
                r#"["t","tb","tb_secret_valuE"]"#,
                0,
            ),
        ] {
            let scanned = scan(body.as_bytes(), &rules(), &[secret], None).unwrap();
            assert_eq!(
                (scanned.text.as_str(), scanned.redacted),
                (text, redacted),
                "{body}"
            );
        }
        for (body, secret, found) in [
            ("abc", "abc", true),
            ("xabxabc", "abc", true),
            ("xabxab", "abc", false),
            ("ab", "abc", false),
        ] {
            assert_eq!(occurs(body.as_bytes(), secret.as_bytes()), found, "{body}");
        }
    }
}
