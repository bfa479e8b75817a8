//! `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG`: the
//! specification's built-in samplers, as the settings read them (the SDK's
//! sampler is made from them where the tracer is built).

/// `OTEL_TRACES_SAMPLER`: the specification's built-in samplers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SamplerChoice {
    /// `always_on`.
    AlwaysOn,
    /// `always_off`.
    AlwaysOff,
    /// `traceidratio` with its ratio.
    Ratio(f64),
    /// `parentbased_*` (the default: `parentbased_always_on`): a caller's
    /// span decides; without one, the root sampler inside does.
    ParentBased(ParentRoot),
}

/// The root sampler of a parent-based one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ParentRoot {
    /// `parentbased_always_on`.
    AlwaysOn,
    /// `parentbased_always_off`.
    AlwaysOff,
    /// `parentbased_traceidratio`.
    Ratio(f64),
}

// Eq for the settings' comparison: a ratio is a checked number in 0..=1.
impl Eq for SamplerChoice {}

impl SamplerChoice {
    /// The name `leash config` shows.
    pub fn describe(&self) -> String {
        match self {
            SamplerChoice::AlwaysOn => "always_on".to_owned(),
            SamplerChoice::AlwaysOff => "always_off".to_owned(),
            SamplerChoice::Ratio(ratio) => format!("traceidratio {ratio}"),
            SamplerChoice::ParentBased(ParentRoot::AlwaysOn) => "parentbased_always_on".to_owned(),
            SamplerChoice::ParentBased(ParentRoot::AlwaysOff) => {
                "parentbased_always_off".to_owned()
            }
            SamplerChoice::ParentBased(ParentRoot::Ratio(ratio)) => {
                format!("parentbased_traceidratio {ratio}")
            }
        }
    }
}

/// `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG`; an unknown sampler
/// or a bad ratio is a warning and the default.
pub fn sampler(set: &dyn Fn(&str) -> Option<String>, warnings: &mut Vec<String>) -> SamplerChoice {
    let mut ratio = || match set("OTEL_TRACES_SAMPLER_ARG") {
        None => 1.0,
        Some(arg) => match arg.trim().parse::<f64>() {
            Ok(ratio) if (0.0..=1.0).contains(&ratio) => ratio,
            _ => {
                warnings.push(
                    "OTEL_TRACES_SAMPLER_ARG is not a ratio between 0 and 1; 1.0 is used"
                        .to_owned(),
                );
                1.0
            }
        },
    };
    let Some(name) = set("OTEL_TRACES_SAMPLER") else {
        return SamplerChoice::ParentBased(ParentRoot::AlwaysOn);
    };
    match name.trim() {
        "always_on" => SamplerChoice::AlwaysOn,
        "always_off" => SamplerChoice::AlwaysOff,
        "traceidratio" => SamplerChoice::Ratio(ratio()),
        "parentbased_always_on" => SamplerChoice::ParentBased(ParentRoot::AlwaysOn),
        "parentbased_always_off" => SamplerChoice::ParentBased(ParentRoot::AlwaysOff),
        "parentbased_traceidratio" => SamplerChoice::ParentBased(ParentRoot::Ratio(ratio())),
        other => {
            warnings.push(format!(
                "OTEL_TRACES_SAMPLER={} is not a sampler leash knows; parentbased_always_on is used",
                other.escape_debug()
            ));
            SamplerChoice::ParentBased(ParentRoot::AlwaysOn)
        }
    }
}
