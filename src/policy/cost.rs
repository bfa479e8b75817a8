//! What a run costs: `--price` (USD per million tokens, no built-in table
//! that goes stale), the cost of a usage, and `--max-cost`.
//!
//! The arithmetic is exact: a price is held in millionths of a dollar per
//! million tokens and a cost in 10⁻¹² dollars, so per-turn costs add up to
//! the run's to the last digit and the budget compares without rounding.
//! Only the number a reader sees is a float (JSON) or rounded (text).

use std::fmt;

use serde::Serialize;

use leash_protocol::Usage;

/// The most decimals a price or a budget may have: a millionth of a dollar
/// (per million tokens, for a price). More would be a precision leash
/// pretends to have.
const DECIMALS: u32 = 6;

/// `--price`: USD per million tokens for each kind of token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Price {
    /// Prompt tokens not read from a cache, in millionths of a dollar.
    input: u64,
    /// Generated tokens.
    output: u64,
    /// Prompt tokens read from the cache (default: the input price).
    cache_read: u64,
    /// Prompt tokens written to the cache (default: the input price).
    cache_write: u64,
}

/// A price or a budget that does not parse: a usage error (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CostError {
    /// `--price` (or a `[prices]` entry) is not `INPUT,OUTPUT[,CACHED_READ,CACHED_WRITE]`.
    #[error(
        "invalid price '{value}': {problem} (USD per million tokens: \
         INPUT,OUTPUT[,CACHED_READ,CACHED_WRITE], e.g. 2,8 or 3,15,0.3,3.75)"
    )]
    Price {
        /// What was given.
        value: String,
        /// What is wrong.
        problem: String,
    },
    /// `--max-cost` is not an amount of dollars.
    #[error("invalid --max-cost '{value}': {problem} (an amount of USD, e.g. 0.50)")]
    MaxCost {
        /// What was given.
        value: String,
        /// What is wrong.
        problem: String,
    },
}

impl Price {
    /// Parses `INPUT,OUTPUT[,CACHED_READ[,CACHED_WRITE]]`, each a
    /// non-negative decimal with at most six decimals. A cached price left
    /// out is the input price: without it, leash counts a cached token as
    /// an ordinary one rather than guess the provider's discount.
    pub fn parse(text: &str) -> Result<Price, CostError> {
        let invalid = |problem: String| CostError::Price {
            value: text.to_owned(),
            problem,
        };
        let parts: Vec<&str> = text.split(',').map(str::trim).collect();
        if !(2..=4).contains(&parts.len()) {
            return Err(invalid(format!(
                "{} value{} where 2 to 4 are expected",
                parts.len(),
                if parts.len() == 1 { "" } else { "s" }
            )));
        }
        let mut micros = Vec::with_capacity(4);
        for part in parts {
            micros.push(
                parse_micros(part).map_err(|problem| invalid(format!("'{part}' is {problem}")))?,
            );
        }
        let input = micros[0];
        Ok(Price {
            input,
            output: micros[1],
            cache_read: micros.get(2).copied().unwrap_or(input),
            cache_write: micros.get(3).copied().unwrap_or(input),
        })
    }

    /// What `usage` costs at this price.
    pub fn cost(&self, usage: &Usage) -> Cost {
        let part = |tokens: u64, micros: u64| u128::from(tokens) * u128::from(micros);
        Cost(
            part(usage.input, self.input)
                + part(usage.output, self.output)
                + part(usage.cache_read, self.cache_read)
                + part(usage.cache_write, self.cache_write),
        )
    }
}

impl fmt::Display for Price {
    /// The price as `--price` takes it, all four parts spelled out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts = [self.input, self.output, self.cache_read, self.cache_write];
        for (i, micros) in parts.into_iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write_decimal(f, u128::from(micros), DECIMALS)?;
        }
        Ok(())
    }
}

/// An amount of US dollars, exact to 10⁻¹² (a price in millionths of a
/// dollar per million tokens, times a number of tokens).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cost(u128);

/// 10⁻¹² dollars per millionth of a dollar.
const PICOS_PER_MICRO: u128 = 1_000_000;

impl Cost {
    /// Parses `--max-cost`: dollars, at most six decimals (`0.5`, `2`).
    pub fn parse_usd(text: &str) -> Result<Cost, CostError> {
        parse_micros(text.trim())
            .map(|micros| Cost(u128::from(micros) * PICOS_PER_MICRO))
            .map_err(|problem| CostError::MaxCost {
                value: text.to_owned(),
                problem: problem.to_owned(),
            })
    }

    /// The sum of two costs (saturating: usage counts come from a server).
    pub fn plus(self, other: Cost) -> Cost {
        Cost(self.0.saturating_add(other.0))
    }

    /// The amount in dollars, as the JSON outputs carry it.
    pub fn usd(self) -> f64 {
        self.0 as f64 / 1e12
    }
}

/// The budget rule for `--max-cost`: the run has cost more than it may.
pub fn cost_exceeded(cost: Cost, budget: Option<Cost>) -> bool {
    budget.is_some_and(|budget| cost > budget)
}

impl fmt::Display for Cost {
    /// `$0.001235`: rounded half up to a millionth of a dollar.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let micros = self.0.saturating_add(PICOS_PER_MICRO / 2) / PICOS_PER_MICRO;
        f.write_str("$")?;
        write_decimal(f, micros, DECIMALS)
    }
}

impl Serialize for Cost {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.usd())
    }
}

impl schemars::JsonSchema for Cost {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Cost".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "number",
            "minimum": 0,
            "description": "USD, from --price (per million tokens)"
        })
    }
}

/// `units` (in 10⁻`decimals`) as a decimal with exactly `decimals` places.
fn write_decimal(f: &mut fmt::Formatter<'_>, units: u128, decimals: u32) -> fmt::Result {
    let scale = 10u128.pow(decimals);
    write!(
        f,
        "{}.{:0width$}",
        units / scale,
        units % scale,
        width = decimals as usize
    )
}

/// A non-negative decimal (`2`, `0.075`, `.5`) in millionths.
fn parse_micros(text: &str) -> Result<u64, &'static str> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(fraction) || (whole.is_empty() && fraction.is_empty()) {
        return Err("not a plain non-negative number such as 2 or 0.075");
    }
    if fraction.len() > DECIMALS as usize {
        return Err("more precise than six decimals");
    }
    let scale = 10u64.pow(DECIMALS);
    let whole: u64 = match whole {
        "" => 0,
        digits => digits.parse().map_err(|_| "too large")?,
    };
    let fraction: u64 = format!("{fraction:0<6}").parse().map_err(|_| "too large")?;
    whole
        .checked_mul(scale)
        .and_then(|micros| micros.checked_add(fraction))
        .ok_or("too large")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Usage {
        Usage {
            input,
            output,
            cache_read,
            cache_write,
            ..Usage::default()
        }
        .with_total()
    }

    #[test]
    fn a_price_takes_two_to_four_values_and_cached_prices_default_to_input() {
        let two = Price::parse("2,8").unwrap();
        assert_eq!(two.to_string(), "2.000000,8.000000,2.000000,2.000000");
        let three = Price::parse(" 3 , 15, 0.3").unwrap();
        assert_eq!(three.to_string(), "3.000000,15.000000,0.300000,3.000000");
        let four = Price::parse("3,15,0.3,3.75").unwrap();
        assert_eq!(four.to_string(), "3.000000,15.000000,0.300000,3.750000");
        assert_eq!(
            Price::parse(".075,0.3").unwrap().to_string(),
            "0.075000,0.300000,0.075000,0.075000"
        );
    }

    #[test]
    fn bad_prices_say_what_is_wrong() {
        let problem = |text: &str| match Price::parse(text) {
            Err(CostError::Price { problem, .. }) => problem,
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(problem("2"), "1 value where 2 to 4 are expected");
        assert_eq!(problem("1,2,3,4,5"), "5 values where 2 to 4 are expected");
        assert_eq!(
            problem("2,"),
            "'' is not a plain non-negative number such as 2 or 0.075"
        );
        for bad in ["-1,2", "1e3,2", "two,8", "1,.", "1,+2", "1,2 5"] {
            assert!(problem(bad).contains("is not a plain"), "{bad}");
        }
        // `2.` is a plain number: two dollars.
        assert!(Price::parse("1,2.").is_ok());
        assert_eq!(
            problem("1,0.0000001"),
            "'0.0000001' is more precise than six decimals"
        );
        assert_eq!(
            problem("99999999999999999999,1"),
            "'99999999999999999999' is too large"
        );
        let error = Price::parse("x").unwrap_err().to_string();
        assert_eq!(
            error,
            "invalid price 'x': 1 value where 2 to 4 are expected (USD per million tokens: \
             INPUT,OUTPUT[,CACHED_READ,CACHED_WRITE], e.g. 2,8 or 3,15,0.3,3.75)"
        );
    }

    #[test]
    fn cost_is_exact_and_prices_each_kind_of_token() {
        let price = Price::parse("3,15,0.3,3.75").unwrap();
        // 1000 input × $3 + 200 output × $15 + 5000 read × $0.30
        // + 2000 written × $3.75, per million tokens.
        let cost = price.cost(&usage(1000, 200, 5000, 2000));
        assert_eq!(
            cost,
            Cost(1_000 * 3_000_000 + 200 * 15_000_000 + 5_000 * 300_000 + 2_000 * 3_750_000)
        );
        assert_eq!(cost.usd(), 0.015);
        assert_eq!(cost.to_string(), "$0.015000");
        // Cached prices left out: a cached token costs an input token.
        let plain = Price::parse("3,15").unwrap();
        assert_eq!(
            plain.cost(&usage(0, 0, 1_000_000, 1_000_000)),
            plain.cost(&usage(2_000_000, 0, 0, 0))
        );
        assert_eq!(
            Price::parse("0,0").unwrap().cost(&usage(9, 9, 9, 9)),
            Cost(0)
        );
    }

    #[test]
    fn turn_costs_add_up_to_the_run_cost_without_drift() {
        let price = Price::parse("0.1,0.4,0.025").unwrap();
        let turn = usage(7, 3, 11, 0);
        let mut sum = Cost::default();
        for _ in 0..1000 {
            sum = sum.plus(price.cost(&turn));
        }
        assert_eq!(sum, price.cost(&usage(7000, 3000, 11000, 0)));
    }

    #[test]
    fn the_text_form_rounds_half_up_to_a_millionth_of_a_dollar() {
        assert_eq!(Cost(0).to_string(), "$0.000000");
        assert_eq!(Cost(499_999).to_string(), "$0.000000");
        assert_eq!(Cost(500_000).to_string(), "$0.000001");
        assert_eq!(Cost(1_234_567_890_000).to_string(), "$1.234568");
        assert_eq!(Cost(2_500_000).usd(), 2.5e-6);
    }

    #[test]
    fn max_cost_parses_dollars_and_compares_exactly() {
        let budget = Cost::parse_usd("0.015").unwrap();
        assert_eq!(budget, Cost(15_000_000_000));
        assert!(!cost_exceeded(Cost(15_000_000_000), Some(budget)));
        assert!(cost_exceeded(Cost(15_000_000_001), Some(budget)));
        assert!(!cost_exceeded(Cost(u128::MAX), None));
        assert_eq!(
            Cost::parse_usd("-1").unwrap_err().to_string(),
            "invalid --max-cost '-1': not a plain non-negative number such as 2 or 0.075 \
             (an amount of USD, e.g. 0.50)"
        );
    }
}
