//! The rules themselves: what the kernel offers ([`probe`]), and the
//! Landlock ruleset and seccomp filter the launcher puts on itself.

use std::collections::BTreeMap;

use caps::{CapSet, Capability};
use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, path_beneath_rules,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::{Spec, Support};

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

/// What the kernel offers, found without restricting anything: a Landlock
/// ruleset is created (and dropped) for the newest ABI that works, and
/// `/proc/self/status` says whether seccomp filters exist.
pub fn probe() -> Support {
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

/// Puts Landlock and seccomp on this process (the launcher), for good.
pub(super) fn confine_self(spec: &Spec) -> Result<(), String> {
    let support = probe();
    if let Some(missing) = support.missing() {
        return Err(format!("the kernel lacks {missing}"));
    }
    drop_capabilities().map_err(|error| format!("capabilities: {error}"))?;
    landlock(spec, support.landlock).map_err(|error| format!("Landlock: {error}"))?;
    seccomp().map_err(|error| format!("seccomp: {error}"))
}

/// The capabilities a confined command run as root keeps (Docker's
/// default set less `CAP_MKNOD`, `CAP_NET_RAW`, `CAP_SETFCAP`,
/// `CAP_SYS_CHROOT` and `CAP_AUDIT_WRITE`): what builds and package
/// managers use on files the rules let them touch at all.
const KEPT_CAPABILITIES: [Capability; 9] = [
    Capability::CAP_CHOWN,
    Capability::CAP_DAC_OVERRIDE,
    Capability::CAP_FSETID,
    Capability::CAP_FOWNER,
    Capability::CAP_SETGID,
    Capability::CAP_SETUID,
    Capability::CAP_SETPCAP,
    Capability::CAP_NET_BIND_SERVICE,
    Capability::CAP_KILL,
];

/// Drops every other capability from the bounding set, so that root's
/// `exec` of bash gets none of them: no `CAP_SYS_PTRACE` (leash is
/// non-dumpable: its `/proc/PID/environ` and memory are then closed),
/// no `CAP_MKNOD`, `CAP_SYS_MODULE`, `CAP_SYS_ADMIN`, `CAP_SYS_RAWIO`,
/// `CAP_DAC_READ_SEARCH`… A process without `CAP_SETPCAP` has none of
/// them to drop.
fn drop_capabilities() -> Result<(), caps::errors::CapsError> {
    let bounding = caps::read(None, CapSet::Bounding)?;
    if !caps::has_cap(None, CapSet::Effective, Capability::CAP_SETPCAP)? {
        return Ok(());
    }
    for capability in bounding {
        if !KEPT_CAPABILITIES.contains(&capability) {
            caps::drop(None, CapSet::Bounding, capability)?;
        }
    }
    Ok(())
}

fn abi_of(number: u8) -> ABI {
    ABIS.iter()
        .find(|(_, n)| *n == number)
        .map_or(ABI::V1, |(abi, _)| *abi)
}

/// Files: read and run the system's directories, read and write the
/// writable ones, nothing else. TCP: no bind, no connect (ABI 4).
/// Scopes: no signal to, no abstract socket of, a process outside (ABI 6).
/// Every right asked for is required: nothing is silently dropped.
fn landlock(spec: &Spec, number: u8) -> Result<(), landlock::RulesetError> {
    let abi = abi_of(number);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))?;
    if number >= 4 {
        ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
    }
    if number >= 6 {
        ruleset = ruleset.scope(Scope::from_all(ABI::V6))?;
    }
    let readable = spec.readable.iter().filter(|path| path.exists());
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

/// No socket of any family but `AF_UNIX` (`EAFNOSUPPORT`, what a kernel
/// built without the family answers); `EPERM` for `io_uring` (its
/// requests bypass the filter), for reading or writing another process
/// (`ptrace`, `process_vm_*`), and for what no build needs and an escape
/// would: namespaces, mounts, kernel modules, BPF, keyrings, file
/// handles.
fn seccomp() -> Result<(), seccompiler::Error> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let not_unix = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Ne,
        u64::try_from(libc::AF_UNIX).unwrap_or(1),
    )?;
    let sockets = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_socket, vec![SeccompRule::new(vec![not_unix])?])]),
        SeccompAction::Allow,
        SeccompAction::Errno(u32::try_from(libc::EAFNOSUPPORT).unwrap_or(97)),
        arch,
    )?;
    let refused = SeccompFilter::new(
        [
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
            libc::SYS_ptrace,
            libc::SYS_process_vm_readv,
            libc::SYS_process_vm_writev,
            libc::SYS_open_by_handle_at,
            libc::SYS_name_to_handle_at,
            libc::SYS_unshare,
            libc::SYS_setns,
            libc::SYS_mount,
            libc::SYS_umount2,
            libc::SYS_pivot_root,
            libc::SYS_init_module,
            libc::SYS_finit_module,
            libc::SYS_delete_module,
            libc::SYS_kexec_load,
            libc::SYS_bpf,
            libc::SYS_perf_event_open,
            libc::SYS_userfaultfd,
            libc::SYS_keyctl,
            libc::SYS_add_key,
            libc::SYS_request_key,
        ]
        .into_iter()
        .map(|call| (call, Vec::new()))
        .collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(u32::try_from(libc::EPERM).unwrap_or(1)),
        arch,
    )?;
    for filter in [sockets, refused] {
        let program = BpfProgram::try_from(filter)?;
        seccompiler::apply_filter(&program)?;
    }
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
