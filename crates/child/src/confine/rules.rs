//! The rules themselves: what the kernel offers ([`probe`]), and the
//! capabilities and Landlock ruleset the confiner puts on itself (the
//! seccomp filter is `filter.rs`'s).

use caps::{CapSet, Capability};
use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, path_beneath_rules,
};

use super::spec::Spec;
use super::support::{MIN_ABI, Support};

/// The ABIs leash knows, newest first.
const ABIS: [(ABI, u8); 9] = [
    (ABI::V9, 9),
    (ABI::V8, 8),
    (ABI::V7, 7),
    (ABI::V6, 6),
    (ABI::V5, 5),
    (ABI::V4, 4),
    (ABI::V3, 3),
    (ABI::V2, 2),
    (ABI::V1, 1),
];

/// What the kernel offers, found once per process (the kernel does not
/// change under a run; config, the start-up notices and the shell tool
/// all ask).
pub fn probe() -> Support {
    static FOUND: std::sync::OnceLock<Support> = std::sync::OnceLock::new();
    *FOUND.get_or_init(find_support)
}

/// What the kernel offers, found without restricting anything: a Landlock
/// ruleset is created (and dropped) for the newest ABI that works, and
/// `/proc/self/status` says whether seccomp filters exist.
fn find_support() -> Support {
    let landlock = ABIS
        .iter()
        .find(|(abi, _)| {
            Ruleset::default()
                .set_compatibility(CompatLevel::HardRequirement)
                .handle_access(AccessFs::from_all(*abi))
                .and_then(|ruleset| ruleset.create())
                .is_ok()
        })
        .map_or(0, |(_, number)| *number);
    let seccomp = std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .any(|line| line.starts_with("Seccomp_filters:"))
    });
    Support {
        linux: true,
        landlock,
        seccomp,
    }
}

/// Puts Landlock and seccomp on this process (the confiner), for good,
/// at the ABI the parent chose; `supervisor` is the confiner's parent,
/// guarded like leash.
pub(super) fn confine_self(spec: &Spec, supervisor: i32) -> Result<(), String> {
    let support = probe();
    if let Some(missing) = support.missing() {
        return Err(format!("the kernel lacks {missing}"));
    }
    if spec.abi < MIN_ABI || spec.abi > support.landlock {
        return Err(format!(
            "Landlock ABI {} was asked for; this kernel has {}",
            spec.abi, support.landlock
        ));
    }
    if spec.private_network {
        super::network::private_network().map_err(|error| format!("private network: {error}"))?;
    }
    if spec.private_mounts {
        super::mounts::private_view(spec).map_err(|error| format!("private mounts: {error}"))?;
    }
    let kept: &[Capability] = match spec.run_as {
        Some(_) => &STRANGER_CAPABILITIES,
        None => &KEPT_CAPABILITIES,
    };
    drop_capabilities(kept).map_err(|error| format!("capabilities: {error}"))?;
    if let Some(uid) = spec.run_as {
        become_stranger(uid).map_err(|error| format!("cannot run as uid {uid}: {error}"))?;
    }
    landlock(spec, spec.abi).map_err(|error| format!("Landlock: {error}"))?;
    super::filter::apply(spec.private_network, &spec.leash, supervisor)
        .map_err(|error| format!("seccomp: {error}"))
}

/// The capabilities a confined command run as root keeps (Docker's
/// default set less `CAP_MKNOD`, `CAP_NET_RAW`, `CAP_SETFCAP`,
/// `CAP_SYS_CHROOT`, `CAP_AUDIT_WRITE` and `CAP_KILL`, which would let it
/// signal every process of every user where Landlock has no scopes): what builds and package
/// managers use on files the rules let them touch at all.
const KEPT_CAPABILITIES: [Capability; 8] = [
    Capability::CAP_CHOWN,
    Capability::CAP_DAC_OVERRIDE,
    Capability::CAP_FSETID,
    Capability::CAP_FOWNER,
    Capability::CAP_SETGID,
    Capability::CAP_SETUID,
    Capability::CAP_SETPCAP,
    Capability::CAP_NET_BIND_SERVICE,
];

/// What root's command keeps when it runs as the stranger
/// (`child::stranger`): the file capabilities above, never one that
/// changes a uid or gid or a capability set, so it cannot be root again.
const STRANGER_CAPABILITIES: [Capability; 5] = [
    Capability::CAP_CHOWN,
    Capability::CAP_DAC_OVERRIDE,
    Capability::CAP_FSETID,
    Capability::CAP_FOWNER,
    Capability::CAP_NET_BIND_SERVICE,
];

/// Drops every capability but `kept` from the bounding set, so that
/// root's `exec` of bash gets none of them: no `CAP_SYS_PTRACE` (leash
/// is non-dumpable: its `/proc/PID/environ` and memory are then closed),
/// no `CAP_MKNOD`, `CAP_SYS_MODULE`, `CAP_SYS_ADMIN`, `CAP_SYS_RAWIO`,
/// `CAP_DAC_READ_SEARCH`… A process without `CAP_SETPCAP` has none of
/// them to drop.
fn drop_capabilities(kept: &[Capability]) -> Result<(), caps::errors::CapsError> {
    let bounding = caps::read(None, CapSet::Bounding)?;
    if !caps::has_cap(None, CapSet::Effective, Capability::CAP_SETPCAP)? {
        return Ok(());
    }
    for capability in bounding {
        if !kept.contains(&capability) {
            caps::drop(None, CapSet::Bounding, capability)?;
        }
    }
    Ok(())
}

/// Becomes `uid` (and the gid of the same number, no other group) for
/// good, keeping [`STRANGER_CAPABILITIES`] as ambient capabilities, the
/// one set an `exec` without file capabilities hands on: every other
/// capability is gone from every set, and the bounding set (already cut)
/// lets none back.
fn become_stranger(uid: u32) -> Result<(), String> {
    use nix::unistd::{Gid, Uid, setgroups, setresgid, setresuid};
    let (uid, gid) = (Uid::from_raw(uid), Gid::from_raw(uid));
    nix::sys::prctl::set_keepcaps(true).map_err(|error| format!("keepcaps: {error}"))?;
    setgroups(&[gid]).map_err(|error| format!("setgroups: {error}"))?;
    setresgid(gid, gid, gid).map_err(|error| format!("setresgid: {error}"))?;
    setresuid(uid, uid, uid).map_err(|error| format!("setresuid: {error}"))?;
    let kept: caps::CapsHashSet = STRANGER_CAPABILITIES.into_iter().collect();
    for set in [CapSet::Permitted, CapSet::Effective, CapSet::Inheritable] {
        caps::set(None, set, &kept).map_err(|error| format!("{set:?}: {error}"))?;
    }
    for capability in STRANGER_CAPABILITIES {
        caps::raise(None, CapSet::Ambient, capability)
            .map_err(|error| format!("ambient {capability}: {error}"))?;
    }
    nix::sys::prctl::set_keepcaps(false).map_err(|error| format!("keepcaps: {error}"))?;
    let back = nix::unistd::setuid(Uid::from_raw(0));
    if back.is_ok() || nix::unistd::getuid() != uid {
        return Err("root could be had again".to_owned());
    }
    Ok(())
}

fn abi_of(number: u8) -> ABI {
    ABIS.iter()
        .find(|(_, n)| *n == number)
        .map_or(ABI::V1, |(abi, _)| *abi)
}

/// Files: read and run the system's directories, read and write the
/// writable ones, nothing else. TCP: no bind, no connect (ABI 4), unless
/// the command has a private network namespace, whose loopback is all
/// it can reach.
/// Scopes: no signal to, no abstract socket of, a process outside (ABI 6).
/// Every right asked for is required: nothing is silently dropped.
fn landlock(spec: &Spec, number: u8) -> Result<(), landlock::RulesetError> {
    let abi = abi_of(number);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))?;
    if number >= 4 && !spec.private_network {
        ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
    }
    if number >= 6 {
        ruleset = ruleset.scope(Scope::from_all(ABI::V6))?;
    }
    let readable = super::secrets::without(&spec.readable, &spec.never_readable);
    let readable = readable.iter().filter(|path| path.exists());
    ruleset
        .create()?
        // A path that vanished since the probe is left out, not an error.
        .set_compatibility(CompatLevel::BestEffort)
        .add_rules(path_beneath_rules(readable, AccessFs::from_read(abi)))?
        .set_compatibility(CompatLevel::HardRequirement)
        .add_rules(path_beneath_rules(&spec.writable, AccessFs::from_all(abi)))?
        .restrict_self()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CI kernel has Landlock: a runner without it fails here, loudly,
    /// rather than skipping the escape suite.
    #[test]
    fn this_kernel_can_confine_a_command() {
        let support = probe();
        if std::env::var_os("CI").is_some() || support.landlock > 0 {
            assert_eq!(support.missing(), None, "{support:?}");
        }
    }
}
