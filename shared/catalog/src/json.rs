//! How a number reads in the JSON the edges write: the HTTP API's answers and an adapter's
//! `data`. Domain values keep their f32; the edges format them with this.

/// An f32 as the f64 with the same shortest decimal form: 0.8f32 → 0.8, not the
/// 0.800000011920929 that `f64::from` gives and a `serde_json::Value` would hold.
pub fn decimal(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_keep_the_shortest_form() {
        assert_eq!(decimal(0.8), 0.8);
        assert_eq!(decimal(0.1), 0.1);
        assert_eq!(decimal(1.0), 1.0);
    }
}
