//! How a query is read: its phrases, ids and values as the catalog's words, what it asks
//! (to read, or the action its verb names), its distinct words, and the kinds of object
//! its ids name.

use std::collections::HashSet;

use super::SearchIndex;

/// A query read plain ([`SearchIndex::read`]).
pub(super) struct Plain<'i> {
    /// Its text, each id as its object's words and each value as the rules read it.
    pub(super) text: String,
    /// The kinds of object its ids name, in order.
    pub(super) objects: Vec<&'i str>,
    /// The services whose ids (of a prefix only that service issues) it holds.
    pub(super) services: Vec<&'i str>,
}

/// A query as it is ranked ([`SearchIndex::reading`]).
pub(super) struct Reading<'i> {
    /// The query read plain: its meaning and its ids' objects.
    pub(super) plain: Plain<'i>,
    /// Whether it asks to read, else the action its verb names ([`SearchIndex::intent`]).
    pub(super) asks: (bool, Option<String>),
    /// The services it names ([`SearchIndex::named_services`]).
    pub(super) named: HashSet<&'i str>,
    /// Its distinct words, as ranked ([`SearchIndex::distinct`]).
    pub(super) distinct: Vec<String>,
}

impl SearchIndex {
    /// The words of a query, each phrase the rules know replaced by the words it stands
    /// for.
    pub fn query_words(&self, query: &str) -> Vec<String> {
        self.plain_words(&self.read(query).text).0
    }

    /// The words of a query read plain ([`Self::read`]), each phrase the rules know
    /// replaced by the words it stands for; and the phrase (its index in the rules'
    /// phrases) that stood at the opening, if one did.
    pub(super) fn plain_words(&self, plain: &str) -> (Vec<String>, Option<usize>) {
        let mut words = self.words(plain);
        let mut opening = None;
        for (number, (phrase, replacement)) in self.phrases.iter().enumerate() {
            let mut i = 0;
            while i + phrase.len() <= words.len() {
                if words[i..i + phrase.len()] == phrase[..] {
                    if i == 0 {
                        opening = Some(number);
                    }
                    words.splice(i..i + phrase.len(), replacement.iter().cloned());
                    // A phrase that stands for nothing ("set up") leaves the next word
                    // where the phrase began.
                    i += replacement.len();
                } else {
                    i += 1;
                }
            }
        }
        (words, opening)
    }

    /// A query as it is ranked, read once: plain ([`Self::read`]), what it asks, what
    /// it names and its distinct words. Ranking and [`Self::why`] read a query this way.
    pub(super) fn reading(&self, query: &str) -> Reading<'_> {
        let plain = self.read(query);
        let (words, opening) = self.plain_words(&plain.text);
        // What it asks is read off the plain text, where a negation already reads as
        // what it means ("Do not send it" opens with "cancel", no question).
        let asks = self.intent(&plain.text, &words, opening);
        let written = self.written_ids(&plain.text);
        let named = self.named_services(&plain, &words, &written);
        let distinct = self.distinct(words, &written);
        Reading {
            plain,
            asks,
            named,
            distinct,
        }
    }

    /// A query read once, plain: each id as the words of its object (`ch_3Mml...` ->
    /// "charge"; an id of an unknown prefix is dropped) and each value as what the rules
    /// read it as (`[values]`: an address as "email", a number as nothing), which both
    /// the words and the meaning of a query are read from; the objects its ids name,
    /// in order, and the services whose ids they are (`[id_services]`).
    pub(super) fn read(&self, query: &str) -> Plain<'_> {
        let mut text = String::with_capacity(query.len());
        let mut objects = Vec::new();
        let mut services = Vec::new();
        let mut tokens = query.split_whitespace();
        while let Some(token) = tokens.next() {
            if let Some(len) = self.negation_at(token, tokens.clone()) {
                text.push_str(&self.negated);
                text.push(' ');
                if len > 1 {
                    tokens.nth(len - 2);
                }
                continue;
            }
            let bare = token.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
            if let Some(prefix) = id_prefix(bare) {
                if let Some((prefix, named)) = self.id_prefixes.get_key_value(prefix) {
                    text.push_str(named);
                    objects.push(named.as_str());
                    if let Some(service) = self.id_services.get(prefix) {
                        services.push(service.as_str());
                    }
                }
            } else if let Some(value) = self.value(token) {
                text.push_str(value);
            } else {
                text.push_str(token);
            }
            text.push(' ');
        }
        Plain {
            text,
            objects,
            services,
        }
    }

    /// How many tokens a negation opening with `token` spans (`rest`: the tokens after
    /// it), when a word of the rules' actions follows it ("don't send", "do not
    /// publish"; not "don't worry"): the query asks to call that action off.
    fn negation_at<'q>(
        &self,
        token: &str,
        rest: impl Iterator<Item = &'q str> + Clone,
    ) -> Option<usize> {
        self.negations.iter().find_map(|negation| {
            let (first, more) = negation.split_first()?;
            let mut after = rest.clone();
            let said = says(token, first)
                && more
                    .iter()
                    .all(|w| after.next().is_some_and(|t| says(t, w)));
            let verb = after.next()?;
            (said
                && self
                    .words(verb)
                    .first()
                    .is_some_and(|w| self.actions.contains(w)))
            .then_some(negation.len())
        })
    }

    /// The words of the objects a query's ids name ([`Self::read`]), as term ids
    /// (`po_1Nq...` -> "payout"); an object whose words no tool holds is left out.
    pub(super) fn id_terms(&self, objects: &[&str]) -> Vec<Vec<u32>> {
        objects
            .iter()
            .filter_map(|named| {
                self.words(named)
                    .iter()
                    .map(|w| self.vocabulary.get(w).copied())
                    .collect()
            })
            .collect()
    }

    /// What a query asks: to read (`true`), or the action its verb names. A question
    /// ("which plugins are installed?") asks to read, as does a query that opens with a
    /// read verb ("list refunds", "show me every refund"); then writes score
    /// `miss_factor` of what they would. Otherwise the query's verb is its first action
    /// word ("give the customer their money back" asks to refund; "my site shows an
    /// old page, flush its cache" to flush).
    /// `query` is the query read plain ([`Self::read`]: a negation there reads as what
    /// it means); `opening` is the phrase that stood at the opening of its words
    /// ([`Self::plain_words`]).
    pub(super) fn intent(
        &self,
        query: &str,
        query_words: &[String],
        opening: Option<usize>,
    ) -> (bool, Option<String>) {
        let action = || {
            query_words
                .iter()
                .find(|w| self.actions.contains(w.as_str()))
                .cloned()
        };
        // "How do I cancel ...?" asks for the action its question is about.
        if self.opens_with_how_to(query)
            && let Some(verb) = action()
        {
            return (false, Some(verb));
        }
        let opener = query
            .split_whitespace()
            .next()
            .map(|w| {
                let bare = w.trim_matches(|c: char| !c.is_alphanumeric());
                // A contraction opens with its first word: "what's" is "what".
                let head = bare.split(['\'', '\u{2019}']).next().unwrap_or(bare);
                head.to_lowercase()
            })
            .unwrap_or_default();
        // A phrase at the opening speaks for its words: "get rid of the plugin" asks to
        // remove it, "get a new number" to buy one; neither opens with a read.
        let phrased = self.opening_phrase(&opener, opening);
        let reading = match phrased {
            Some(replacement) => replacement
                .first()
                .is_some_and(|w| self.reads.contains(w.as_str())),
            None => self.read_openers.contains(&opener),
        } || query_words
            .first()
            .is_some_and(|w| self.reads.contains(w.as_str()));
        (reading, if reading { None } else { action() })
    }

    /// Whether a query opens with one of the rules' openings that ask how to do
    /// something ("How do I ...", "Is it possible to ...").
    fn opens_with_how_to(&self, query: &str) -> bool {
        self.how_to.iter().any(|opening| {
            let mut tokens = query.split_whitespace();
            opening
                .iter()
                .all(|w| tokens.next().is_some_and(|t| says(t, w)))
        })
    }

    /// The words the phrase at the opening of a query's words stands for, when the
    /// query's first word (`opener`) is the phrase's first: "please get rid of" opens
    /// with no phrase, its first word is none of one.
    fn opening_phrase(&self, opener: &str, opening: Option<usize>) -> Option<&[String]> {
        let (phrase, replacement) = self.phrases.get(opening?)?;
        let head = self.words(opener);
        // Phrases are never empty (the index drops those), so no word opens none.
        (head.first() == phrase.first()).then_some(replacement.as_slice())
    }

    /// Whether `word` is a service's id of one word ("crm"): it says where to look,
    /// never what a tool is (an upstream's own name, `service_names`, says both).
    pub(super) fn names_only_a_service(&self, word: &str) -> bool {
        self.service_words.contains_key(word) && !self.service_names.contains(word)
    }

    /// The services a query names: a service's id as written in the query read plain
    /// ([`Self::written_ids`]), an upstream's own name
    /// ([`RawSearch::service_names`](super::RawSearch)) among its words, in any form,
    /// or an id only that service issues ([`RawSearch::id_services`](super::RawSearch):
    /// `ch_...` is Stripe's).
    pub(super) fn named_services<'i>(
        &'i self,
        plain: &Plain<'i>,
        query_words: &[String],
        written: &HashSet<&'i str>,
    ) -> HashSet<&'i str> {
        query_words
            .iter()
            .filter(|w| self.service_names.contains(w.as_str()))
            .filter_map(|w| self.service_words.get(w.as_str()).map(String::as_str))
            .chain(plain.services.iter().copied())
            .chain(written.iter().copied())
            .collect()
    }

    /// The services whose ids a query read plain holds as written ("list payments",
    /// not "record a payment": an id's stem is often an everyday word), as a token of
    /// its own or a part of one between punctuation: an id may hold `_` or `-`
    /// (`everything_http`), and "payments-related" says "payments".
    pub(super) fn written_ids(&self, plain: &str) -> HashSet<&str> {
        let mut written = HashSet::new();
        let joined = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
        for token in plain.split(|c: char| !joined(c)).filter(|t| !t.is_empty()) {
            let parts = std::iter::once(token).chain(token.split(['_', '-']));
            for part in parts {
                if let Some(id) = self
                    .service_ids
                    .iter()
                    .find(|id| part.eq_ignore_ascii_case(id))
                {
                    written.insert(id.as_str());
                }
            }
        }
        written
    }

    /// A query's words, once each and sorted (so sums are added in one order and equal
    /// scores tie exactly): a service's id written in the query (`written`, from
    /// [`Self::written_ids`]) says where to look, not what to match (its word is left
    /// out when other words remain). The same word said otherwise is matched: "payment"
    /// of "delete payment method pm_..." (whose id names the payments service) or of
    /// "a Stripe payment".
    pub(super) fn distinct(
        &self,
        mut query_words: Vec<String>,
        written: &HashSet<&str>,
    ) -> Vec<String> {
        // The words of the ids written (each of `everything_http`'s), save an
        // upstream's own name, which is matched too.
        let ids_words: Vec<String> = written
            .iter()
            .flat_map(|id| self.words(id))
            .filter(|w| !self.service_names.contains(w))
            .collect();
        let names_written = |w: &str| ids_words.iter().any(|x| x == w);
        if !written.is_empty()
            && self.service_miss < 1.0
            && query_words.iter().any(|w| !names_written(w))
        {
            query_words.retain(|w| !names_written(w));
        }
        query_words.sort_unstable();
        query_words.dedup();
        query_words
    }

    /// What a value in a query is read as, when `token` is one: an e-mail address, a
    /// URL or a domain name its hint words; a number, an amount, a date, a time or an
    /// IP address nothing (`Some("")`). `None`: a word.
    pub(super) fn value(&self, token: &str) -> Option<&str> {
        let bare = token.trim_matches(|c: char| {
            !c.is_alphanumeric() && !matches!(c, '$' | '€' | '£' | '/' | ':')
        });
        let bare = bare.trim_end_matches(['.', ':', '/']);
        if bare.is_empty() {
            return None;
        }
        if bare.contains('@') && bare.contains('.') {
            return Some(&self.values.email);
        }
        if bare.starts_with("http://") || bare.starts_with("https://") {
            return Some(&self.values.url);
        }
        let numeric = bare.chars().any(|c| c.is_ascii_digit())
            && bare.chars().all(|c| {
                c.is_ascii_digit()
                    || matches!(c, '.' | ',' | ':' | '/' | '-' | '$' | '€' | '£' | '%')
            });
        if numeric {
            return Some("");
        }
        let labels: Vec<&str> = bare.split('.').collect();
        let domain = labels.len() >= 2
            && labels
                .iter()
                .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
            && labels
                .last()
                .is_some_and(|tld| tld.len() >= 2 && tld.chars().all(|c| c.is_ascii_lowercase()));
        domain.then_some(self.values.domain.as_str())
    }
}

/// A word as the rules write it: lowercase, an apostrophe typed straight (`’` -> `'`).
pub(super) fn apostrophe(word: &str) -> String {
    word.to_lowercase().replace('\u{2019}', "'")
}

/// Whether a query's token says `word` (written as [`apostrophe`] gives it), leaving
/// punctuation around it aside: "Don’t," says "don't".
fn says(token: &str, word: &str) -> bool {
    let bare = token.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '\u{2019}');
    bare.chars()
        .flat_map(char::to_lowercase)
        .map(|c| if c == '\u{2019}' { '\'' } else { c })
        .eq(word.chars())
}

/// The prefix of an id such as `ch_3MmlLrLkdIwHu7ix` or `vm_42`: a short lowercase word,
/// `_`, and letters and digits with at least one digit. `get_refunds` is no id.
fn id_prefix(token: &str) -> Option<&str> {
    let (prefix, rest) = token.split_once('_')?;
    let is_id = (1..=6).contains(&prefix.len())
        && prefix.bytes().all(|b| b.is_ascii_lowercase())
        && !rest.is_empty()
        && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && rest.bytes().any(|b| b.is_ascii_digit());
    is_id.then_some(prefix)
}

#[cfg(test)]
mod tests {
    use super::id_prefix;
    use crate::catalog::search::{RawSearch, SearchIndex};

    /// Search rules of equal weights, with `rest` (top-level keys first, then tables).
    fn rules(rest: &str) -> RawSearch {
        let weights = "[weights]\nname = 1.0\naliases = 1.0\ntitle = 1.0\ncategory = 1.0\n\
                       description = 1.0\npath = 1.0\noperation = 1.0\n";
        // Top-level keys must come before the first table.
        let (top, tables) = rest.split_at(rest.find("\n[").map_or(rest.len(), |i| i + 1));
        toml::from_str(&format!("k1 = 1.2\nb = 0.5\n{top}\n{weights}{tables}"))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    pub(super) fn a_query_reads_phrases_ids_and_kept_stems_as_the_catalog_words() {
        let raw = rules(
            r#"stopwords = ["the", "for", "of", "and"]
[phrases]
"money back" = ["refund"]
"set up" = []
[id_prefixes]
ch = "charge"
[stems]
customers = "customer"
"#,
        );
        let index = SearchIndex::build(&raw, &[]);
        assert_eq!(
            index.query_words("money back for the customers of ch_3Mml9x and xy_12"),
            ["refund", "customer", "charg"]
        );
        // A phrase that stands for nothing leaves the next word where it began, so a
        // phrase right after it is read too.
        assert_eq!(index.query_words("set up set up calendars"), ["calendar"]);
        assert_eq!(index.query_words("get_refunds"), ["get", "refund"]);
    }

    #[test]
    pub(super) fn a_service_is_named_by_its_id_as_written_its_name_or_an_id_only_it_issues() {
        let raw = rules(
            r#"stopwords = ["a", "the"]
service_miss_factor = 0.3
[service_names]
stripe = "payments"
[id_prefixes]
pm = "payment method"
cus = "customer"
[id_services]
payments = ["pm"]
"#,
        );
        let mut index = SearchIndex::build(&raw, &[]);
        index.service_ids = vec!["payments".into(), "everything_http".into()];
        // As the index builds them from its tools' services: one-word ids only.
        let ids = index.service_words(index.service_ids.iter().map(String::as_str));
        assert_eq!(
            ids,
            [("payment".to_string(), "payments".to_string())].into()
        );
        index.service_words.extend(ids);
        let read = |query: &str| {
            let reading = index.reading(query);
            let mut named: Vec<&str> = reading.named.into_iter().collect();
            named.sort_unstable();
            (named, reading.distinct)
        };
        // The id as written names its service and is no search word.
        assert_eq!(
            read("list Payments"),
            (vec!["payments"], vec!["list".into()])
        );
        // An id holding `_` names its service written whole; an id within a token too.
        // Its words are no search words either (each of them alone names nothing).
        assert_eq!(
            read("list everything_http tools"),
            (vec!["everything_http"], vec!["list".into(), "tool".into()])
        );
        assert_eq!(
            read("list everything tools"),
            (vec![], vec!["everyth".into(), "list".into(), "tool".into()])
        );
        assert_eq!(read("payments-related refunds").0, vec!["payments"]);
        // Its stem said otherwise is an everyday word: it names nothing.
        assert_eq!(
            read("record a payment"),
            (vec![], vec!["payment".into(), "record".into()])
        );
        // An id only one upstream issues names its service; the words said beside it,
        // and the id's own object, stay search words.
        assert_eq!(
            read("delete payment method pm_1Nq8x7"),
            (
                vec!["payments"],
                vec!["delet".into(), "method".into(), "payment".into()]
            )
        );
        // A prefix under no service names none.
        assert_eq!(
            read("update customer cus_1Nq8x7"),
            (vec![], vec!["custom".into(), "updat".into()])
        );
        // An upstream's own name names its service and is matched, as is the word.
        assert_eq!(
            read("a Stripe payment"),
            (vec!["payments"], vec!["payment".into(), "stripe".into()])
        );
    }

    #[test]
    pub(super) fn values_in_a_sentence_are_hints_or_nothing() {
        let raw: RawSearch = toml::from_str(
            "k1 = 1.2\nb = 0.5\nstopwords = [\"at\", \"the\", \"to\", \"on\", \"for\"]\n\
             [weights]\nname = 1.0\naliases = 1.0\ntitle = 1.0\ncategory = 1.0\ndescription = 1.0\npath = 1.0\noperation = 1.0\n\
             [values]\nemail = \"email\"\nurl = \"url\"\ndomain = \"domain\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let index = SearchIndex::build(&raw, &[]);
        assert_eq!(
            index.query_words("Point www.example.com at the IP 203.0.113.7."),
            ["point", "domain", "ip"]
        );
        assert_eq!(
            index.query_words("Invite jane@example.com to https://acme.io/page on 2026-12-01 at 10:00 for $25.50 (12/29)"),
            ["invit", "email", "url"]
        );
        // Words with a dot or a digit that are not values stay words.
        assert_eq!(
            index.query_words("Q3 targets, e.g. ASP.NET"),
            ["q3", "target", "e", "g", "asp", "net"]
        );
    }

    #[test]
    pub(super) fn a_negated_action_is_called_off_a_how_to_asks_for_it_a_contraction_opens_with_its_word()
     {
        let raw = rules(
            r#"stopwords = ["don", "t", "the", "to", "s", "what", "do", "not", "worry", "it"]
[id_prefixes]
po = "payout"
[actions]
miss_factor = 0.3
read_words = ["what", "which", "how", "is", "do"]
words = ["send", "cancel", "publish"]
how_to = ["how do i", "is it possible to"]
[actions.negation]
words = ["don't", "dont", "do not", "never"]
means = "cancel"
"#,
        );
        let index = SearchIndex::build(&raw, &[]);
        let asks = |query: &str| {
            let plain = index.read(query).text;
            let (words, opening) = index.plain_words(&plain);
            (index.intent(&plain, &words, opening), words)
        };
        // The negation reads as "cancel", the query's verb; the negated verb stays a word.
        assert_eq!(
            asks("Hold on, don't send payout po_1NqXk7 to the bank"),
            (
                (false, Some("cancel".into())),
                ["hold", "on", "cancel", "send", "payout", "payout", "bank"]
                    .map(String::from)
                    .to_vec()
            )
        );
        // Typed with a curly apostrophe, without one, in two words, or as "never".
        for query in [
            "Don\u{2019}t send it",
            "dont send it",
            "Do not send it",
            "never send it",
        ] {
            assert_eq!(asks(query).0, (false, Some("cancel".into())), "{query}");
        }
        // Before a word that is no action it is no negation of one.
        assert_eq!(asks("Don't worry, send it").0, (false, Some("send".into())));
        assert_eq!(asks("don't").0, (false, None));
        // A contraction opens with its first word: "What's" asks a question.
        assert_eq!(asks("What's the status of payout po_1Nq7").0, (true, None));
        assert_eq!(asks("What\u{2019}s sent").0, (true, None));
        // A question how to do an action asks for the action; one about no action reads.
        assert_eq!(
            asks("How do I cancel payout po_1Nq7?").0,
            (false, Some("cancel".into()))
        );
        assert_eq!(
            asks("Is it possible to send it?").0,
            (false, Some("send".into()))
        );
        assert_eq!(asks("How do payouts work?").0, (true, None));
    }

    #[test]
    pub(super) fn a_phrase_at_the_opening_says_what_the_query_asks() {
        let raw: RawSearch = toml::from_str(
            "k1 = 1.2\nb = 0.5\nstopwords = [\"a\", \"of\", \"the\", \"my\", \"how\", \"please\"]\n\
             [weights]\nname = 1.0\naliases = 1.0\ntitle = 1.0\ncategory = 1.0\ndescription = 1.0\npath = 1.0\noperation = 1.0\n\
             [phrases]\n\"get rid of\" = [\"remove\"]\n\"get new\" = [\"buy\"]\n\"look up\" = [\"get\"]\n\"how much money\" = [\"balance\"]\n\
             [actions]\nmiss_factor = 0.3\nread_words = [\"get\", \"show\", \"which\", \"how\"]\nwords = [\"remove\", \"buy\"]\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let index = SearchIndex::build(&raw, &[]);
        let asks = |query: &str| {
            let plain = index.read(query).text;
            let (words, opening) = index.plain_words(&plain);
            index.intent(&plain, &words, opening)
        };
        // "get" opens them, but the phrase says what they ask: to remove, to buy.
        assert_eq!(
            asks("Get rid of the old plugin"),
            (false, Some("remov".into()))
        );
        assert_eq!(asks("Get a new phone number"), (false, Some("buy".into())));
        // A phrase standing for a read, a read verb and a question still read.
        assert_eq!(asks("Look up my plugins"), (true, None));
        assert_eq!(asks("Get the plugins"), (true, None));
        assert_eq!(asks("Which plugins can I remove?"), (true, None));
        // A phrase later in the query leaves the opening as it is, and a phrase whose
        // first word is not the query's (a stop word opens it) does not speak for it.
        assert_eq!(asks("Show what to get rid of"), (true, None));
        assert_eq!(asks("How much money do we have?"), (true, None));
        assert_eq!(
            asks("Please get rid of the old plugin"),
            (false, Some("remov".into()))
        );
    }

    #[test]
    pub(super) fn ids_are_told_from_names() {
        for (token, prefix) in [
            ("ch_3MmlLrLkdIwHu7ix0snN0B15", Some("ch")),
            ("cus_NffrFeUfNV2Hib", Some("cus")),
            ("vm_42", Some("vm")),
            ("get_refunds", None),
            ("abc123", None),
            ("Ch_123", None),
            ("customers_123", None),
        ] {
            assert_eq!(id_prefix(token), prefix, "{token}");
        }
    }
}
