//! What a kernel can confine a command with, and what a lower Landlock
//! ABI leaves to seccomp or to the docs (docs/src/tools.md "What the
//! kernel holds, ABI by ABI").

/// The oldest Landlock ABI leash confines with: 3 is the first that
/// handles `truncate`, without which a command could empty any file it can
/// open for reading.
pub const MIN_ABI: u8 = 3;

/// The first Landlock ABI that scopes signals and abstract Unix sockets
/// to the command's own domain; below it seccomp guards leash alone.
pub const SCOPES_ABI: u8 = 6;

/// What this kernel can confine a command with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    /// Whether this is Linux, the one system leash confines on.
    pub linux: bool,
    /// The Landlock ABI (0: none).
    pub landlock: u8,
    /// Whether seccomp filters are available.
    pub seccomp: bool,
}

impl Support {
    /// What is missing for a confined command, in words; `None` when
    /// nothing is.
    pub fn missing(&self) -> Option<String> {
        if !self.linux {
            return Some(
                "Linux's Landlock and seccomp (leash confines commands on Linux only; it \
                 does not drive macOS's Seatbelt)"
                    .to_owned(),
            );
        }
        let mut missing = Vec::new();
        match self.landlock {
            0 => missing.push(
                "Landlock (Linux 6.2 or newer with `lsm=...,landlock` enabled at boot)".to_owned(),
            ),
            abi if abi < MIN_ABI => missing.push(format!(
                "Landlock ABI {MIN_ABI} or newer (this kernel has ABI {abi}; Linux 6.2 or newer)"
            )),
            _ => {}
        }
        if !self.seccomp {
            missing.push("seccomp filters (CONFIG_SECCOMP_FILTER)".to_owned());
        }
        (!missing.is_empty()).then(|| missing.join(" and "))
    }

    /// The Landlock ABI commands are confined with: the kernel's own, or,
    /// in a debug build only, a lower one named by
    /// `TEST_ABI_VARIABLE` in leash's process environment, so the
    /// escape suite proves every rule at every ABI on one kernel. A
    /// release build never reads it, and no `.env` or config file can set
    /// a process variable.
    pub fn abi_in_use(&self) -> u8 {
        let lowered = cfg!(debug_assertions)
            .then(|| std::env::var(TEST_ABI_VARIABLE).ok())
            .flatten()
            .and_then(|text| text.parse::<u8>().ok());
        match lowered {
            Some(abi) => abi.clamp(MIN_ABI, self.landlock.max(MIN_ABI)),
            None => self.landlock,
        }
    }

    /// What a command could still do on this footing that it cannot on
    /// the newest, in one sentence for the start-up line; `None` when
    /// nothing.
    pub fn weaker_footing(abi: u8) -> Option<String> {
        (abi < SCOPES_ABI).then(|| {
            format!(
                "Landlock ABI {abi} (before {SCOPES_ABI}) does not scope signals: a command may \
                 signal other processes of this user (leash and its own tree are guarded by \
                 seccomp)"
            )
        })
    }
}

/// Why a confined command has no loopback where no private network
/// namespace can be made, for the start-up notice and `leash config`
/// (docs/src/tools.md "What the kernel holds, ABI by ABI").
pub const NO_LOOPBACK: &str = "no loopback: this system gives leash no private network \
     namespace (root with CAP_SYS_ADMIN, or a user namespace that grants capabilities, does), \
     so a command cannot listen on or connect to 127.0.0.1 and a test that starts a local \
     server fails";

/// The variable a debug build's tests deny the private mount namespace
/// (and the private network namespace) with, to prove the path of a
/// system that gives leash neither.
pub const TEST_NO_MOUNTS_VARIABLE: &str = "_LEASH_TEST_NO_PRIVATE_MOUNTS";

/// The variable a debug build's tests lower the Landlock ABI with
/// ([`Support::abi_in_use`]). Not `LEASH_*`: no settings layer reads it.
pub const TEST_ABI_VARIABLE: &str = "_LEASH_TEST_LANDLOCK_ABI";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_without_landlock_or_seccomp_is_named_as_missing() {
        let none = Support {
            linux: true,
            landlock: 0,
            seccomp: false,
        };
        let missing = none.missing().unwrap();
        assert!(
            missing.contains("Landlock") && missing.contains("seccomp"),
            "{missing}"
        );
        let old = Support {
            linux: true,
            landlock: 2,
            seccomp: true,
        };
        assert!(old.missing().unwrap().contains("ABI 2"));
        let good = Support {
            linux: true,
            landlock: 3,
            seccomp: true,
        };
        assert_eq!(good.missing(), None);
        let mac = Support {
            linux: false,
            ..good
        };
        assert!(mac.missing().unwrap().contains("Seatbelt"));
    }

    #[test]
    fn only_kernels_before_the_scopes_are_a_weaker_footing() {
        assert!(Support::weaker_footing(4).unwrap().contains("ABI 4"));
        assert!(Support::weaker_footing(5).is_some());
        assert_eq!(Support::weaker_footing(6), None);
        assert_eq!(Support::weaker_footing(7), None);
    }
}
