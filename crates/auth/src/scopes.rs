//! A set of [`Scope`]s, as one bit each: checked on every request, so a bit test, not a search.

use mcpflow_model::auth::Scope;

/// What a principal may do. `admin` holds every other scope.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scopes(u16);

impl Scopes {
    pub const NONE: Scopes = Scopes(0);

    fn bit(scope: Scope) -> u16 {
        1 << (scope as u16)
    }

    pub fn of(scopes: impl IntoIterator<Item = Scope>) -> Scopes {
        Scopes(scopes.into_iter().fold(0, |bits, s| bits | Scopes::bit(s)))
    }

    /// Space-separated names (OAuth's `scope` claim); names this server does not know are
    /// ignored, as RFC 6749 lets a resource server do.
    pub fn parse_words<'a>(words: impl IntoIterator<Item = &'a str>) -> Scopes {
        Scopes::of(words.into_iter().filter_map(Scope::parse))
    }

    /// Whether `scope` is granted, directly or through `admin`.
    pub fn allows(self, scope: Scope) -> bool {
        self.0 & (Scopes::bit(scope) | Scopes::bit(Scope::Admin)) != 0
    }

    pub fn is_admin(self) -> bool {
        self.allows(Scope::Admin)
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The scopes granted directly, in the fixed order of [`Scope::ALL`].
    pub fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::ALL
            .into_iter()
            .filter(move |s| self.0 & Scopes::bit(*s) != 0)
    }

    /// The names, space-separated (as OAuth writes them).
    pub fn words(self) -> String {
        self.iter().map(Scope::as_str).collect::<Vec<_>>().join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_allows_every_scope_and_others_only_their_own() {
        let admin = Scopes::of([Scope::Admin]);
        for s in Scope::ALL {
            assert!(admin.allows(s), "{s}");
            let alone = Scopes::of([s]);
            for other in Scope::ALL {
                assert_eq!(
                    alone.allows(other),
                    s == other || s == Scope::Admin,
                    "{s} {other}"
                );
            }
        }
        assert!(!Scopes::NONE.allows(Scope::ToolsList));
    }

    #[test]
    fn words_round_trip_and_unknown_words_are_ignored() {
        let s = Scopes::parse_words("tools:call openid runs:read".split(' '));
        assert_eq!(s, Scopes::of([Scope::ToolsCall, Scope::RunsRead]));
        assert_eq!(s.words(), "tools:call runs:read");
    }
}
