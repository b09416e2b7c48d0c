//! Tool globs: which tools (and resources and prompts) a principal sees and may use.
//! `*` matches any run of characters, `?` one character; everything else is literal.

/// The names a principal may see; `All` when its key or token names no globs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ToolGlobs {
    #[default]
    All,
    Only(Vec<String>),
}

impl ToolGlobs {
    pub fn only(globs: impl IntoIterator<Item = impl Into<String>>) -> ToolGlobs {
        ToolGlobs::Only(globs.into_iter().map(Into::into).collect())
    }

    /// Whether `name` (a tool or prompt name, a resource URI) is visible.
    pub fn allows(&self, name: &str) -> bool {
        match self {
            ToolGlobs::All => true,
            ToolGlobs::Only(globs) => globs.iter().any(|g| glob_match(g, name)),
        }
    }

    pub fn is_all(&self) -> bool {
        matches!(self, ToolGlobs::All)
    }
}

/// Iterative wildcard match with one backtrack point: linear in practice, never exponential
/// (a glob comes from the config or a token, a name from a client).
fn glob_match(glob: &str, name: &str) -> bool {
    let (g, n): (Vec<char>, Vec<char>) = (glob.chars().collect(), name.chars().collect());
    let (mut gi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match g.get(gi).copied() {
            Some('*') => {
                star = Some((gi, ni));
                gi += 1;
            }
            Some(c) if c == '?' || c == n[ni] => {
                gi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sg, sn)) => {
                    gi = sg + 1;
                    ni = sn + 1;
                    star = Some((sg, sn + 1));
                }
                None => return false,
            },
        }
    }
    g[gi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_whole_names() {
        for (glob, name, yes) in [
            ("echo", "echo", true),
            ("echo", "echoes", false),
            ("echo*", "echoes", true),
            ("*", "", true),
            ("fs_*_file", "fs_read_file", true),
            ("fs_*_file", "fs_read_files", false),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("*a*b*", "xxaxxbxx", true),
            ("*a*b", "xxaxxbxxc", false),
            ("test://*", "test://static/1", true),
        ] {
            assert_eq!(glob_match(glob, name), yes, "{glob} {name}");
        }
    }

    #[test]
    fn no_globs_means_every_name_and_an_empty_list_none() {
        assert!(ToolGlobs::All.allows("anything"));
        assert!(!ToolGlobs::only(Vec::<String>::new()).allows("anything"));
        let g = ToolGlobs::only(["echo", "add*"]);
        assert!(g.allows("echo") && g.allows("add_two") && !g.allows("secret"));
    }
}
