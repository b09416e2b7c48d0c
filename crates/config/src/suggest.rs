//! "Did you mean …?" for misspelt keys, node ids, server names and node types.

/// The candidate closest to `word` if it is close enough to be a likely typo.
pub(crate) fn closest<'a, I>(word: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let lower = word.to_lowercase();
    let mut best: Option<(usize, &'a str)> = None;
    for c in candidates {
        if c == word {
            continue;
        }
        let d = if c.to_lowercase() == lower {
            0
        } else {
            // Optimal string alignment: Levenshtein plus transpositions ("nxet" → "next" is 1).
            strsim::osa_distance(&lower, &c.to_lowercase())
        };
        let limit = (word.chars().count().max(c.chars().count()) / 3).max(1);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// `" (did you mean "x"?)"` or nothing.
pub(crate) fn did_you_mean<'a, I>(word: &str, candidates: I) -> String
where
    I: IntoIterator<Item = &'a str>,
{
    closest(word, candidates)
        .map(|c| format!(" (did you mean \"{c}\"?)"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_their_word() {
        let keys = ["id", "type", "next", "transform"];
        assert_eq!(closest("nxt", keys), Some("next"));
        assert_eq!(closest("nxet", keys), Some("next"));
        assert_eq!(closest("Next", keys), Some("next"));
        assert_eq!(closest("transfrom", keys), Some("transform"));
        assert_eq!(closest("zzzzzz", keys), None);
        assert_eq!(closest("next", keys), None);
    }
}
