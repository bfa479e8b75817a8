//! The `.env` reader on any text: no panic; every error is one line;
//! what it takes is only the allowed variables, never blank; what it
//! ignores is never a `LEASH_` name; and each entry written back in single
//! quotes reads the same (nothing is expanded or rewritten).

#![no_main]

use leash::internals::dotenv::{allowed_variables, parse_entries, read_dotenv};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match read_dotenv("/fuzz/.env", text) {
        Ok(read) => {
            for (name, value) in &read.values {
                assert!(
                    allowed_variables().any(|allowed| allowed == name),
                    "{name} taken"
                );
                assert!(!value.trim().is_empty(), "a blank {name} taken");
            }
            for name in &read.ignored {
                assert!(!name.starts_with("LEASH_"), "{name} ignored");
                assert!(
                    !allowed_variables().any(|allowed| allowed == name),
                    "{name} ignored"
                );
            }
            assert!(read.ignored.windows(2).all(|pair| pair[0] < pair[1]));
        }
        Err(error) => assert!(!error.to_string().contains('\n'), "{error}"),
    }
    let Ok(entries) = parse_entries(text) else {
        return;
    };
    for (name, value) in entries {
        assert!(!name.is_empty());
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        );
        if !value.contains('\'') {
            let again = parse_entries(&format!("{name}='{value}'\n")).expect("written back");
            assert_eq!(again, [(name, value)], "written back differently");
        }
    }
});
