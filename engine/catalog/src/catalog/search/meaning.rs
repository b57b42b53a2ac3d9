//! The meaning signal: tools and queries as points of a static word-vector table, so a
//! request in other words than the tool's ("give Jane her money back") still lands near
//! it ("refund"). The table (`vendor/word-vectors/words.bin`, its README beside it)
//! holds one vector per word, distilled from the sentence model all-MiniLM-L6-v2: no
//! model runs at search time and nothing is fetched.
//!
//! A tool's vector is the weighted mean of its words' (name, title, description,
//! argument names, intents), built with the index; a query's is built per search from
//! its words as the ranking by words reads them (an id as its object's words, `ch_...`
//! "charge"; a value as `[values]` says; stop words dropped). A
//! word weighs `smoothing / (smoothing + p)`, `p` its share of all the catalog's words,
//! so "list" and "returns" say little and "refund" much; a word the catalog never says
//! weighs 1. Unless a tool matched every word of the query, a tool's cosine similarity
//! to the query is added, weighted, to its BM25F score as a share of the best hit's
//! (`[meaning]` of `rules/search.toml`): a tool the words do not match can still rank,
//! and `why` then says "similar meaning".

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::Deserialize;

use super::Hit;
use crate::catalog::Tool;

/// The vendored table, raw-deflated: `TBWV`, then version (2), dimensions, word count,
/// parts and centroids a part (u32 each, little endian); each word (a length byte and
/// its bytes, sorted); each part's codebook (an f32 scale, then centroids x width
/// signed bytes, value = byte x scale); each word's codes (a byte a part naming the
/// centroid of that slice of its vector).
const TABLE: &[u8] = include_bytes!("../../../../../vendor/word-vectors/words.bin");

/// The most the table may inflate to (it is about 1.5 MB).
const TABLE_LIMIT: usize = 16 << 20;

/// `[meaning]` of `rules/search.toml`. Absent, the signal is off.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct MeaningRules {
    /// Weight of a tool's similarity (cosine) beside its BM25F score taken as a share
    /// of the best hit's (which weighs 1); 0 turns the signal off.
    pub weight: f64,
    /// The same weight when some tool matched every word of the query, where the
    /// words say most of what is asked ("create a contact"); 0 (the default) leaves
    /// such a query to its words. With `weight` 0 the signal is off either way.
    #[serde(default)]
    pub matched_weight: f64,
    /// A word weighs `smoothing / (smoothing + p)`, `p` its share of the catalog's
    /// words (greater than 0).
    pub smoothing: f64,
    /// How many of the most similar tools take part in the fusion (1 to 1000).
    pub depth: usize,
    /// Cosine similarity a tool needs to take part (-1 to 1): below it, a tool ranks
    /// only by its words.
    pub least_similarity: f64,
}

impl MeaningRules {
    /// What is wrong with these rules, if anything.
    pub fn problem(&self) -> Option<String> {
        let wrong = |what: &str| Some(format!("`[meaning]` {what}"));
        if !(0.0..=10.0).contains(&self.weight) {
            return wrong("`weight` must be between 0 and 10");
        }
        if !(0.0..=10.0).contains(&self.matched_weight) {
            return wrong("`matched_weight` must be between 0 and 10");
        }
        if !(self.smoothing > 0.0 && self.smoothing <= 1.0) {
            return wrong("`smoothing` must be above 0 and at most 1");
        }
        if !(1..=1000).contains(&self.depth) {
            return wrong("`depth` must be between 1 and 1000");
        }
        if !(-1.0..=1.0).contains(&self.least_similarity) {
            return wrong("`least_similarity` must be between -1 and 1");
        }
        None
    }
}

/// The word-vector table, read once per process: product-quantised vectors, each word
/// a code per part naming one centroid of that slice of the vector.
#[derive(Debug)]
struct Table {
    dims: usize,
    parts: usize,
    rows: HashMap<String, usize>,
    /// Part p's centroid c at `(p * centroids + c) * width`.
    books: Vec<f32>,
    centroids: usize,
    /// Word r's code of part p at `r * parts + p`.
    codes: Vec<u8>,
}

impl Table {
    /// The vendored table; `None` (and a warning) if it cannot be read.
    fn get() -> Option<&'static Table> {
        static TABLE_READ: OnceLock<Option<Table>> = OnceLock::new();
        TABLE_READ
            .get_or_init(|| match Table::read(TABLE) {
                Ok(table) => Some(table),
                Err(e) => {
                    tracing::warn!(problem = %e, "word vectors unreadable: find_tools ranks by words alone");
                    None
                }
            })
            .as_ref()
    }

    fn read(deflated: &[u8]) -> Result<Table, String> {
        let bytes = miniz_oxide::inflate::decompress_to_vec_with_limit(deflated, TABLE_LIMIT)
            .map_err(|e| format!("it does not inflate ({:?})", e.status))?;
        let mut at = 0usize;
        let mut take = |n: usize| -> Result<&[u8], String> {
            let got = bytes.get(at..at + n).ok_or("it is cut short")?;
            at += n;
            Ok(got)
        };
        if take(4)? != b"TBWV" {
            return Err("it is no word-vector table".into());
        }
        let mut header = [0usize; 5];
        for field in &mut header {
            let raw = take(4)?;
            *field = u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]) as usize;
        }
        let [version, dims, count, parts, centroids] = header;
        if version != 2 || parts == 0 || dims % parts != 0 || centroids != 256 {
            return Err(format!(
                "version {version}, {dims} dimensions in {parts} parts of {centroids} centroids: not a table this broker reads"
            ));
        }
        let mut rows = HashMap::with_capacity(count);
        for row in 0..count {
            let len = usize::from(take(1)?[0]);
            let word = std::str::from_utf8(take(len)?).map_err(|_| "a word is not UTF-8")?;
            rows.insert(word.to_string(), row);
        }
        let width = dims / parts;
        let mut books = Vec::with_capacity(parts * centroids * width);
        for _ in 0..parts {
            let raw = take(4)?;
            let scale = f32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]);
            books.extend(
                take(centroids * width)?
                    .iter()
                    .map(|&b| f32::from(b as i8) * scale),
            );
        }
        let codes = take(count * parts)?.to_vec();
        if take(1).is_ok() {
            return Err("it has bytes after the codes".into());
        }
        Ok(Table {
            dims,
            parts,
            rows,
            books,
            centroids,
            codes,
        })
    }

    /// Adds `weight` times the vector of `word` to `into`; false when the table has
    /// no such word.
    fn add(&self, word: &str, weight: f32, into: &mut [f32]) -> bool {
        let Some(&row) = self.rows.get(word) else {
            return false;
        };
        let width = self.dims / self.parts;
        let codes = self.codes.get(row * self.parts..(row + 1) * self.parts);
        for (part, (&code, slice)) in codes
            .into_iter()
            .flatten()
            .zip(into.chunks_exact_mut(width))
            .enumerate()
        {
            let at = (part * self.centroids + usize::from(code)) * width;
            for (sum, &v) in slice
                .iter_mut()
                .zip(self.books.get(at..at + width).into_iter().flatten())
            {
                *sum += v * weight;
            }
        }
        true
    }
}

/// The compiled signal: each tool's unit vector and each catalog word's weight.
#[derive(Debug, Default)]
pub(super) struct Meaning {
    rules: Option<MeaningRules>,
    table: Option<&'static Table>,
    /// A word of the catalog -> its weight.
    weights: HashMap<String, f32>,
    /// Tool i's unit vector at `i * dims` (zeros when none of its words is known).
    vectors: Vec<f32>,
}

impl Meaning {
    /// The tools' vectors, when the rules turn the signal on.
    pub(super) fn build(
        rules: Option<MeaningRules>,
        tools: &[Tool],
        stopwords: &HashSet<String>,
    ) -> Self {
        let (Some(rules), Some(table)) = (rules.filter(|r| r.weight > 0.0), Table::get()) else {
            return Self::default();
        };
        let said: Vec<Vec<String>> = tools
            .iter()
            .map(|tool| {
                let mut words = Vec::new();
                let texts = [&tool.name, &tool.title, &tool.description]
                    .into_iter()
                    .chain(&tool.argument_names)
                    .chain(&tool.intents);
                for text in texts {
                    each_word(text, |w| {
                        if w.len() > 1 && !stopwords.contains(w) {
                            words.push(w.to_string());
                        }
                    });
                }
                words
            })
            .collect();
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for word in said.iter().flatten() {
            *counts.entry(word).or_default() += 1;
        }
        let total = counts.values().sum::<usize>().max(1) as f64;
        let weights: HashMap<String, f32> = counts
            .into_iter()
            .map(|(w, n)| {
                let p = n as f64 / total;
                (
                    w.to_string(),
                    (rules.smoothing / (rules.smoothing + p)) as f32,
                )
            })
            .collect();
        let mut vectors = vec![0.0f32; tools.len() * table.dims];
        for (words, into) in said.iter().zip(vectors.chunks_exact_mut(table.dims)) {
            for word in words {
                let weight = weights.get(word).copied().unwrap_or(1.0);
                table.add(word, weight, into);
            }
            unit(into);
        }
        Self {
            rules: Some(rules),
            table: Some(table),
            weights,
            vectors,
        }
    }

    /// Whether the signal is on (the rules turn it on and the table reads).
    pub(super) fn on(&self) -> bool {
        self.table.is_some()
    }

    /// The unit vector of a query read plain (`SearchIndex::read`: its ids as their
    /// objects' words, its values as the rules read them), or `None` when the signal
    /// is off or none of its words is known. Stop words say nothing.
    fn query(&self, plain: &str, stopwords: &HashSet<String>) -> Option<Vec<f32>> {
        let table = self.table?;
        let mut vector = vec![0.0f32; table.dims];
        let mut any = false;
        each_word(plain, |w| {
            if w.len() > 1 && !stopwords.contains(w) {
                let weight = self.weights.get(w).copied().unwrap_or(1.0);
                any |= table.add(w, weight, &mut vector);
            }
        });
        (any && unit(&mut vector)).then_some(vector)
    }

    /// The similarity of the tool at `tool` to a query's vector: a dot product of
    /// unit vectors, summed in eight lanes (which the compiler keeps in vector
    /// registers; one running sum would be a chain of dependent additions).
    fn similar(&self, query: &[f32], tool: usize) -> f32 {
        let dims = query.len();
        let Some(v) = self.vectors.get(tool * dims..(tool + 1) * dims) else {
            return 0.0;
        };
        let mut lanes = [0.0f32; 8];
        for (a, b) in v.chunks_exact(8).zip(query.chunks_exact(8)) {
            for i in 0..8 {
                lanes[i] += a[i] * b[i];
            }
        }
        let rest: f32 = (v.chunks_exact(8).remainder().iter())
            .zip(query.chunks_exact(8).remainder())
            .map(|(a, b)| a * b)
            .sum();
        lanes.iter().sum::<f32>() + rest
    }

    /// Fuses `hits` (ranked by BM25F, best first) with the similarities of the tools
    /// `kept` to the query (read `plain`): a hit's score becomes its share of the best
    /// hit's plus `weight` times its similarity (`matched_weight` when a hit matched
    /// every one of the query's `words`: then the words say most of it), when that is
    /// among the `depth` most similar and at least `least_similarity`. A tool only the
    /// meaning places joins as a hit that matched no word. Scores, not ranks, are
    /// fused: a clear winner by its words stays ahead of a tool only somewhat alike.
    pub(super) fn fuse(
        &self,
        hits: &mut Vec<Hit>,
        plain: &str,
        stopwords: &HashSet<String>,
        kept: &[usize],
        words: usize,
    ) {
        let Some(rules) = self.rules else {
            return;
        };
        // The words say most of what is asked when a tool matched every one of them.
        let covered = hits.iter().map(|h| h.matched as usize).max().unwrap_or(0);
        let weight = if covered >= words {
            rules.matched_weight
        } else {
            rules.weight
        };
        if weight <= 0.0 {
            return;
        }
        let Some(meant) = self.query(plain, stopwords) else {
            return;
        };
        let mut similar: Vec<(usize, f32)> = kept
            .iter()
            .map(|&tool| (tool, self.similar(&meant, tool)))
            .collect();
        let least = rules.least_similarity as f32;
        similar.retain(|&(_, s)| s >= least);
        let by_similarity =
            |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if similar.len() > rules.depth {
            similar.select_nth_unstable_by(rules.depth, by_similarity);
            similar.truncate(rules.depth);
        }
        let mut meant: HashMap<usize, f64> = similar
            .into_iter()
            .map(|(tool, s)| (tool, weight * f64::from(s)))
            .collect();
        let best = hits.first().map_or(1.0, |h| h.score).max(f64::MIN_POSITIVE);
        // A hit the meaning does not move keeps its place among the others (each score
        // is divided by the same best); the moved ones (at most `depth`) are sorted and
        // merged back in, so the whole list is not sorted again.
        let mut moved: Vec<Hit> = Vec::with_capacity(meant.len());
        let mut still: Vec<Hit> = Vec::with_capacity(hits.len());
        for mut hit in hits.drain(..) {
            hit.score /= best;
            match meant.remove(&hit.tool) {
                Some(similarity) => {
                    hit.score += similarity;
                    moved.push(hit);
                }
                None => still.push(hit),
            }
        }
        moved.extend(meant.into_iter().map(|(tool, score)| Hit {
            tool,
            score,
            matched: 0,
            own: 0,
            related: 0,
        }));
        moved.sort_by(best_first);
        merge(still, moved, hits);
    }
}

/// Higher score first; ties in catalog order.
fn best_first(a: &Hit, b: &Hit) -> std::cmp::Ordering {
    b.score.total_cmp(&a.score).then(a.tool.cmp(&b.tool))
}

/// Appends to `into` the hits of `a` and `b`, each already in [`best_first`] order, as
/// one list in that order.
fn merge(a: Vec<Hit>, b: Vec<Hit>, into: &mut Vec<Hit>) {
    into.reserve(a.len() + b.len());
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if best_first(y, x).is_lt() => b.next(),
            (Some(_), _) => a.next(),
            (None, Some(_)) => b.next(),
            (None, None) => break,
        };
        into.extend(next);
    }
}

/// Scales `v` to length 1; false when it is all zeros.
fn unit(v: &mut [f32]) -> bool {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    norm > 0.0
}

/// Calls `f` with each word of `text`, lowercased: runs of ASCII letters, split where
/// a small letter meets a capital (`refundCharge`, `refund_charge`: two words).
fn each_word(text: &str, mut f: impl FnMut(&str)) {
    let mut word = String::new();
    let mut last_small = false;
    for c in text.chars() {
        let boundary = !c.is_ascii_alphabetic() || (last_small && c.is_ascii_uppercase());
        if boundary && !word.is_empty() {
            f(&word);
            word.clear();
        }
        if c.is_ascii_alphabetic() {
            word.push(c.to_ascii_lowercase());
        }
        last_small = c.is_ascii_lowercase();
    }
    if !word.is_empty() {
        f(&word);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        each_word(text, |w| out.push(w.to_string()));
        out
    }

    #[test]
    fn words_split_at_case_and_punctuation() {
        assert_eq!(words("refundCharge"), ["refund", "charge"]);
        assert_eq!(words("post_v1_refunds"), ["post", "v", "refunds"]);
        assert_eq!(
            words("Give Jane's money-back"),
            ["give", "jane", "s", "money", "back"]
        );
        assert_eq!(words("URL"), ["url"]);
    }

    #[test]
    fn the_vendored_table_reads_and_knows_what_words_mean() {
        let table = Table::get().expect("the vendored table reads");
        assert!(table.rows.len() > 20_000, "{}", table.rows.len());
        assert_eq!((table.dims, table.parts), (192, 48));
        let vector = |w: &str| {
            let mut v = vec![0.0; table.dims];
            assert!(table.add(w, 1.0, &mut v), "{w}");
            unit(&mut v);
            v
        };
        let cos = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        // Near words by meaning, far from an unrelated one (the table is fitted to the
        // catalog's intents, which moves a word like "refund" toward its tools: the
        // words no intent says keep their neighbours).
        let domain = vector("domain");
        for (word, near) in [
            ("repay", "payment"),
            ("photo", "picture"),
            ("cancel", "stop"),
        ] {
            let (word_v, near_v) = (vector(word), vector(near));
            assert!(
                cos(&word_v, &near_v) > cos(&word_v, &domain) + 0.1,
                "{word}~{near} {} {word}~domain {}",
                cos(&word_v, &near_v),
                cos(&word_v, &domain)
            );
        }
    }

    #[test]
    fn a_cut_or_foreign_table_is_refused() {
        let cut = TABLE.get(..TABLE.len() - 1).unwrap();
        assert!(Table::read(cut).is_err());
        assert!(Table::read(b"PK\x03\x04").is_err());
        let deflate = |raw: &[u8]| miniz_oxide::deflate::compress_to_vec(raw, 6);
        let foreign = Table::read(&deflate(b"TBWV\x01\0\0\0")).unwrap_err();
        assert!(foreign.contains("cut short"), "{foreign}");
        let mut header = b"TBWV".to_vec();
        for field in [3u32, 192, 1, 48, 256] {
            header.extend(field.to_le_bytes());
        }
        let newer = Table::read(&deflate(&header)).unwrap_err();
        assert!(newer.contains("version 3"), "{newer}");
    }

    /// A query is read once for words and meaning: an id speaks as its object
    /// (`ch_...` is a charge), a number says nothing.
    #[test]
    fn a_query_means_what_its_ids_name() {
        let raw: crate::catalog::search::RawSearch = toml::from_str(
            "k1 = 1.2\nb = 0.5\n[weights]\nname = 1.0\naliases = 1.0\ntitle = 1.0\n\
             category = 1.0\ndescription = 1.0\npath = 1.0\noperation = 1.0\n\
             [id_prefixes]\nch = \"charge\"\n\
             [meaning]\nweight = 0.3\nsmoothing = 0.03\ndepth = 50\nleast_similarity = 0.3\n",
        )
        .unwrap();
        let index = crate::catalog::search::SearchIndex::build(&raw, &[]);
        let meaning = &index.meaning;
        assert!(meaning.on());
        let read = |query: &str| meaning.query(&index.read(query).text, &HashSet::new());
        let charge = read("charge").unwrap();
        assert_eq!(read("ch_3MmlLrLkdIwHu7ix"), Some(charge));
        assert_eq!(read("42 2026-12-01 $25.50"), None);
    }

    #[test]
    fn moved_hits_merge_back_as_a_full_sort_would_place_them() {
        let hit = |tool: usize, score: f64| Hit {
            tool,
            score,
            matched: 1,
            own: 1,
            related: 0,
        };
        let still = vec![hit(4, 0.9), hit(1, 0.5), hit(7, 0.5), hit(2, 0.1)];
        let moved = vec![hit(9, 1.2), hit(3, 0.5), hit(8, 0.5), hit(0, 0.0)];
        let mut sorted: Vec<Hit> = still.iter().chain(&moved).copied().collect();
        sorted.sort_by(best_first);
        let mut merged = Vec::new();
        merge(still, moved, &mut merged);
        assert_eq!(merged, sorted);
        let tools: Vec<usize> = merged.iter().map(|h| h.tool).collect();
        assert_eq!(tools, [9, 4, 1, 3, 7, 8, 2, 0]);
    }

    #[test]
    fn rules_out_of_range_are_named() {
        let good = MeaningRules {
            weight: 0.75,
            matched_weight: 0.25,
            smoothing: 0.03,
            depth: 50,
            least_similarity: 0.3,
        };
        assert_eq!(good.problem(), None);
        let bad = MeaningRules {
            matched_weight: 11.0,
            ..good
        };
        assert!(bad.problem().unwrap().contains("matched_weight"));
        let bad = MeaningRules { depth: 0, ..good };
        assert!(bad.problem().unwrap().contains("depth"));
        let bad = MeaningRules {
            smoothing: 0.0,
            ..good
        };
        assert!(bad.problem().unwrap().contains("smoothing"));
    }
}
