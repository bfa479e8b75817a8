//! Path resolution of the file tools on any model-given path, against a
//! tree full of links that lead out, loops and `/proc` links, through a
//! root given directly and through a symlink to it: nothing opened lies
//! outside the root, and no outside content is ever read.

#![no_main]

use std::io::Read;
use std::path::Component;

use leash_tools::sandbox::{EntryKind, Sandbox};
use leash_fuzz::{OUTSIDE_SECRET, tree};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let tree = tree();
    let path = String::from_utf8_lossy(data);
    for root in [&tree.root, &tree.root_link] {
        let Ok(sandbox) = Sandbox::new(root) else {
            panic!("the fuzz root is usable");
        };
        let opened = match sandbox.open(&path) {
            Ok(opened) => opened,
            Err(_) => continue,
        };
        assert!(!path.contains('\0'), "a path with NUL opened");
        assert!(
            !std::path::Path::new(path.as_ref())
                .components()
                .any(|c| c == Component::ParentDir),
            "a path with '..' opened"
        );
        assert!(
            opened.real_path().starts_with(&tree.root),
            "{path:?} opened outside the root: {}",
            opened.real_path().display()
        );
        match opened.kind() {
            EntryKind::File => {
                let mut text = Vec::new();
                let _ = opened.into_file().take(1 << 20).read_to_end(&mut text);
                assert!(
                    !String::from_utf8_lossy(&text).contains(OUTSIDE_SECRET),
                    "{path:?} read outside content"
                );
            }
            EntryKind::Dir => {
                if let Ok(entries) = opened.read_dir() {
                    for entry in entries.flatten() {
                        assert_ne!(
                            entry.file_name(),
                            "outside-only.txt",
                            "{path:?} listed outside"
                        );
                    }
                }
            }
        }
    }
});
