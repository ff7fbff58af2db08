//! The random number generator of the built-in bots.
//!
//! Hand-written on purpose: a replay of a `builtin:random` fighter must re-verify
//! forever, so its stream can never change with a dependency upgrade. SplitMix64
//! (Steele, Lea & Flood 2014; the constants of Vigna's reference code) is small,
//! fast and statistically sound for this use.

use duel_rules::Side;

#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// Distinct, reproducible streams for the two fighters of one match.
    pub fn for_fighter(seed: u64, side: Side) -> SplitMix64 {
        let salt = match side {
            Side::A => 0x6a09_e667_f3bc_c908,
            Side::B => 0xbb67_ae85_84ca_a73b,
        };
        let mut mixer = SplitMix64::new(seed ^ salt);
        SplitMix64::new(mixer.next_u64())
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (Lemire's multiply-shift; the bias for bounds this
    /// small is below 2^-60). `bound` must be positive.
    pub fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_stream() {
        // First outputs of Vigna's splitmix64.c seeded with 1234567.
        let mut rng = SplitMix64::new(1234567);
        assert_eq!(rng.next_u64(), 6457827717110365317);
        assert_eq!(rng.next_u64(), 3203168211198807973);
    }

    #[test]
    fn below_is_roughly_uniform() {
        let mut rng = SplitMix64::new(7);
        let mut counts = [0u32; 6];
        for _ in 0..60_000 {
            counts[rng.below(6) as usize] += 1;
        }
        for count in counts {
            assert!((9_000..11_000).contains(&count), "{counts:?}");
        }
    }
}
