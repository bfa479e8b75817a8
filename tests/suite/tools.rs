//! The tools (docs/src/tools.md "File tools"; ARCHITECTURE.md `src/tools/`): search,
//! edit and write through the real binary, what a write must never leave or
//! reach, the `git` tool, and no escape from `--root`.

mod edit;
mod git;
mod sandbox;
mod search;
mod write_safety;
