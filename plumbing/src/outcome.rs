//! How a command of either binary (`referee`, `ladder`) ended, and its exit
//! code: the one rule both follow, documented in the README ("Exit codes").

use std::process::ExitCode;

/// How a command ended. The exit codes are one rule for both binaries
/// (README, "Exit codes"): 0 done, 1 a negative verdict, 2 bad input or any
/// error that stopped the command, 3 no verdict, 130 interrupted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done (a match played, whatever its result; a replay that verifies; H1).
    Done,
    /// A negative verdict: the replay disagrees with the rules; SPRT accepted H0.
    Negative,
    /// No verdict: SPRT ran out of pairs.
    NoVerdict,
    /// Stopped by ctrl-c or SIGTERM before the end.
    Interrupted,
}

/// Exit code of an error (bad input, or anything that stopped the command).
pub const EXIT_ERROR: u8 = 2;

impl Outcome {
    /// The process exit code of this outcome.
    pub fn exit_code(self) -> ExitCode {
        ExitCode::from(match self {
            Outcome::Done => 0,
            Outcome::Negative => 1,
            Outcome::NoVerdict => 3,
            Outcome::Interrupted => 130,
        })
    }
}
