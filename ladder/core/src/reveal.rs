//! When a ranked match's transcripts become public: the operator's reveal
//! policy (`ladder serve --reveal-transcripts`). Every ranked replay is public
//! at once, so prompts published with it would hand a bot's strategy to its
//! opponents while the season runs; a transcript revealed later can still be
//! checked against the signed replay's digests.

use duel_rules::Side;

use crate::auth::{Role, User};
use crate::error::{CoreError, Result};
use crate::limits::MAX_REVEAL_DAYS;

const DAY_MS: i64 = 86_400_000;

/// When the public may read a match's transcript (its bots' owners always can).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RevealPolicy {
    /// Never public.
    Never,
    /// Once the match's season has ended (the default).
    #[default]
    AfterSeason,
    /// This many days after the match was settled.
    AfterDays(u32),
}

impl RevealPolicy {
    /// `never`, `after-season` or `after-days:N` (N from 0 to
    /// [`MAX_REVEAL_DAYS`]).
    pub fn parse(text: &str) -> Result<RevealPolicy> {
        let invalid = || {
            CoreError::Invalid(format!(
                "the reveal policy must be never, after-season or after-days:N \
                 (N from 0 to {MAX_REVEAL_DAYS}), not {:?}",
                text.chars().take(40).collect::<String>()
            ))
        };
        match text {
            "never" => Ok(RevealPolicy::Never),
            "after-season" => Ok(RevealPolicy::AfterSeason),
            _ => {
                let digits = text.strip_prefix("after-days:").ok_or_else(invalid)?;
                // Digits as written: `007` or `+7` is refused, not read as 7.
                let canonical = !digits.is_empty()
                    && digits.bytes().all(|byte| byte.is_ascii_digit())
                    && (digits == "0" || !digits.starts_with('0'));
                match digits.parse::<u32>() {
                    Ok(days) if canonical && days <= MAX_REVEAL_DAYS => {
                        Ok(RevealPolicy::AfterDays(days))
                    }
                    _ => Err(invalid()),
                }
            }
        }
    }

    pub fn name(self) -> String {
        match self {
            RevealPolicy::Never => "never".to_owned(),
            RevealPolicy::AfterSeason => "after-season".to_owned(),
            RevealPolicy::AfterDays(days) => format!("after-days:{days}"),
        }
    }

    /// Whether a match settled at `finished_ms` in a season that ended at
    /// `season_ended_ms` (`None`: still running) is public at `now_ms`. A match
    /// not settled is never public.
    pub fn revealed(
        self,
        finished_ms: Option<i64>,
        season_ended_ms: Option<i64>,
        now_ms: i64,
    ) -> bool {
        let Some(finished_ms) = finished_ms else {
            return false;
        };
        match self {
            RevealPolicy::Never => false,
            RevealPolicy::AfterSeason => season_ended_ms.is_some_and(|ended| ended <= now_ms),
            RevealPolicy::AfterDays(days) => {
                finished_ms.saturating_add(i64::from(days).saturating_mul(DAY_MS)) <= now_ms
            }
        }
    }

    /// When a settled match of this policy becomes public, in words.
    pub fn describe(self) -> String {
        match self {
            RevealPolicy::Never => "never made public on this ladder".to_owned(),
            RevealPolicy::AfterSeason => "public once its season ends".to_owned(),
            RevealPolicy::AfterDays(days) => format!("public {days} days after the match"),
        }
    }
}

/// The sides of a match whose transcript `reader` reads (`None`: someone
/// without a token, the site's public route), the one rule the API
/// (`MatchTranscript`) and the site both follow. Once `revealed` (the policy's
/// [`RevealPolicy::revealed`] for a settled match), everyone reads both;
/// before, an owner the sides its bots fought on, an operator both, and
/// anyone else nothing.
pub fn readable_sides(reader: Option<&User>, owner_ids: [&str; 2], revealed: bool) -> Vec<Side> {
    [Side::A, Side::B]
        .into_iter()
        .filter(|side| {
            revealed
                || reader.is_some_and(|reader| {
                    reader.role == Role::Operator || owner_ids[side.index()] == reader.id
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_and_print() {
        for (text, policy) in [
            ("never", Some(RevealPolicy::Never)),
            ("after-season", Some(RevealPolicy::AfterSeason)),
            ("after-days:0", Some(RevealPolicy::AfterDays(0))),
            ("after-days:30", Some(RevealPolicy::AfterDays(30))),
            ("after-days:3650", Some(RevealPolicy::AfterDays(3650))),
            ("after-days:3651", None),
            ("after-days:007", None),
            ("after-days:+7", None),
            ("after-days:", None),
            ("after-days:-1", None),
            ("always", None),
            ("", None),
        ] {
            assert_eq!(RevealPolicy::parse(text).ok(), policy, "{text}");
            if let Some(policy) = policy {
                assert_eq!(policy.name(), text);
            }
        }
        assert_eq!(RevealPolicy::default(), RevealPolicy::AfterSeason);
    }

    #[test]
    fn who_reads_a_transcript_before_the_reveal() {
        let user = |id: &str, role| User {
            id: id.into(),
            name: id.into(),
            role,
        };
        let owners = ["alice", "bob"];
        let (alice, bob) = (user("alice", Role::Owner), user("bob", Role::Owner));
        let (carol, root) = (user("carol", Role::Owner), user("root", Role::Operator));
        assert_eq!(readable_sides(Some(&alice), owners, false), [Side::A]);
        assert_eq!(readable_sides(Some(&bob), owners, false), [Side::B]);
        assert_eq!(
            readable_sides(Some(&alice), ["alice", "alice"], false),
            [Side::A, Side::B]
        );
        assert!(readable_sides(Some(&carol), owners, false).is_empty());
        assert!(readable_sides(None, owners, false).is_empty());
        assert_eq!(
            readable_sides(Some(&root), owners, false),
            [Side::A, Side::B]
        );
        // After the reveal, everyone reads both sides: a stranger, someone
        // without a token, an owner the other side too.
        for reader in [Some(&alice), Some(&carol), Some(&root), None] {
            assert_eq!(
                readable_sides(reader, owners, true),
                [Side::A, Side::B],
                "{reader:?}"
            );
        }
    }

    #[test]
    fn when_a_transcript_is_public() {
        let day = DAY_MS;
        let finished = Some(10 * day);
        let table = [
            // policy, season ended, now, public
            (RevealPolicy::Never, Some(11 * day), 100 * day, false),
            (RevealPolicy::AfterSeason, None, 100 * day, false),
            (
                RevealPolicy::AfterSeason,
                Some(11 * day),
                11 * day - 1,
                false,
            ),
            (RevealPolicy::AfterSeason, Some(11 * day), 11 * day, true),
            (RevealPolicy::AfterDays(2), None, 12 * day - 1, false),
            (RevealPolicy::AfterDays(2), None, 12 * day, true),
            (RevealPolicy::AfterDays(0), None, 10 * day, true),
        ];
        for (policy, ended, now, public) in table {
            assert_eq!(
                policy.revealed(finished, ended, now),
                public,
                "{policy:?} {ended:?} {now}"
            );
        }
        // A match never settled is never public.
        assert!(!RevealPolicy::AfterDays(0).revealed(None, Some(0), i64::MAX));
    }
}
