//! What a rule without keywords needs of a text before its pattern runs (`needs` in
//! `rules/guards.toml`): signals one pass over the text's bytes finds for every rule at
//! once. A rule's signal must follow from its pattern (wherever the pattern can match,
//! the signal holds), so a text without it runs no pattern and loses nothing.
//!
//! - `digits >= n`: at least n ASCII digits anywhere;
//! - `digit_run >= n`: n digits in a row, a single space or dash allowed between two of
//!   them (how card and account numbers are written; a date or a time never has 13);
//! - `shape XXXX`: bytes of these classes in a row (`A` a capital, `a` a small letter,
//!   `9` a digit; 2 to 8 of them): `shape AA99` is an IBAN's country and check digits;
//! - `non_ascii`: a byte outside ASCII.
//!
//! Digits are counted 255 bytes at a time (the compiler counts 16 or 32 at once); runs
//! and shapes are read from bit masks of 64 bytes, and only when the digit count allows
//! them.

/// The most classes a [`Shape`] has.
const MOST_SHAPE: usize = 8;

/// The most distinct shapes one pass looks for; past it a shape counts as present (the
/// pattern then decides).
const MOST_SHAPES_AT_ONCE: usize = 4;

/// A byte class of a [`Shape`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// `A`: an ASCII capital.
    Upper,
    /// `a`: an ASCII small letter.
    Lower,
    /// `9`: an ASCII digit.
    Digit,
}

/// Bytes of given classes in a row (`AA99`): for each class, the positions that hold
/// it, as bits (position j is bit j).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    len: usize,
    /// By [`Class`]: the positions of capitals, small letters, digits.
    at: [u8; 3],
}

impl Shape {
    fn parse(text: &str) -> Option<Self> {
        if !(2..=MOST_SHAPE).contains(&text.len()) {
            return None;
        }
        let mut at = [0u8; 3];
        for (j, c) in text.bytes().enumerate() {
            let class = match c {
                b'A' => Class::Upper,
                b'a' => Class::Lower,
                b'9' => Class::Digit,
                _ => return None,
            };
            at[class as usize] |= 1 << j;
        }
        Some(Self {
            len: text.len(),
            at,
        })
    }

    /// The positions of `class`, from the first.
    fn positions(&self, class: Class) -> impl Iterator<Item = usize> + use<> {
        let bits = self.at[class as usize];
        (0..MOST_SHAPE).filter(move |j| bits >> j & 1 == 1)
    }

    fn digits(&self) -> usize {
        self.at[Class::Digit as usize].count_ones() as usize
    }

    fn has_letters(&self) -> bool {
        self.at[Class::Upper as usize] | self.at[Class::Lower as usize] != 0
    }
}

/// What a rule without keywords needs of a text before its pattern runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// At least this many ASCII digits.
    Digits(usize),
    /// This many digits in a row, a single space or dash allowed between two.
    DigitRun(usize),
    /// Bytes of these classes in a row.
    Shape(Shape),
    /// A byte outside ASCII.
    NonAscii,
}

impl Needs {
    /// Reads `digits >= n`, `digit_run >= n` (n from 1 to 64), `shape XXXX` or
    /// `non_ascii`.
    pub(super) fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let wrong = || {
            format!(
                "needs `{text}`: write `digits >= n` or `digit_run >= n` (n from 1 to 64), `shape XXXX` (2 to 8 of `A` capital, `a` small letter, `9` digit) or `non_ascii`"
            )
        };
        if text == "non_ascii" {
            return Ok(Self::NonAscii);
        }
        if let Some(shape) = text.strip_prefix("shape ") {
            return Shape::parse(shape.trim())
                .map(Self::Shape)
                .ok_or_else(wrong);
        }
        let at_least = |name: &str| {
            text.strip_prefix(name)
                .and_then(|rest| rest.trim_start().strip_prefix(">="))
                .and_then(|n| n.trim().parse::<usize>().ok())
                .filter(|n| (1..=64).contains(n))
        };
        // `digit_run` first: `digits` is not its prefix, but keep the longer name first.
        at_least("digit_run")
            .map(Self::DigitRun)
            .or_else(|| at_least("digits").map(Self::Digits))
            .ok_or_else(wrong)
    }

    /// The fewest bytes a text that meets it has.
    pub(super) fn shortest(self) -> usize {
        match self {
            Self::Digits(n) | Self::DigitRun(n) => n,
            Self::Shape(shape) => shape.len,
            Self::NonAscii => 2,
        }
    }
}

/// What one pass measures: the needs of the rules it serves, gathered without
/// allocating.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Wanted {
    /// The fewest bytes any of them needs.
    shortest: usize,
    /// Whether any counts digits (every need but `non_ascii`).
    digits: bool,
    /// The longest digit run any needs (0: none).
    run: usize,
    shapes: [Option<Shape>; MOST_SHAPES_AT_ONCE],
    /// A shape past [`MOST_SHAPES_AT_ONCE`] was asked for.
    more_shapes: bool,
    non_ascii: bool,
    any: bool,
}

impl Wanted {
    /// Adds one rule's need.
    pub(super) fn add(&mut self, needs: Needs) {
        self.shortest = if self.any {
            self.shortest.min(needs.shortest())
        } else {
            needs.shortest()
        };
        self.any = true;
        match needs {
            Needs::Digits(_) => self.digits = true,
            Needs::DigitRun(n) => {
                self.digits = true;
                self.run = self.run.max(n);
            }
            Needs::Shape(shape) => {
                self.digits |= shape.digits() > 0;
                if !self.shapes.contains(&Some(shape)) {
                    match self.shapes.iter_mut().find(|s| s.is_none()) {
                        Some(slot) => *slot = Some(shape),
                        None => self.more_shapes = true,
                    }
                }
            }
            Needs::NonAscii => self.non_ascii = true,
        }
    }
}

/// The signals of one text, measured for what is [`Wanted`].
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Signals {
    digits: usize,
    /// The most digits of one run (counted only up to the longest wanted).
    run: usize,
    /// Which of the wanted shapes occur.
    shapes: [bool; MOST_SHAPES_AT_ONCE],
    wanted: Wanted,
    non_ascii: bool,
}

impl Signals {
    /// The signals of `text` that `wanted` asks for: nothing of a text shorter than
    /// any need; the bit masks only when the digits allow a run or a shape.
    pub(super) fn of(text: &[u8], wanted: Wanted) -> Self {
        let mut signals = Self {
            wanted,
            ..Self::default()
        };
        if !wanted.any || text.len() < wanted.shortest {
            return signals;
        }
        signals.non_ascii = wanted.non_ascii && !text.is_ascii();
        if wanted.digits {
            signals.digits = count_digits(text);
        }
        let run = wanted.run > 0 && signals.digits >= wanted.run;
        let shapes = wanted
            .shapes
            .iter()
            .any(|s| s.is_some_and(|s| signals.digits >= s.digits()));
        if run || shapes {
            Blocks::read(text, &wanted, run, &mut signals);
        }
        signals
    }

    /// Whether the text meets `needs`.
    pub(super) fn meet(&self, needs: Needs) -> bool {
        match needs {
            Needs::Digits(n) => self.digits >= n,
            Needs::DigitRun(n) => self.run >= n,
            Needs::Shape(shape) => {
                match self.wanted.shapes.iter().position(|s| *s == Some(shape)) {
                    Some(k) => self.shapes[k],
                    // Not measured (past the bound): the pattern decides.
                    None => self.wanted.more_shapes && self.digits >= shape.digits(),
                }
            }
            Needs::NonAscii => self.non_ascii,
        }
    }
}

/// ASCII digits in `text`, counted in bytes 255 at a time.
fn count_digits(text: &[u8]) -> usize {
    text.chunks(255)
        .map(|chunk| {
            let n = chunk.iter().fold(0u8, |n, &b| {
                n.wrapping_add(u8::from(b.wrapping_sub(b'0') < 10))
            });
            usize::from(n)
        })
        .sum()
}

/// Which bytes a mask keeps.
#[derive(Debug, Clone, Copy)]
enum Keep {
    /// ASCII bytes from the first to the second.
    Range(u8, u8),
    /// A space or a dash.
    SpaceOrDash,
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The bytes of the word `w` that `keep` accepts, as the high bit of each byte: eight
/// bytes at once in a register (no carry crosses a byte: each sum stays under 0x100).
#[inline]
fn kept(w: u64, keep: Keep) -> u64 {
    let low = w & !HIGH;
    let ascii = !w & HIGH;
    match keep {
        Keep::Range(from, to) => {
            let at_least = low + ONES * u64::from(0x80 - from);
            let over = low + ONES * u64::from(0x7f - to);
            at_least & !over & ascii
        }
        Keep::SpaceOrDash => {
            let zero = |x: u64| !(((x & !HIGH) + !HIGH) | x) & HIGH;
            zero(w ^ (ONES * u64::from(b' '))) | zero(w ^ (ONES * u64::from(b'-')))
        }
    }
}

/// A block of at most 64 bytes as eight words, little-endian (a short one padded with
/// zeros, which no mask keeps).
#[inline]
fn words(block: &[u8]) -> [u64; 8] {
    let mut padded = [0u8; 64];
    let block = match <&[u8; 64]>::try_from(block) {
        Ok(full) => full,
        Err(_) => {
            let n = block.len().min(64);
            padded[..n].copy_from_slice(&block[..n]);
            &padded
        }
    };
    let mut words = [0u64; 8];
    for (w, bytes) in words.iter_mut().zip(block.chunks_exact(8)) {
        *w = <[u8; 8]>::try_from(bytes).map_or(0, u64::from_le_bytes);
    }
    words
}

/// The bit mask of the bytes of a block (as [`words`]) that `keep` accepts: bit j is
/// byte j.
#[inline]
fn mask(words: &[u64; 8], keep: Keep) -> u64 {
    let mut m = 0;
    for (j, w) in words.iter().enumerate() {
        // The high bits gathered into the top byte, byte i to bit 56 + i.
        let high = (kept(*w, keep) >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56;
        m |= high << (8 * j);
    }
    m
}

/// The pass over 64-byte blocks that finds digit runs and shapes.
struct Blocks {
    /// Digits of the run still open at the end of the last block.
    open_run: usize,
    /// Whether the last block's last byte was a digit.
    last_digit: bool,
}

/// One block's bytes and class masks; a letter mask is computed only when a window's
/// digits leave a shape possible (most blocks of an answer have no two capitals before
/// two digits, and their letters are never looked at).
#[derive(Clone, Copy, Default)]
struct Block<'t> {
    bytes: &'t [u8],
    /// By [`Class`]: capitals, small letters, digits.
    masks: [u64; 3],
    /// Which of `masks` are computed (the digits always are).
    known: [bool; 3],
}

impl Block<'_> {
    /// The mask of `class`, computed the first time it is asked for.
    fn mask(&mut self, class: Class) -> u64 {
        let k = class as usize;
        if !self.known[k] {
            let keep = match class {
                Class::Upper => Keep::Range(b'A', b'Z'),
                Class::Lower => Keep::Range(b'a', b'z'),
                Class::Digit => Keep::Range(b'0', b'9'),
            };
            self.masks[k] = mask(&words(self.bytes), keep);
            self.known[k] = true;
        }
        self.masks[k]
    }
}

impl Blocks {
    fn read(text: &[u8], wanted: &Wanted, run: bool, signals: &mut Signals) {
        let mut pass = Self {
            open_run: 0,
            last_digit: false,
        };
        let shapes = wanted.shapes.iter().any(Option::is_some);
        let mut last = Block::default();
        for (k, bytes) in text.chunks(64).enumerate() {
            let words = words(bytes);
            let digit = mask(&words, Keep::Range(b'0', b'9'));
            if run && signals.run < wanted.run {
                let next_digit = text.get((k + 1) * 64).is_some_and(u8::is_ascii_digit);
                pass.runs(&words, bytes.len(), digit, next_digit, signals);
            }
            let mut this = Block {
                bytes,
                masks: [0, 0, digit],
                known: [false, false, true],
            };
            if shapes {
                Self::shapes(&mut last, &mut this, wanted, signals);
            }
            last = this;
            pass.last_digit = digit >> 63 & 1 == 1 && bytes.len() == 64;
            if (!run || signals.run >= wanted.run) && signals.shapes_done() {
                return;
            }
        }
        signals.run = signals.run.max(pass.open_run);
    }

    /// The digit runs of one block: digits, and a space or dash with a digit on both
    /// sides; each run's digits counted, a run open at the block's end carried on.
    fn runs(
        &mut self,
        words: &[u64; 8],
        len: usize,
        digit: u64,
        next_digit: bool,
        signals: &mut Signals,
    ) {
        let separator = mask(words, Keep::SpaceOrDash);
        let before = digit << 1 | u64::from(self.last_digit);
        let after = digit >> 1 | u64::from(next_digit) << 63;
        let mut joined = digit | (separator & before & after);
        if len < 64 {
            joined &= (1u64 << len) - 1;
        }
        if joined & 1 == 0 {
            signals.run = signals.run.max(self.open_run);
            self.open_run = 0;
        }
        while joined != 0 {
            let start = joined.trailing_zeros();
            let len = (!(joined >> start)).trailing_zeros();
            let run = if len >= 64 {
                u64::MAX
            } else {
                ((1u64 << len) - 1) << start
            };
            let mut digits = (digit & run).count_ones() as usize;
            if start == 0 {
                digits += self.open_run;
            }
            if start + len >= 64 {
                self.open_run = digits;
            } else {
                signals.run = signals.run.max(digits);
                if start == 0 {
                    self.open_run = 0;
                }
            }
            joined &= !run;
        }
    }

    /// The wanted shapes read in the window of the last block and this one: every
    /// start whose shape ends in this block, each start read once; the digits first,
    /// the letters only where the digits leave a start.
    fn shapes(last: &mut Block, this: &mut Block, wanted: &Wanted, signals: &mut Signals) {
        let digits = u128::from(last.masks[2]) | u128::from(this.masks[2]) << 64;
        for (k, shape) in wanted.shapes.iter().enumerate() {
            let Some(shape) = shape else { continue };
            if signals.shapes[k] {
                continue;
            }
            // Starts from 65 - len to 128 - len: their last byte is in this block.
            let mut hit = (u128::MAX >> 64) << (65 - shape.len);
            for j in shape.positions(Class::Digit) {
                hit &= digits >> j;
            }
            if hit != 0 && shape.has_letters() {
                for class in [Class::Upper, Class::Lower] {
                    for j in shape.positions(class) {
                        let window =
                            u128::from(last.mask(class)) | u128::from(this.mask(class)) << 64;
                        hit &= window >> j;
                    }
                }
            }
            signals.shapes[k] = hit != 0;
        }
    }
}

impl Signals {
    /// Whether every wanted shape has been found (none wanted: done).
    fn shapes_done(&self) -> bool {
        self.wanted
            .shapes
            .iter()
            .zip(self.shapes)
            .all(|(s, found)| s.is_none() || found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signals(text: &str, needs: &[&str]) -> Vec<bool> {
        let needs: Vec<Needs> = needs
            .iter()
            .map(|n| Needs::parse(n).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        let mut wanted = Wanted::default();
        for n in &needs {
            wanted.add(*n);
        }
        let signals = Signals::of(text.as_bytes(), wanted);
        needs.iter().map(|n| signals.meet(*n)).collect()
    }

    /// The most digits of one run in `text`, read a byte at a time.
    fn plain_run(text: &[u8]) -> usize {
        let (mut best, mut digits) = (0, 0);
        for (i, b) in text.iter().enumerate() {
            let between = |j: usize| text.get(j).is_some_and(u8::is_ascii_digit);
            if b.is_ascii_digit() {
                digits += 1;
            } else if !((*b == b' ' || *b == b'-') && i > 0 && between(i - 1) && between(i + 1)) {
                digits = 0;
            }
            best = best.max(digits);
        }
        best
    }

    /// Whether `shape` occurs in `text`, read a start at a time.
    fn plain_shape(text: &[u8], shape: &str) -> bool {
        text.windows(shape.len()).any(|w| {
            w.iter().zip(shape.bytes()).all(|(b, c)| match c {
                b'A' => b.is_ascii_uppercase(),
                b'a' => b.is_ascii_lowercase(),
                _ => b.is_ascii_digit(),
            })
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

        /// Differential: the bit-mask pass says what a byte-at-a-time reading says, at
        /// any length and alignment against the 64-byte blocks.
        #[test]
        fn the_block_pass_reads_as_a_byte_at_a_time(
            text in proptest::collection::vec(
                proptest::sample::select(vec!["1", "7", "12", "1234", "9", " ", "-", "  ", "A", "Z", "b", "x", "ß", "\u{202E}"]),
                0..200,
            ),
            n in 1usize..30,
            shape in proptest::sample::select(vec!["AA99", "9a", "A9", "99", "AAA", "9 "]),
        ) {
            let text = text.concat();
            let bytes = text.as_bytes();
            let need = format!("digit_run >= {n}");
            let Ok(shape_need) = Needs::parse(&format!("shape {}", shape.trim())) else {
                // `9 ` is no shape: only digits then.
                proptest::prop_assert_eq!(signals(&text, &[&need]), vec![plain_run(bytes) >= n]);
                return Ok(());
            };
            let mut wanted = Wanted::default();
            wanted.add(Needs::DigitRun(n));
            wanted.add(shape_need);
            let got = Signals::of(bytes, wanted);
            proptest::prop_assert_eq!(got.meet(Needs::DigitRun(n)), plain_run(bytes) >= n);
            proptest::prop_assert_eq!(got.meet(shape_need), plain_shape(bytes, shape));
        }
    }

    #[test]
    fn a_mask_keeps_exactly_the_bytes_it_names() {
        let every: Vec<u8> = (0..=255u8).collect();
        for block in every.chunks(64).chain(every.chunks(37)) {
            for (keep, plain) in [
                (
                    Keep::Range(b'0', b'9'),
                    u8::is_ascii_digit as fn(&u8) -> bool,
                ),
                (Keep::Range(b'A', b'Z'), u8::is_ascii_uppercase),
                (Keep::Range(b'a', b'z'), u8::is_ascii_lowercase),
                (Keep::SpaceOrDash, |b: &u8| *b == b' ' || *b == b'-'),
            ] {
                let want = block
                    .iter()
                    .enumerate()
                    .fold(0u64, |m, (j, b)| m | u64::from(plain(b)) << j);
                assert_eq!(mask(&words(block), keep), want, "{keep:?} {block:?}");
            }
        }
    }

    #[test]
    fn needs_are_read_and_a_wrong_one_is_named() {
        assert_eq!(Needs::parse("digits >= 8"), Ok(Needs::Digits(8)));
        assert_eq!(Needs::parse("digit_run>=13"), Ok(Needs::DigitRun(13)));
        assert_eq!(Needs::parse(" non_ascii "), Ok(Needs::NonAscii));
        assert!(
            matches!(Needs::parse("shape AA99"), Ok(Needs::Shape(s)) if s.len == 4 && s.at == [3, 0, 12])
        );
        for wrong in [
            "digits > 3",
            "digit_run >= 0",
            "digits >= 65",
            "shape A",
            "shape AB99",
            "shape AAAAAAAAA",
            "letters",
        ] {
            let Err(e) = Needs::parse(wrong) else {
                panic!("{wrong} was read");
            };
            assert!(e.contains(wrong.trim()) && e.contains("digit_run"), "{e}");
        }
    }

    #[test]
    fn a_digit_run_takes_single_spaces_and_dashes_and_nothing_else() {
        let cases: &[(&str, bool)] = &[
            ("card 4539 1488 0343 6467 exp", true),
            ("5425-2334-3010-9903", true),
            ("6011000990139424", true),
            ("4539  1488 0343 6467", false),
            ("2026-12-01 10:00:00 and 2026-12-01T10:00", false),
            ("+1 415 555 0100, 10115 Berlin", false),
            ("1234567890123", true),
            ("123456789012", false),
            ("12 34 56 78 90 12 3", true),
            ("12 - 34 56 78 90 12 3", false),
        ];
        for (text, want) in cases {
            assert_eq!(signals(text, &["digit_run >= 13"]), vec![*want], "{text}");
        }
    }

    #[test]
    fn runs_and_shapes_across_block_edges_are_found() {
        for at in 50..70 {
            let mut text = "x".repeat(at);
            text.push_str("4539 1488 0343 6467");
            text.push_str(&"y".repeat(100));
            assert_eq!(signals(&text, &["digit_run >= 16"]), vec![true], "at {at}");
            assert_eq!(signals(&text, &["digit_run >= 17"]), vec![false], "at {at}");
            let mut text = "x".repeat(at);
            text.push_str("DE44");
            assert_eq!(signals(&text, &["shape AA99"]), vec![true], "at {at}");
            text.push_str(&"z".repeat(at));
            assert_eq!(
                signals(&text, &["shape AA99", "shape 9a"]),
                vec![true, true],
                "at {at}"
            );
            assert_eq!(signals(&text, &["shape AAA9"]), vec![false], "at {at}");
        }
        // A run split by a block edge where the edge falls on its separator.
        let text = format!("{}1234567 1234567", "x".repeat(56));
        assert_eq!(signals(&text, &["digit_run >= 14"]), vec![true]);
        // Two runs on either side of an edge are not one.
        let text = format!("{}1234567 x 1234567", "x".repeat(55));
        assert_eq!(signals(&text, &["digit_run >= 8"]), vec![false]);
    }

    #[test]
    fn a_run_as_long_as_a_block_or_longer_is_counted_whole() {
        let text = "1".repeat(200);
        assert_eq!(signals(&text, &["digit_run >= 64"]), vec![true]);
        let text = format!("{} 1", "1".repeat(63));
        assert_eq!(signals(&text, &["digit_run >= 64"]), vec![true]);
    }

    #[test]
    fn each_need_alone_and_together() {
        assert_eq!(
            signals(
                "IBAN DE44 5001 and ß",
                &["digits >= 6", "shape AA99", "non_ascii", "digit_run >= 7"]
            ),
            vec![true, true, true, false]
        );
        assert_eq!(
            signals("plain", &["digits >= 1", "shape AA99", "non_ascii"]),
            vec![false, false, false]
        );
    }

    #[test]
    fn past_the_shapes_one_pass_reads_the_rest_count_as_present_when_digits_allow() {
        let needs = [
            "shape A9",
            "shape AA9",
            "shape AAA9",
            "shape AAAA9",
            "shape AAAAA9",
        ];
        assert_eq!(signals("B2", &needs), vec![true, false, false, false, true]);
        assert_eq!(signals("BB", &needs), vec![false; 5]);
    }
}
