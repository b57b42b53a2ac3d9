//! The checks a guard's match must also pass, each from its format's public
//! specification: a card number's Luhn digit (ISO/IEC 7812), an IBAN's mod-97 check and
//! its country's length (ISO 13616), a US social security number's assigned ranges, and a
//! lower bound on a value's Shannon entropy.

/// A validator a rule names (`validator = "luhn"`, `"iban"`, `"us_ssn"`,
/// `"entropy >= 3.5"`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Validator {
    /// The Luhn check digit of 13 to 19 digits (spaces and dashes between them allowed).
    Luhn,
    /// Mod 97 = 1 after moving the first four characters to the end; the length of the
    /// country's IBAN where the country is known.
    Iban,
    /// `AAA-GG-SSSS` (or nine digits) with an area other than 000, 666 and 900-999, a
    /// group other than 00 and a serial other than 0000.
    UsSsn,
    /// At least this many bits of Shannon entropy per character.
    Entropy(f64),
}

impl Validator {
    /// Reads a rule's `validator`; the error says which names exist.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        match text {
            "luhn" => return Ok(Self::Luhn),
            "iban" => return Ok(Self::Iban),
            "us_ssn" => return Ok(Self::UsSsn),
            _ => {}
        }
        if let Some(bound) = text.strip_prefix("entropy") {
            let bound = bound.trim_start().strip_prefix(">=").map(str::trim);
            if let Some(bits) = bound.and_then(|b| b.parse::<f64>().ok())
                && (0.0..=8.0).contains(&bits)
            {
                return Ok(Self::Entropy(bits));
            }
            return Err(format!(
                "validator `{text}`: write `entropy >= x` with x bits per character between 0 and 8"
            ));
        }
        Err(format!(
            "validator `{text}` does not exist: use `luhn`, `iban`, `us_ssn` or `entropy >= x`"
        ))
    }

    /// Whether `found` passes.
    pub fn passes(self, found: &str) -> bool {
        match self {
            Self::Luhn => luhn(found),
            Self::Iban => iban(found),
            Self::UsSsn => us_ssn(found),
            Self::Entropy(bits) => entropy(found) >= bits,
        }
    }
}

/// The Luhn check over the digits of `text` (13 to 19 of them; spaces and dashes
/// ignored, anything else fails).
pub fn luhn(text: &str) -> bool {
    let mut digits = Vec::with_capacity(19);
    for b in text.bytes() {
        match b {
            b'0'..=b'9' => digits.push(b - b'0'),
            b' ' | b'-' => {}
            _ => return false,
        }
    }
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            let d = u32::from(d);
            if i % 2 == 1 {
                let doubled = d * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// IBAN lengths of the registry's countries (ISO 13616), those a text most often holds.
const IBAN_LENGTHS: &[(&str, usize)] = &[
    ("AD", 24),
    ("AE", 23),
    ("AT", 20),
    ("BE", 16),
    ("BG", 22),
    ("BH", 22),
    ("BR", 29),
    ("CH", 21),
    ("CY", 28),
    ("CZ", 24),
    ("DE", 22),
    ("DK", 18),
    ("EE", 20),
    ("ES", 24),
    ("FI", 18),
    ("FR", 27),
    ("GB", 22),
    ("GR", 27),
    ("HR", 21),
    ("HU", 28),
    ("IE", 22),
    ("IL", 23),
    ("IS", 26),
    ("IT", 27),
    ("LI", 21),
    ("LT", 20),
    ("LU", 20),
    ("LV", 21),
    ("MC", 27),
    ("MT", 31),
    ("NL", 18),
    ("NO", 15),
    ("PL", 28),
    ("PT", 25),
    ("RO", 24),
    ("SA", 24),
    ("SE", 24),
    ("SI", 19),
    ("SK", 24),
    ("SM", 27),
    ("TR", 26),
    ("UA", 29),
];

/// An IBAN (spaces ignored): two letters, two check digits, then letters and digits, 15
/// to 34 in all, the country's length where it is known, mod 97 = 1.
pub fn iban(text: &str) -> bool {
    let compact: Vec<u8> = text.bytes().filter(|b| *b != b' ').collect();
    if !(15..=34).contains(&compact.len())
        || !compact[..2].iter().all(u8::is_ascii_uppercase)
        || !compact[2..4].iter().all(u8::is_ascii_digit)
        || !compact[4..]
            .iter()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    {
        return false;
    }
    let country = std::str::from_utf8(&compact[..2]).unwrap_or_default();
    if let Some((_, length)) = IBAN_LENGTHS.iter().find(|(c, _)| *c == country)
        && *length != compact.len()
    {
        return false;
    }
    let mut remainder: u32 = 0;
    for &b in compact[4..].iter().chain(&compact[..4]) {
        let value = if b.is_ascii_digit() {
            u32::from(b - b'0')
        } else {
            u32::from(b - b'A') + 10
        };
        remainder = if value >= 10 {
            (remainder * 100 + value) % 97
        } else {
            (remainder * 10 + value) % 97
        };
    }
    remainder == 1
}

/// A US social security number in an assigned range.
pub fn us_ssn(text: &str) -> bool {
    let digits: Vec<u32> = text
        .bytes()
        .filter(|b| *b != b'-' && *b != b' ')
        .map(|b| u32::from(b.wrapping_sub(b'0')))
        .collect();
    if digits.len() != 9 || digits.iter().any(|d| *d > 9) {
        return false;
    }
    let number = |range: std::ops::Range<usize>| digits[range].iter().fold(0, |n, d| n * 10 + d);
    let (area, group, serial) = (number(0..3), number(3..5), number(5..9));
    area != 0 && area != 666 && area < 900 && group != 0 && serial != 0
}

/// Shannon entropy of `text`'s characters, in bits per character.
pub fn entropy(text: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    let mut total = 0usize;
    for c in text.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
        total += 1;
    }
    if total == 0 {
        return 0.0;
    }
    #[expect(
        clippy::cast_precision_loss,
        reason = "counts of one text's characters"
    )]
    let total = total as f64;
    counts
        .values()
        .map(|&n| {
            #[expect(
                clippy::cast_precision_loss,
                reason = "counts of one text's characters"
            )]
            let p = n as f64 / total;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_validator_holds_its_format() {
        assert!(luhn("4539 1488 0343 6467") && luhn("4539-1488-0343-6467"));
        assert!(!luhn("4539 1488 0343 6468") && !luhn("1234") && !luhn("4539x1488034364670"));
        assert!(iban("DE89 3704 0044 0532 0130 00") && iban("GB82WEST12345698765432"));
        assert!(!iban("DE89 3704 0044 0532 0130 01") && !iban("DE89370400440532013"));
        assert!(us_ssn("123-45-6789") && !us_ssn("666-45-6789") && !us_ssn("123-00-6789"));
        assert!(!us_ssn("900-12-3456") && !us_ssn("123-45-0000") && !us_ssn("12-345-678"));
        assert!(entropy("aaaaaaaa") < 0.01 && entropy("q8ZpL2xV7mNc4Rt9") > 3.5);
        assert_eq!(
            Validator::parse("entropy >= 3.5"),
            Ok(Validator::Entropy(3.5))
        );
        assert!(Validator::parse("entropy > 3").is_err());
        assert!(
            Validator::parse("crc32")
                .unwrap_err()
                .contains("does not exist")
        );
    }
}
