//! Where a Vertex AI request goes: the project and location in its path,
//! and the service endpoint of that location.

/// A Vertex AI run's project and location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoogleCloud {
    /// The Google Cloud project id.
    pub project: String,
    /// The location (`us-central1`, `europe-west4`, `global`, `us`, `eu`).
    pub location: String,
}

/// The service endpoint of `location`, as the official SDKs choose it:
/// `global` has no region prefix, the multi-regions `us` and `eu` their
/// `rep` hosts, every other location its regional host.
pub fn endpoint(location: &str) -> String {
    match location {
        "global" => "https://aiplatform.googleapis.com".to_owned(),
        "us" | "eu" => format!("https://aiplatform.{location}.rep.googleapis.com"),
        region => format!("https://{region}-aiplatform.googleapis.com"),
    }
}

/// Whether `name` can be a project id or a location: lower-case letters,
/// digits, `-` (a project id may hold `:` and `.` for domain-scoped
/// projects). Anything else is refused, since it goes into a host name
/// (the location) or a path.
pub fn valid_name(name: &str, project: bool) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name.bytes().all(|byte| {
            byte.is_ascii_lowercase()
                || byte.is_ascii_digit()
                || byte == b'-'
                || (project && matches!(byte, b':' | b'.'))
        })
}
