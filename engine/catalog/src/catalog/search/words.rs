//! The words of a text as the index reads them: split at punctuation and camelCase,
//! lowercased, stop words dropped, Snowball-stemmed (some stems kept whole).

use std::collections::HashMap;

use super::SearchIndex;

impl SearchIndex {
    /// Words of a text: split at punctuation and camelCase, lowercased, stop words
    /// dropped, stemmed.
    pub fn words(&self, text: &str) -> Vec<String> {
        self.words_with(text, None)
    }

    /// [`Self::words`], looking each stem up in `memo` first and keeping it there.
    pub(super) fn words_with(
        &self,
        text: &str,
        memo: Option<&mut HashMap<String, String>>,
    ) -> Vec<String> {
        let mut out = Vec::new();
        self.each_word(text, memo, |_, stem| out.push(stem));
        out
    }

    /// Each word of `text` (as [`Self::words`] reads it), lowercased as written and
    /// stemmed.
    pub(super) fn each_word(
        &self,
        text: &str,
        mut memo: Option<&mut HashMap<String, String>>,
        mut each: impl FnMut(&str, String),
    ) {
        let mut current = String::new();
        let mut prev_lower = false;
        for c in text.chars() {
            if c.is_alphanumeric() {
                if c.is_uppercase() && prev_lower {
                    self.push_word(&mut current, memo.as_deref_mut(), &mut each);
                }
                prev_lower = c.is_lowercase() || c.is_ascii_digit();
                current.extend(c.to_lowercase());
            } else {
                prev_lower = false;
                self.push_word(&mut current, memo.as_deref_mut(), &mut each);
            }
        }
        self.push_word(&mut current, memo, &mut each);
    }

    pub(super) fn push_word(
        &self,
        current: &mut String,
        memo: Option<&mut HashMap<String, String>>,
        each: &mut impl FnMut(&str, String),
    ) {
        if !current.is_empty() && !self.stopwords.contains(current.as_str()) {
            let stemmed = match (self.stems.get(current.as_str()), memo) {
                (Some(kept), _) => kept.clone(),
                (None, None) => stem(current),
                (None, Some(memo)) => match memo.get(current.as_str()) {
                    Some(stemmed) => stemmed.clone(),
                    None => {
                        let stemmed = stem(current);
                        memo.insert(current.clone(), stemmed.clone());
                        stemmed
                    }
                },
            };
            each(current, stemmed);
        }
        current.clear();
    }
}

/// The Snowball English stemmer: "cards"/"card", "creating"/"create"/"created",
/// "prices"/"pricing" and "retrieves"/"retrieve" meet.
pub fn stem(word: &str) -> String {
    static STEMMER: std::sync::LazyLock<rust_stemmers::Stemmer> = std::sync::LazyLock::new(|| {
        rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English)
    });
    STEMMER.stem(word).into_owned()
}

#[cfg(test)]
mod tests {
    use super::stem;

    #[test]
    pub(super) fn stems_meet() {
        for (a, b) in [
            ("cards", "card"),
            ("creating", "create"),
            ("created", "create"),
            ("prices", "pricing"),
            ("companies", "company"),
            ("addresses", "address"),
            ("status", "status"),
            ("retrieves", "retrieve"),
            ("refunded", "refunds"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} / {b}");
        }
    }
}
